"""The trigger form's values become the reconcile job's command line (what spark-submit runs)."""

from james_airflow.operators import job_arguments

FORM = {
    "keyspace": "james_prod",
    "dry_run": False,
    "messages_per_second": 200,
    "recheck_delay_seconds": 30,
    "truth_consistency": "SERIAL",
    "max_destructive_share": 0.05,
    "allow_destructive": False,
    "remove_unused_flags": False,
}


def test_a_repair_carries_the_rate_the_delay_the_consistency_and_the_safety_threshold():
    assert job_arguments("recent", "repair", FORM, "r.json") == [
        *("--target", "recent", "--keyspace", "james_prod", "--mode", "repair", "--report", "r.json"),
        *("--messages-per-second", "200", "--recheck-delay", "30", "--truth-consistency", "SERIAL"),
        *("--max-destructive-share", "0.05"),
    ]


def test_allowing_a_destructive_plan_and_removing_unused_keywords_are_explicit_choices():
    chosen = {**FORM, "allow_destructive": True, "remove_unused_flags": True}
    arguments = job_arguments("flags", "repair", chosen, "r.json")
    assert arguments[-2:] == ["--allow-destructive", "--remove-unused-flags"]
    assert "--remove-unused-flags" not in job_arguments("deleted", "repair", chosen, "r.json")


def test_a_dry_run_turns_the_repair_into_a_check_and_verify_stays_a_verify():
    dry = {**FORM, "dry_run": True, "allow_destructive": True}
    assert job_arguments("messages", "repair", dry, "r.json") == [
        *("--target", "messages", "--keyspace", "james_prod", "--mode", "check", "--report", "r.json")
    ]
    assert "verify" in job_arguments("messages", "verify", FORM, "v.json")


def test_the_first_job_scans_in_ranges_until_the_window_ends_and_the_later_ones_reuse_its_scan():
    from datetime import UTC, datetime

    from james_airflow.operators import RunScan

    until = datetime(2026, 11, 24, 5, 30, tzinfo=UTC)
    scanning = RunScan(run_dir="/w/run/messages", reuse=False, until=until, ranges=64)
    reusing = RunScan(run_dir="/w/run/messages", reuse=True)

    # After the 8 arguments every job has (target, keyspace, mode, report):
    assert job_arguments("messages", "check", FORM, "c.json", scanning)[8:] == [
        *("--run-dir", "/w/run/messages", "--ranges", "64", "--until", "2026-11-24T05:30:00+00:00")
    ]
    assert job_arguments("messages", "repair", FORM, "r.json", reusing)[8:11] == [
        *("--run-dir", "/w/run/messages", "--reuse-scan")
    ]
    full = RunScan(run_dir="hdfs://nn/james", reuse=True, work_root="hdfs://nn/james", full_verify=True)
    assert job_arguments("messages", "verify", FORM, "v.json", full)[8:] == [
        *("--run-dir", "hdfs://nn/james", "--work-root", "hdfs://nn/james", "--ranges", "0")
    ]
    # A dry run's repair is a check of its own: it keeps no scan for anyone.
    assert "--reuse-scan" not in job_arguments("messages", "repair", {**FORM, "dry_run": True}, "r.json", reusing)
