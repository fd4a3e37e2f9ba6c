"""The trigger form's values become the reconcile job's command line (what spark-submit runs), and that command line the
run's options; a run's status becomes the job's exit code, its report a file and a few lines on stdout."""

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from james_airflow.operators import job_arguments
from james_consistency.engine.run import RunOptions
from james_consistency.errors import OperatorError
from james_consistency.jobs.main import build_parser, exit_code, publish, run_options
from james_consistency.report.run_report import parse_report

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
        *("--messages-per-second", "200", "--recheck-delay", "30", "--max-destructive-share", "0.05"),
        *("--truth-consistency", "SERIAL"),
    ]


def test_the_forms_default_consistency_leaves_the_levels_to_james_s_settings(monkeypatch):
    from james_consistency.cassandra.consistency_levels import AS_JAMES, read_levels

    monkeypatch.setenv("JAMES_LWT_SERIAL_CONSISTENCY", "LOCAL_SERIAL")
    command = job_arguments("messages", "repair", {**FORM, "truth_consistency": AS_JAMES}, "r.json")
    options = run_options(build_parser().parse_args(command))

    assert "--truth-consistency" not in command and options.truth_consistency is None
    levels = read_levels(options.truth_consistency)
    assert (levels.message_truth, levels.truth, levels.scan) == ("LOCAL_SERIAL", "LOCAL_QUORUM", "LOCAL_QUORUM")


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
        *("--run-dir", "hdfs://nn/james", "--work-root", "hdfs://nn/james", "--ranges", "0"),
        *("--recheck-delay", "30"),  # a key the verify finds wrong is read again after the night's re-check delay
    ]
    # A dry run's repair is a check of its own: it keeps no scan for anyone.
    assert "--reuse-scan" not in job_arguments("messages", "repair", {**FORM, "dry_run": True}, "r.json", reusing)


# ---- the job's side: its command line becomes the run's options, its report's status the exit code ----------------


def test_the_jobs_command_line_becomes_the_runs_options():
    command = job_arguments("messages", "repair", {**FORM, "allow_destructive": True}, "r.json")
    args = build_parser().parse_args([*command, "--until", "2026-11-24T05:30:00+00:00", "--max-ranges", "8"])

    assert run_options(args) == RunOptions(
        target="messages",
        keyspace="james_prod",
        mode="repair",
        messages_per_second=200,
        recheck_delay_seconds=30,
        truth_consistency="SERIAL",
        max_destructive_share=0.05,
        allow_destructive=True,
        until=datetime(2026, 11, 24, 5, 30, tzinfo=UTC).timestamp(),
        max_ranges=8,
    )


def test_an_until_that_is_no_time_is_bad_input_before_any_spark():
    args = build_parser().parse_args(
        ["--target", "messages", "--keyspace", "james", "--report", "r", "--until", "soon"]
    )

    with pytest.raises(OperatorError, match="'soon' is neither an ISO 8601 time nor HH:MM"):
        run_options(args)


@pytest.mark.parametrize(
    ("report", "code"),
    [
        ({"status": "COMPLETED"}, 0),
        ({"status": "NOT_APPLICABLE"}, 0),
        ({"status": "PARTIAL", "failedCount": 2}, 3),
        ({"status": "PARTIAL", "failedCount": 0, "unreadableTruth": 1}, 3),
        ({"status": "PARTIAL", "failedCount": 0, "conflictingEntries": [{"mailboxDaoEntry": {}}]}, 0),
        ({"status": "WINDOW_ENDED"}, 6),
    ],
    ids=["completed", "not-applicable", "rows-failed", "truth-unreadable", "only-conflicts-reported", "window-ended"],
)
def test_a_run_that_ended_with_a_report_exits_3_only_when_something_failed_or_could_not_be_read(report, code):
    ended = {"type": "t", "target": "messages", "mode": "repair", "dryRun": False, "keyspace": "james", "runId": "r"}
    assert exit_code(parse_report({**ended, **report, "result": report["status"]})) == code


def test_a_job_writes_its_report_then_prints_its_summary_its_failed_gates_but_the_answers_and_where_it_is(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.delenv("AIRFLOW__METRICS__STATSD_ON", raising=False)
    monkeypatch.delenv("AIRFLOW__METRICS__OTEL_ON", raising=False)
    report = {
        "type": "solve-mailbox-inconsistencies",
        "target": "mailboxes",
        "mode": "verify",
        "dryRun": True,
        "keyspace": "james",
        "runId": "20261126T020000-abcdef",
        "status": "FAILED",
        "result": "FAILED",
        "inconsistencies": {"orphan-path": 1},
        "remainingFixable": 1,
        "mailboxTable": "mailbox",
        "durationSeconds": 2.5,
        "gates": [
            {"name": "mailbox_health", "success": True, "failed_expectations": []},
            {
                "name": "mailbox_nothing_to_do",
                "success": False,
                "failed_expectations": ["found something"],
                "blocking": False,
            },
            {"name": "mailbox_repaired", "success": False, "failed_expectations": [{"target": "kind"}]},
        ],
    }

    publish(report, tmp_path / "reports" / "r.json")

    assert json.loads((tmp_path / "reports" / "r.json").read_text()) == report
    assert capsys.readouterr().out.splitlines() == [
        "mailboxes verify on james: FAILED; found orphan-path 1; remaining fixable 1 (2.5s)",
        "gate mailbox_repaired FAILED: [{'target': 'kind'}]",
        f"report: {tmp_path / 'reports' / 'r.json'}",
    ]


def test_a_local_job_has_the_connector_on_its_class_path_a_cluster_job_ships_its_code(monkeypatch):
    from james_consistency.cassandra.cql import CassandraSettings
    from james_consistency.runtime.connector_jars import spark_jars
    from james_consistency.runtime.spark_env import spark_submit_command

    monkeypatch.setenv("SPARK_PY_FILES", "/opt/james/james_consistency.zip")
    settings = CassandraSettings(host="127.0.0.1", port=9042)

    def conf(master: str) -> dict[str, str]:
        command = spark_submit_command(Path("job.py"), [], settings, master=master)
        pairs = [command[index + 1] for index, part in enumerate(command) if part == "--conf"]
        return dict(pair.split("=", 1) for pair in pairs)

    local, cluster = conf("local[*]"), conf("spark://spark-master:7077")
    assert local["spark.driver.extraClassPath"].split(":") == [str(jar) for jar in spark_jars()]
    assert "spark.files" not in local
    assert "spark.driver.extraClassPath" not in cluster
    assert cluster["spark.files"] == "/opt/james/james_consistency.zip"
    assert cluster["spark.executorEnv.PYTHONPATH"] == "james_consistency.zip"
