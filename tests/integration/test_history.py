"""`james-consistency history` on the reports of real runs: the engine checks, repairs and verifies a seeded, broken
keyspace on the test node (real Spark and Great Expectations), its reports are kept as the DAGs and the command line
keep them, and the command prints the table and draws the PNG an operator looks at."""

import json
import shutil
import subprocess
import uuid
from types import SimpleNamespace

import pytest
from james_consistency.engine.reports import write_report
from james_consistency.engine.run import GateFailed, RunOptions
from james_consistency.jobs.targets import run_target
from james_consistency_kit.faults import inject
from james_consistency_kit.seed import seed_platform
from support.messages import insert, message

NIGHTS = [f"airflow/message_consistency/scheduled__2026-11-2{day}T01_30_00_00_00" for day in (0, 1, 2)]
DELETED_REPORT = "deleted-repair-20261120T020000.json"


@pytest.fixture(scope="module")
def history(cassandra_settings, spark, cql, tmp_path_factory):
    """Three nights of message_consistency (a repair, a clean check, a check stopped by the truth gate) and one
    command-line repair of messageDeleted, as report files."""
    folder = tmp_path_factory.mktemp("reports")
    keyspace = f"hist_{uuid.uuid4().hex[:8]}"
    seed_platform(
        cassandra_settings, keyspace=keyspace, users=2, mailboxes_per_user=2, messages_per_mailbox=10, spark=spark
    )
    broken = {
        kind: inject(
            cassandra_settings, keyspace=keyspace, kind=kind, rate=0.25, manifest_path=str(folder.parent / kind)
        )["count"]
        for kind in ("projection-missing", "deleted-missing")
    }

    def run(target: str, mode: str, path: str, **options) -> dict:
        try:
            report = run_target(spark, cassandra_settings, RunOptions(target, keyspace, mode=mode, **options))
        except GateFailed as failure:
            report = failure.report
        write_report(report, folder / path)
        return report

    run("messages", "check", f"{NIGHTS[0]}/check_before.json")
    run("messages", "repair", f"{NIGHTS[0]}/repair.json", allow_destructive=True)
    run("messages", "verify", f"{NIGHTS[0]}/verify_after.json")
    run("deleted", "repair", DELETED_REPORT, allow_destructive=True)
    run("messages", "check", f"{NIGHTS[1]}/check_before.json")
    mailbox = next(iter(cql.execute(f"SELECT mailboxid FROM {keyspace}.imapuidtable LIMIT 1"))).mailboxid
    insert(cql, keyspace, "imapuidtable", message("3.9", mailbox, 0, 4_242, modseq=None))
    run("messages", "check", f"{NIGHTS[2]}/check_before.json")
    (folder / "notes.json").write_text('{"not": "a report"}')
    yield SimpleNamespace(
        folder=folder, keyspace=keyspace, missing=broken["projection-missing"], deleted=broken["deleted-missing"]
    )
    cql.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)


def columns(line: str) -> list[str]:
    cells = line.split()
    # time (UTC) is two cells (date and time); the status may carry "(gate <name>)"
    return [f"{cells[0]} {cells[1]}", *cells[2:13], " ".join(cells[13:])]


def test_history_prints_found_and_fixed_per_projection_and_draws_them(history, tmp_path):
    from PIL import Image

    png = tmp_path / "history.png"
    command = [shutil.which("james-consistency"), "history", "--reports", str(history.folder), "--plot", str(png)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()

    assert lines[0].split() == [
        "time",
        "(UTC)",
        "projection",
        "keyspace",
        "run",
        "modes",
        "found",
        "missing",
        "outdated",
        "orphan",
        "fixed",
        "remaining",
        "undo",
        "status",
    ]
    rows = [columns(line) for line in lines[1:5]]
    ks, m, d = history.keyspace, history.missing, history.deleted
    nights = [night.removeprefix("airflow/") for night in NIGHTS]
    assert [row[1:] for row in rows] == [
        ["deleted", ks, "cli", "repair", str(d), str(d), "0", "0", str(d), "-", "yes" if d else "-", "COMPLETED"],
        ["messages", ks, nights[0], "check+repair+verify", str(m), str(m), "0", "0", str(m), "0", "yes", "COMPLETED"],
        ["messages", ks, nights[1], "check", "0", "0", "0", "0", "-", "-", "-", "COMPLETED"],
        ["messages", ks, nights[2], "check", "-", "-", "-", "-", "-", "-", "-", "FAILED (gate messages_truth_health)"],
    ]
    messages_times = [row[0] for row in rows[1:]]
    assert messages_times == sorted(messages_times), "oldest first"
    assert lines[5] == ""
    assert lines[6].startswith(f"deleted: 1 runs, {d} inconsistencies found, {d} fixed; last run ")
    assert lines[7].startswith(f"messages: 3 runs, {m} inconsistencies found, {m} fixed; last run ")
    assert lines[7].endswith("FAILED (gate messages_truth_health)")
    assert f"(1 JSON files in {history.folder} are not consistency reports: skipped)" in lines
    assert lines[-1].startswith(f"plot: {png} (")

    image = Image.open(png)
    assert image.format == "PNG" and image.size == (1100, 700)
    assert json.loads(image.info["Series"]) == {
        "deleted found": 1,
        "deleted fixed": 1,
        "messages found": 2,
        "messages fixed": 1,
        "failed runs": 1,
    }
    colours = {colour for _, colour in image.convert("RGB").getcolors(maxcolors=1 << 20)}
    assert (0x1F, 0x77, 0xB4) in colours, "messages is drawn in its colour"
    assert (0xD6, 0x27, 0x28) in colours, "deleted is drawn in its colour"


def test_history_filters_by_projection_and_date(history, capsys):
    from james_consistency_kit.cli import main

    assert main(["history", "--reports", str(history.folder), "--target", "deleted"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert [line.split()[2] for line in table[1:] if line and not line.endswith("skipped)")][:1] == ["deleted"]
    assert not any(line.startswith("messages") or " messages " in line for line in table)

    assert main(["history", "--reports", str(history.folder), "--since", "2999-01-01"]) == 0
    assert capsys.readouterr().out.strip() == f"no runs in {history.folder} matching the filters"

    assert main(["history", "--reports", str(history.folder), "--target", "messages", "--since", "2000-01-01"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert sum(" messages " in line for line in table[: table.index("")]) == 3

    with pytest.raises(SystemExit) as refused:
        main(["history", "--since", "last tuesday"])
    assert refused.value.code == 2
    assert "'last tuesday' is not a date" in capsys.readouterr().err
