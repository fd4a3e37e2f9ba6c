"""`history` shows how far a window-bounded scan got: its status and ranges done / total."""

from pathlib import Path

from james_consistency.report.history import _entry
from james_consistency.report.run_report import RunReport, parse_report


def ranges(done: int, total: int) -> dict:
    return {"done": done, "total": total, "left": total - done, "scannedByThisRun": done, "resumed": False}


def report(mode: str, status: str, **fields) -> RunReport:
    return parse_report(
        {
            "type": "messages-consistency",
            "target": "messages",
            "keyspace": "james",
            "mode": mode,
            "dryRun": mode != "repair",
            "runId": "20261124T023000-abcdef",
            "status": status,
            "result": status,
            "startedAt": "2026-11-24T02:30:00+00:00",
            "inconsistencies": {"missing": 0, "outdated": 0, "orphan": 0},
            **fields,
        }
    )


def test_a_night_stopped_at_its_window_shows_its_ranges():
    stopped = report("check", "WINDOW_ENDED", ranges=ranges(40, 128), windowEnded="window ended")

    entry = _entry("night-1", [(Path("check.json"), stopped)])

    assert entry.status_text == "WINDOW_ENDED (40/128 ranges)"


def test_a_resumed_night_that_finished_shows_every_range_done():
    check = report("check", "COMPLETED", ranges=ranges(128, 128), expectedProjectionRows=10)
    repair = report("repair", "COMPLETED", expectedProjectionRows=10)

    entry = _entry("night-2", [(Path("check.json"), check), (Path("repair.json"), repair)])

    assert entry.status_text == "COMPLETED (128/128 ranges)"
