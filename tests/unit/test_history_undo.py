"""`history` says which runs can still be undone: a repair that recorded before-images, within
JAMES_UNDO_RETENTION_DAYS of its start, whose before-images folder is still there and that no applied undo took back
already; and the command that takes each back."""

import json
from datetime import UTC, datetime, timedelta

import pytest
from james_consistency.cli.main import main
from james_consistency.report.history import collect, undoable_runs

NOW = datetime.now(UTC)


def write_report(folder, name: str, **fields) -> None:
    report = {
        "type": "messages-consistency",
        "target": "messages",
        "keyspace": "james",
        "mode": "repair",
        "dryRun": False,
        "runId": name,
        "status": "COMPLETED",
        "result": "COMPLETED",
        "inconsistencies": {"missing": 3, "outdated": 0, "orphan": 0},
        **fields,
    }
    path = folder / "airflow" / "message_consistency" / name / f"{report['mode']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report))


def repair(folder, work, name: str, started: datetime, records: int = 3, images_kept: bool = True) -> str:
    run_dir = work / name
    if images_kept:
        (run_dir / "before-images").mkdir(parents=True)
    write_report(
        folder,
        name,
        startedAt=started.isoformat(),
        workDir=str(run_dir),
        addedMessageIdEntries=records,
        beforeImages={
            "path": f"{run_dir}/before-images",
            "records": records,
            "counts": {"messageidtable": {"inserted": records}} if records else {},
        },
    )
    return str(run_dir)


@pytest.fixture
def reports(tmp_path, monkeypatch):
    """Repairs of the last weeks (retention 14 days) and one applied undo."""
    monkeypatch.setenv("JAMES_UNDO_RETENTION_DAYS", "14")
    folder, work = tmp_path / "reports", tmp_path / "work"
    runs = {
        "recent": repair(folder, work, "recent", NOW - timedelta(days=1)),
        "old": repair(folder, work, "old", NOW - timedelta(days=15)),
        "housekept": repair(folder, work, "housekept", NOW - timedelta(days=2), images_kept=False),
        "undone": repair(folder, work, "undone", NOW - timedelta(days=3)),
        "clean": repair(folder, work, "clean", NOW - timedelta(days=1, hours=1), records=0),
    }
    write_report(folder, "check-only", mode="check", dryRun=True, startedAt=NOW.isoformat())
    undo = {"target": "undo", "type": "undo-repair", "undoneRunId": "undone", "inconsistencies": {}}
    write_report(folder, "undo-of-undone", **undo, startedAt=NOW.isoformat(), undoneRunDir=runs["undone"])
    return folder, runs


def test_each_run_says_whether_it_can_still_be_undone(reports):
    folder, runs = reports

    entries, _ = collect(folder, target="messages")

    states = {entry.run.rsplit("/", 1)[1]: entry.undo.state if entry.undo else "-" for entry in entries}
    assert states == {
        "recent": "yes",
        "old": "expired",
        "housekept": "removed",
        "undone": "undone",
        "clean": "-",
        "check-only": "-",
    }
    [recent] = [entry for entry in entries if entry.run.endswith("/recent")]
    assert recent.undo.run_dir == runs["recent"]
    assert recent.undo.until == datetime.fromisoformat((NOW - timedelta(days=1)).isoformat()) + timedelta(days=14)


def test_the_retention_decides_what_is_still_undoable(reports, monkeypatch):
    folder, runs = reports

    assert [entry.undo.run_dir for entry in undoable_runs(folder)] == [runs["recent"]]
    monkeypatch.setenv("JAMES_UNDO_RETENTION_DAYS", "0.5")
    assert undoable_runs(folder) == []


def test_the_history_table_has_an_undo_column_and_tells_how_to_undo(reports, capsys):
    folder, runs = reports

    assert main(["history", "--reports", str(folder), "--target", "messages"]) == 0
    lines = capsys.readouterr().out.splitlines()

    header = lines[0].split()
    assert header[-2:] == ["undo", "status"]
    undo_cells = {line.split()[4].rsplit("/", 1)[1]: line.split()[-2] for line in lines[1:7]}
    assert undo_cells == {
        "old": "expired",
        "housekept": "removed",
        "undone": "undone",
        "recent": "yes",
        "clean": "-",
        "check-only": "-",
    }
    undoable = lines[lines.index("Undoable runs (the undo_repair DAG takes the same work folder):") + 1 :]
    until = (NOW - timedelta(days=1) + timedelta(days=14)).strftime("%Y-%m-%d %H:%M")
    assert undoable == [
        f"  messages message_consistency/recent on james, until {until} UTC: "
        f"james-consistency undo --run-dir {runs['recent']}"
    ]
