"""The figures a report gives the dashboards, for the runs the integration tests do not stop half-way."""

from james_consistency.report.metrics import report_figures, statsd_name
from james_consistency.report.run_report import parse_report


def by_statsd_name(report: dict) -> dict[str, float]:
    scope = {key: report[key] for key in ("keyspace", "target", "mode")}
    typed = parse_report({"type": "t", "dryRun": False, "runId": "r", "result": report["status"], **report})
    return {statsd_name("airflow", scope, figure): figure.value for figure in report_figures(typed)}


def test_a_repair_stopped_by_its_safety_gate_leaves_everything_found_remaining():
    report = {
        "keyspace": "james",
        "target": "messages",
        "mode": "repair",
        "generation": "3.9",
        "status": "FAILED",
        "inconsistencies": {"missing": 2, "outdated": 0, "orphan": 7},
        "processedImapUidEntries": 100,
        "processedMessageIdEntries": 105,
        "rowsScanned": {"truth": 100, "projection": 105},
        "gates": [{"name": "messages_truth_health", "success": True}, {"name": "plan_safety", "success": False}],
        "durationSeconds": 4.2,
    }

    figures = by_statsd_name(report)

    base = "airflow.james_consistency.james.messages.repair"
    assert figures[f"{base}.runs.failed"] == 1
    assert figures[f"{base}.gate.plan_safety"] == 0 and figures[f"{base}.gate.messages_truth_health"] == 1
    assert [figures[f"{base}.fixed.{kind}"] for kind in ("missing", "outdated", "orphan")] == [0, 0, 0]
    assert [figures[f"{base}.remaining.{kind}"] for kind in ("missing", "outdated", "orphan")] == [2, 0, 7]
    assert figures[f"{base}.rows_scanned.projection"] == 105
    assert figures[f"{base}.duration"] == 4200


def test_a_partial_repair_counts_its_failed_fixes_as_remaining():
    report = {
        "keyspace": "james",
        "target": "counters",
        "mode": "repair",
        "status": "PARTIAL",
        "inconsistencies": {"missing": 0, "outdated": 5, "orphan": 0},
        "outcomes": [
            {"kind": "outdated", "action": "already_consistent", "count": 1},
            {"kind": "outdated", "action": "failed", "count": 1},
            {"kind": "outdated", "action": "updated", "count": 3},
        ],
        "ranges": {"done": 6, "total": 8, "left": 2, "scannedByThisRun": 6, "resumed": False},
    }

    figures = by_statsd_name(report)

    base = "airflow.james_consistency.james.counters.repair"
    assert figures[f"{base}.fixed.outdated"] == 3
    assert figures[f"{base}.remaining.outdated"] == 1
    assert figures[f"{base}.runs.partial"] == 1
    assert (figures[f"{base}.ranges.done"], figures[f"{base}.ranges.total"]) == (6, 8)


def test_airflow_metrics_settings_reach_the_job_unless_the_environment_has_them(monkeypatch):
    from airflow.sdk.configuration import conf
    from james_airflow.operators import metrics_environment

    monkeypatch.delenv("AIRFLOW__METRICS__STATSD_HOST", raising=False)
    monkeypatch.delenv("AIRFLOW__METRICS__STATSD_ON", raising=False)
    monkeypatch.setenv("AIRFLOW__METRICS__STATSD_PORT", "9125")  # inherited by the job as it is
    conf.set("metrics", "statsd_host", "statsd.example.org")
    conf.set("metrics", "statsd_on", "True")
    try:
        environment = metrics_environment()
    finally:
        conf.remove_option("metrics", "statsd_host")
        conf.remove_option("metrics", "statsd_on")

    assert environment["AIRFLOW__METRICS__STATSD_HOST"] == "statsd.example.org"
    assert environment["AIRFLOW__METRICS__STATSD_ON"] == "True"
    assert "AIRFLOW__METRICS__STATSD_PORT" not in environment


def test_an_offline_mailbox_repair_gives_its_fixes_and_what_is_left_per_kind():
    report = {
        "keyspace": "james",
        "target": "mailboxes",
        "mode": "repair",
        "generation": "3.9",
        "status": "PARTIAL",
        "inconsistencies": {"orphan-path": 3, "two-ids-one-path": 1},
        "processedMailboxEntries": 20,
        "processedMailboxPathEntries": 22,
        "rowsScanned": {"mailbox": 20, "path": 22},
        "fixedCount": 3,
        "remaining": {"orphan-path": 0, "two-ids-one-path": 1},
        "mailboxTable": "mailbox",
        "gates": [{"name": "mailbox_health", "success": True}],
    }

    figures = by_statsd_name(report)

    base = "airflow.james_consistency.james.mailboxes.repair"
    assert figures[f"{base}.found.orphan-path"] == 3
    assert figures[f"{base}.fixed"] == 3
    assert figures[f"{base}.remaining.orphan-path"] == 0 and figures[f"{base}.remaining.two-ids-one-path"] == 1
    assert figures[f"{base}.rows_scanned.mailbox"] == 20 and figures[f"{base}.rows_scanned.path"] == 22
    assert figures[f"{base}.runs.partial"] == 1
