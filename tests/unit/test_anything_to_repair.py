"""The short-circuit between a DAG's check and its repair: what the check's report lets through."""

import types

import pytest
from james_airflow import consistency_dag


def decide(monkeypatch, report: dict, dry_run: bool = False) -> bool:
    monkeypatch.setattr(consistency_dag, "read_report", lambda dag_id, run_id, step: report)
    context = {
        "dag": types.SimpleNamespace(dag_id="message_consistency"),
        "run_id": "r1",
        "params": {"dry_run": dry_run},
    }
    return consistency_dag.something_to_repair(**context)


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
def test_the_repair_runs_when_the_check_found_what_to_fix(monkeypatch, report, dry_run, repair):
    assert decide(monkeypatch, report, dry_run) is repair


def test_a_check_without_a_report_fails_the_short_circuit(monkeypatch):
    with pytest.raises(RuntimeError, match="the check step wrote no report"):
        decide(monkeypatch, None)
