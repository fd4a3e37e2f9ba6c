"""The short-circuit between a DAG's check and its repair: what the check's report lets through."""

import types
import uuid

import pytest
from james_airflow import consistency_dag
from james_airflow.runs import report_path, run_folder
from james_consistency.engine.reports import write_report


def decide(report: dict | None, dry_run: bool = False) -> bool:
    """The short-circuit's decision on a check report written where the check step of a DAG run writes it."""
    dag_id, run_id = "message_consistency", f"test-{uuid.uuid4().hex}"
    if report is not None:
        check = {"type": "messages-consistency", "target": "messages", "mode": "check", "dryRun": True}
        check |= {"keyspace": "james", "runId": run_id, "result": report["status"], **report}
        write_report(check, report_path(dag_id, run_id, "check"))
    context = {"dag": types.SimpleNamespace(dag_id=dag_id), "run_id": run_id, "params": {"dry_run": dry_run}}
    try:
        return consistency_dag.repair_after_check(**context)
    finally:
        for written in run_folder(dag_id, run_id).glob("*.json"):
            written.unlink()
        if run_folder(dag_id, run_id).exists():
            run_folder(dag_id, run_id).rmdir()


FOUND = {"inconsistencies": {"missing": 2, "outdated": 0, "orphan": 0}}
NOTHING = {"inconsistencies": {"missing": 0, "outdated": 0, "orphan": 0}}


@pytest.mark.parametrize(
    ("report", "dry_run", "repair"),
    [
        ({"status": "COMPLETED", **FOUND}, False, True),
        ({"status": "COMPLETED", **NOTHING}, False, False),
        ({"status": "COMPLETED", **FOUND}, True, False),
        # The window ended before any range decided anything: the next run goes on from the journal.
        ({"status": "WINDOW_ENDED", "windowEnded": "window ended, 6 ranges left", **NOTHING}, False, False),
        # The window ended part-way and the finished ranges decided fixes: they are made tonight.
        ({"status": "WINDOW_ENDED", "windowEnded": "w", "decidedByFinishedRanges": True, **FOUND}, False, True),
        ({"status": "WINDOW_ENDED", "windowEnded": "w", "decidedByFinishedRanges": True, **FOUND}, True, False),
    ],
)
def test_the_repair_runs_when_the_check_found_what_to_fix(report, dry_run, repair):
    assert decide(report, dry_run) is repair


def test_a_check_without_a_report_fails_the_short_circuit():
    with pytest.raises(RuntimeError, match="the check step wrote no report"):
        decide(None)
