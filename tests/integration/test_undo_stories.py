"""Every repair can be taken back, on platforms written and broken by James's own code (the harness):

- every target repaired, then every run undone: each table the repairs touched is as before, row for row and column
  for column;
- James-like traffic writing between the repairs and the undo: every one of its writes survives the undo;
- the offline mailbox repair (merge, realign, orphan paths re-created or deleted) undone: paths, mailbox rows,
  messages and ACLs as they were; its undo asks for the typed confirmation.
"""

import multiprocessing

import pytest
from james_consistency.engine.run import RunOptions
from james_consistency.errors import OperatorError
from james_consistency.jobs.targets import run_target
from james_consistency.mailboxes import CONFIRMATION
from james_consistency.mailboxes.options import MailboxOptions
from james_consistency.undo.repair import undo_run
from james_consistency_kit import james_harness
from james_consistency_kit.faults import inject
from james_consistency_kit.seed import seed_platform
from james_consistency_kit.traffic import TrafficOptions, read_log, run_writer
from support.before_images import tables_with_key_entries
from support.james_platform import GENERATION_OF_VERSION, PROJECTION_TABLES, james_broken_platform
from support.mailboxes import break_every_mailbox_kind
from support.traffic import read_projections, undone_writes

pytestmark = pytest.mark.end_to_end

# The night's order (messages first: counters and quotas count them).
NIGHT = {
    "3.8.1": ("messages", "acl", "aclv2", "deleted", "unseen", "recent", "flags", "counters", "quotas"),
    "3.5.0": ("messages", "acl", "deleted", "unseen", "recent", "flags", "counters", "quotas"),
}
# What the offline mailbox repair may write; the uid and modseq generators it advances are never taken back.
MAILBOX_TABLES = {
    "3.9": ("mailbox", "mailboxpathv3", "imapuidtable", "messageidtable", "eventstore"),
    "3.5": ("mailbox", "mailboxpathv2", "imapuidtable", "messageidtable", "acl"),
}


COUNTER_TABLES = ("mailboxcounters", "currentquota", "quotacurrentvalue")


def contents(cql, keyspace: str, table: str) -> list[str]:
    """The table's rows, every column. A counter cell never incremented reads null, and 0 once incremented and
    decremented back (Cassandra cannot remove a counter cell safely): James reads both as 0, and so does this."""
    rows = (tuple(row) for row in cql.execute(f"SELECT * FROM {keyspace}.{table}"))
    if table in COUNTER_TABLES:
        rows = (tuple(0 if value is None else value for value in row) for row in rows)
    return sorted(repr(row) for row in rows)


def snapshot(cql, keyspace: str, tables) -> dict[str, list[str]]:
    return {table: contents(cql, keyspace, table) for table in tables}


def harness(version: str):
    reason = f"the James {version} harness is not built (make setup builds james/harness-{version})"
    return pytest.param(version, marks=pytest.mark.skipif(not james_harness.is_built(version), reason=reason))


def repair_night(spark, settings, keyspace: str, targets, work) -> list[tuple[str, dict]]:
    """Each target repaired in the night's order, in a work folder of its own; (work folder, report) of each."""
    runs = []
    for target in targets:
        run_dir = str(work / target)
        options = RunOptions(target, keyspace, mode="repair", allow_destructive=True, run_dir=run_dir)
        runs.append((run_dir, run_target(spark, settings, options)))
    return runs


@pytest.mark.parametrize("version", [harness("3.8.1"), harness("3.5.0")])
def test_every_target_repaired_on_a_platform_james_broke_then_undone_is_as_before(
    cql, cassandra_settings, spark, new_keyspace, tmp_path, version
):
    keyspace = new_keyspace(f"undo{version.replace('.', '')}")
    james_broken_platform(cql, cassandra_settings, keyspace, version)
    tables = PROJECTION_TABLES[GENERATION_OF_VERSION[version]]
    before = snapshot(cql, keyspace, tables)

    runs = repair_night(spark, cassandra_settings, keyspace, NIGHT[version], tmp_path)
    assert all(report["status"] == "COMPLETED" for _, report in runs), [r["errors"] for _, r in runs]
    written = {report["target"]: report["beforeImages"]["records"] for _, report in runs}
    assert sum(written.values()) > 0 and snapshot(cql, keyspace, tables) != before
    counted = {table for _, report in runs for table in report["beforeImages"]["counts"] if table in COUNTER_TABLES}
    assert counted and tables_with_key_entries(cql, keyspace) == counted

    undone = [undo_run(spark, cassandra_settings, run_dir, apply=True) for run_dir, _ in reversed(runs)]

    assert [(report["status"], report["failedCount"], report["notReversed"]) for report in undone] == [
        ("COMPLETED", 0, 0)
    ] * len(runs)
    assert {report["undoneTarget"]: report["restored"] for report in undone} == written
    after = snapshot(cql, keyspace, tables)
    assert {table: rows for table, rows in after.items() if rows != before[table]} == {}


def writer_process(settings, options):
    run_writer(settings, options)


def test_what_james_writes_after_the_repair_survives_its_undo(cql, cassandra_settings, spark, new_keyspace, tmp_path):
    keyspace = new_keyspace("undotraffic")
    seed_platform(
        cassandra_settings,
        keyspace=keyspace,
        users=3,
        mailboxes_per_user=2,
        messages_per_mailbox=20,
        generation="3.9",
        spark=spark,
    )
    for number, kind in enumerate(("projection-missing", "projection-outdated", "projection-orphan", "unseen-stale")):
        inject(cassandra_settings, keyspace=keyspace, kind=kind, rate=0.15, random_seed=number)
    targets = ("messages", "acl", "aclv2", "deleted", "unseen", "recent", "flags")
    runs = repair_night(spark, cassandra_settings, keyspace, targets, tmp_path)
    assert sum(report["beforeImages"]["records"] for _, report in runs) > 0

    # James's write paths at work between the repairs and their undo (complete operations only).
    log_path = tmp_path / "writer.jsonl"
    options = TrafficOptions(keyspace=keyspace, log_path=str(log_path), partial_share=0.0, seconds=15)
    writer = multiprocessing.get_context("spawn").Process(target=writer_process, args=(cassandra_settings, options))
    writer.start()
    writer.join(120)
    assert writer.exitcode == 0 and read_log(log_path), "the writer wrote nothing"

    undone = [undo_run(spark, cassandra_settings, run_dir, apply=True) for run_dir, _ in reversed(runs)]

    assert all(report["failedCount"] == 0 for report in undone)
    assert sum(report["newerKept"] for report in undone) > 0, "the writer touched no row the repairs had written"
    assert undone_writes(read_log(log_path), read_projections(cql, keyspace)) == []


@pytest.mark.parametrize("generation", ["3.9", "3.5"])
def test_the_offline_mailbox_repair_undone_leaves_paths_mailboxes_messages_and_acls_as_they_were(
    cql, cassandra_settings, spark, new_keyspace, tmp_path, generation
):
    from james_consistency.cassandra.schema import create_schema

    keyspace = new_keyspace("undombx")
    create_schema(cql, keyspace, generation)
    break_every_mailbox_kind(cql, keyspace, generation)
    before = snapshot(cql, keyspace, MAILBOX_TABLES[generation])
    run_dir = str(tmp_path / "mailboxes")
    mailbox_options = MailboxOptions(confirmation=CONFIRMATION, merge=True)
    options = RunOptions("mailboxes", keyspace, mode="repair", target_options=mailbox_options, run_dir=run_dir)
    repair = run_target(spark, cassandra_settings, options)
    assert repair["fixedCount"] > 0 and any(p["actions"].get("merged") for p in repair["passes"])

    with pytest.raises(OperatorError, match=CONFIRMATION):
        undo_run(spark, cassandra_settings, run_dir, apply=True)
    undone = undo_run(spark, cassandra_settings, run_dir, apply=True, confirmation=CONFIRMATION)

    assert (undone["status"], undone["failedCount"]) == ("COMPLETED", 0), undone["errors"]
    # Only the uids and modseqs the merge handed out are left as they are (James never gives one twice).
    kept = {table for table, actions in undone["undone"].items() if "not-reversed" in actions}
    assert kept <= {"messagecounter", "modseq"}
    after = snapshot(cql, keyspace, MAILBOX_TABLES[generation])
    assert {table: rows for table, rows in after.items() if rows != before[table]} == {}
