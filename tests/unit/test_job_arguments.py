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
