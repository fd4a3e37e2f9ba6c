"""The repairs do as the James deployment is configured (the settings of the "James's configuration" group): James
master's `handleRecent=false` makes mailboxRecents and flagRecent nobody's business, and James's message write
consistency decides the level the re-checks re-read imapUidTable at.

Which level a read was made at is seen in Cassandra itself: a read at SERIAL or LOCAL_SERIAL is a Paxos round, which
(Paxos v1, the test node's) leaves a row in `system.paxos` for the partition it read; a read at LOCAL_QUORUM leaves
none. The tables are compared with plain CQL.
"""

import json
import uuid

import pytest
from james_consistency.cassandra.schema import create_schema
from james_consistency.engine.run import RunOptions
from james_consistency.jobs.targets import run_target
from james_consistency_kit.faults import inject
from support.james_platform import james_platform
from support.messages import platform, projection, truth

RECENT_FAULTS = ("recent-missing", "recent-stale")


def recents(cql, keyspace) -> set:
    return {(row.mailboxid, row.recent_mesage_uid) for row in cql.execute(f"SELECT * FROM {keyspace}.mailboxrecents")}


def run(spark, settings, target, keyspace, mode="repair", **options):
    return run_target(spark, settings, RunOptions(target=target, keyspace=keyspace, mode=mode, **options))


def test_where_james_does_not_handle_recent_mailbox_recents_is_neither_checked_nor_written(
    cql, cassandra_settings, spark, new_keyspace, tmp_path, monkeypatch, capsys
):
    from james_consistency_kit.cli import main

    keyspace = new_keyspace("norecent")
    james_platform(cql, cassandra_settings, keyspace, "3.9")
    broken = {
        kind: inject(cassandra_settings, keyspace=keyspace, kind=kind, rate=0.3, manifest_path=str(tmp_path / kind))
        for kind in RECENT_FAULTS
    }
    assert all(damage["count"] > 0 for damage in broken.values())
    before = recents(cql, keyspace)
    monkeypatch.setenv("JAMES_HANDLE_RECENT", "0")

    reports = [run(spark, cassandra_settings, "recent", keyspace, mode) for mode in ("check", "repair", "verify")]
    report_file = tmp_path / "recent-repair.json"
    code = main(
        [
            "repair",
            "recent",
            "--keyspace",
            keyspace,
            "--port",
            str(cassandra_settings.port),
            "--report",
            str(report_file),
        ]
    )

    assert recents(cql, keyspace) == before, "nothing written"
    for report in reports:
        assert report["status"] == "NOT_APPLICABLE" and "handleRecent=false" in report["reason"]
        assert report["inconsistencies"] == {"missing": 0, "outdated": 0, "orphan": 0}
    assert code == 0
    printed = capsys.readouterr().out
    assert (
        f"recent repair on {keyspace}: NOT_APPLICABLE; James is configured with james.mailbox.handleRecent=false"
        in (printed)
    )
    written = json.loads(report_file.read_text())
    assert written["status"] == "NOT_APPLICABLE" and "handleRecent=false" in written["reason"]

    # As James handles Recent by default, so does the repair: the same keyspace's faults are found as before.
    monkeypatch.delenv("JAMES_HANDLE_RECENT")
    check = run(spark, cassandra_settings, "recent", keyspace, "check")
    assert check["status"] == "COMPLETED"
    assert check["inconsistencies"]["missing"] == broken["recent-missing"]["count"]
    assert check["inconsistencies"]["orphan"] == broken["recent-stale"]["count"]


def test_messages_ignore_a_difference_in_flag_recent_alone_where_james_does_not_handle_recent(
    cql, cassandra_settings, spark, new_keyspace, monkeypatch
):
    keyspace = new_keyspace("flagrecent")
    create_schema(cql, keyspace, "3.9")
    rows = platform(cql, keyspace, "3.9")
    flipped = rows[:4]
    for row in flipped:
        cql.execute(
            f"UPDATE {keyspace}.messageidtable SET flagrecent = true WHERE mailboxid = %s AND uid = %s",
            (row["mailboxid"], row["uid"]),
        )
    stale = projection(cql, keyspace)
    monkeypatch.setenv("JAMES_HANDLE_RECENT", "0")

    check = run(spark, cassandra_settings, "messages", keyspace, "check")
    repair = run(spark, cassandra_settings, "messages", keyspace, "repair", max_destructive_share=1)

    assert check["status"] == repair["status"] == "COMPLETED"
    assert check["inconsistencies"] == repair["inconsistencies"] == {"missing": 0, "outdated": 0, "orphan": 0}
    assert repair["updatedMessageIdEntries"] == 0
    assert projection(cql, keyspace) == stale, "no write spent on a column James no longer reads"

    # By default flagRecent is compared as every other flag: the four rows are outdated and rewritten.
    monkeypatch.delenv("JAMES_HANDLE_RECENT")
    repair = run(spark, cassandra_settings, "messages", keyspace, "repair", max_destructive_share=1)
    assert repair["inconsistencies"] == {"missing": 0, "outdated": 4, "orphan": 0}
    assert repair["updatedMessageIdEntries"] == 4
    assert projection(cql, keyspace) == truth(cql, keyspace)


# ---- the re-checks' consistency -----------------------------------------------------------------------------------


def serially_read(cql, keyspace: str, table: str) -> set:
    """The partitions of `keyspace.table` a serial read (or a lightweight transaction) has gone through."""
    (node_variant,) = cql.execute("SELECT value FROM system_views.settings WHERE name = 'paxos_variant'").one()
    assert node_variant == "v1", "these tests see serial reads in system.paxos, as Paxos v1 keeps them"
    table_id = (
        cql.execute(
            "SELECT id FROM system_schema.tables WHERE keyspace_name = %s AND table_name = %s", (keyspace, table)
        )
        .one()
        .id
    )
    return {row.row_key for row in cql.execute("SELECT row_key, cf_id FROM system.paxos") if row.cf_id == table_id}


def message_ids(rows) -> set:
    return {row["messageid"].bytes for row in rows}


def break_flags(cql, keyspace, rows) -> None:
    """messageIdTable rows whose \\Flagged differs from the truth's: outdated."""
    for row in rows:
        cql.execute(
            f"UPDATE {keyspace}.messageidtable SET flagflagged = true WHERE mailboxid = %s AND uid = %s",
            (row["mailboxid"], row["uid"]),
        )


@pytest.fixture
def messages_platform(cql, new_keyspace):
    keyspace = new_keyspace("levels")
    create_schema(cql, keyspace, "3.9")
    return keyspace, platform(cql, keyspace, "3.9")


@pytest.mark.parametrize("throttled", [False, True], ids=["read-in-the-executors", "read-candidate-by-candidate"])
def test_imap_uid_table_is_re_read_at_serial_as_james_writes_messages_with_lightweight_transactions(
    cql, cassandra_settings, spark, messages_platform, monkeypatch, throttled
):
    keyspace, rows = messages_platform
    monkeypatch.delenv("JAMES_MESSAGE_WRITE_STRONG_CONSISTENCY", raising=False)
    monkeypatch.setenv("JAMES_LWT_SERIAL_CONSISTENCY", "LOCAL_SERIAL" if throttled else "SERIAL")
    broken = rows[:3]
    break_flags(cql, keyspace, broken)

    rate = 1000 if throttled else 0  # a throttled run re-reads candidate by candidate through the Python driver
    report = run(spark, cassandra_settings, "messages", keyspace, max_destructive_share=1, messages_per_second=rate)

    assert report["status"] == "COMPLETED" and report["updatedMessageIdEntries"] == 3
    assert projection(cql, keyspace) == truth(cql, keyspace)
    expected_reads = "per candidate" if throttled else "projection by partition, truth by direct join"
    assert report["liveReads"] == expected_reads, "the live reads in the executors work at a serial level too"
    assert report["runningOptions"]["messageTruthConsistency"] == ("LOCAL_SERIAL" if throttled else "SERIAL")
    assert report["runningOptions"]["truthConsistency"] == report["runningOptions"]["scanConsistency"] == "LOCAL_QUORUM"
    assert serially_read(cql, keyspace, "imapuidtable") == message_ids(broken)
    assert serially_read(cql, keyspace, "messageidtable") == set(), "the projection is read at the regular level"


def test_imap_uid_table_is_re_read_at_the_regular_level_as_james_writes_messages_without_them(
    cql, cassandra_settings, spark, messages_platform, monkeypatch
):
    keyspace, rows = messages_platform
    monkeypatch.setenv("JAMES_MESSAGE_WRITE_STRONG_CONSISTENCY", "0")
    break_flags(cql, keyspace, rows[:3])
    cql.execute(
        f"UPDATE {keyspace}.mailboxcounters SET count = count + 5 WHERE mailboxid = %s", (rows[0]["mailboxid"],)
    )

    messages = run(spark, cassandra_settings, "messages", keyspace, max_destructive_share=1)
    counters = run(spark, cassandra_settings, "counters", keyspace, max_destructive_share=1)

    assert messages["updatedMessageIdEntries"] == 3 and counters["updatedCounterEntries"] >= 1
    assert messages["runningOptions"]["messageTruthConsistency"] == "LOCAL_QUORUM"
    assert serially_read(cql, keyspace, "imapuidtable") == set()

    # The same counter recount where James writes messages with lightweight transactions: the mailbox's messages are
    # re-read serially.
    monkeypatch.delenv("JAMES_MESSAGE_WRITE_STRONG_CONSISTENCY")
    cql.execute(
        f"UPDATE {keyspace}.mailboxcounters SET count = count + 5 WHERE mailboxid = %s", (rows[0]["mailboxid"],)
    )
    counters = run(spark, cassandra_settings, "counters", keyspace, max_destructive_share=1)
    assert counters["updatedCounterEntries"] == 1
    in_mailbox = [row for row in rows if row["mailboxid"] == rows[0]["mailboxid"]]
    assert serially_read(cql, keyspace, "imapuidtable") == message_ids(in_mailbox)


def test_a_level_given_to_the_run_wins_and_a_serial_one_never_reaches_the_scan(
    cql, cassandra_settings, spark, messages_platform, monkeypatch, tmp_path
):
    keyspace, rows = messages_platform
    monkeypatch.delenv("JAMES_MESSAGE_WRITE_STRONG_CONSISTENCY", raising=False)
    break_flags(cql, keyspace, rows[:2])

    repair = run(
        spark,
        cassandra_settings,
        "messages",
        keyspace,
        max_destructive_share=1,
        truth_consistency="LOCAL_QUORUM",
        fresh=True,
        ranges=4,
        work_root=str(tmp_path),
    )
    assert repair["updatedMessageIdEntries"] == 2
    assert repair["runningOptions"]["messageTruthConsistency"] == "LOCAL_QUORUM"
    assert serially_read(cql, keyspace, "imapuidtable") == set(), "LOCAL_QUORUM, given, wins over James's setting"

    break_flags(cql, keyspace, rows[2:3])
    serial = run(
        spark,
        cassandra_settings,
        "messages",
        keyspace,
        max_destructive_share=1,
        truth_consistency="SERIAL",
        ranges=4,
        fresh=True,
        work_root=str(tmp_path),
    )
    # A serial level is one partition's guarantee: the re-check's point reads get it, the ranged scan stays regular.
    assert serial["status"] == "COMPLETED" and serial["updatedMessageIdEntries"] == 1
    assert serial["runningOptions"]["truthConsistency"] == serial["runningOptions"]["messageTruthConsistency"]
    assert serial["runningOptions"]["scanConsistency"] == "LOCAL_QUORUM"
    assert serially_read(cql, keyspace, "imapuidtable") == {rows[2]["messageid"].bytes}, "only the re-check"
    assert serially_read(cql, keyspace, "messageidtable") == set()


def test_a_wrong_lwt_level_is_refused_before_anything_is_read(cassandra_settings, spark, monkeypatch):
    from james_consistency.errors import OperatorError

    monkeypatch.setenv("JAMES_LWT_SERIAL_CONSISTENCY", "QUORUM")
    with pytest.raises(OperatorError, match="JAMES_LWT_SERIAL_CONSISTENCY='QUORUM' is not valid: expected SERIAL"):
        run(spark, cassandra_settings, "messages", f"nowhere_{uuid.uuid4().hex[:6]}")


# ---- James master's messageV3 (JAMES-4198) ------------------------------------------------------------------------

# The columns James master neither writes nor reads, and leaves out of the messageV3 it creates.
DROPPED_BY_JAMES_4198 = (
    "textuallinecount",
    "mediatype",
    "subtype",
    "contentid",
    "contentlocation",
    "contentdescription",
    "contenttransferencoding",
    "contentdispositiontype",
    "contentdispositionparameters",
    "contenttypeparameters",
    "contentmd5",
    "contentlanguage",
)


def test_the_attachment_check_runs_on_a_message_v3_without_the_columns_james_master_dropped(
    cql, cassandra_settings, spark, new_keyspace
):
    keyspace = new_keyspace("jamesmaster")
    james_platform(cql, cassandra_settings, keyspace, "3.9")
    columns = {
        row.column_name
        for row in cql.execute(
            "SELECT column_name FROM system_schema.columns WHERE keyspace_name = %s AND table_name = 'messagev3'",
            (keyspace,),
        )
    }
    assert set(DROPPED_BY_JAMES_4198) <= columns, "James 3.8.1 wrote them"
    cql.execute(f"ALTER TABLE {keyspace}.messagev3 DROP ({', '.join(DROPPED_BY_JAMES_4198)})")

    check = run(spark, cassandra_settings, "attachments", keyspace, "check")
    repair = run(spark, cassandra_settings, "attachments", keyspace, "repair")

    assert check["status"] == repair["status"] == "COMPLETED"
    assert check["processedMessageAttachmentEntries"] > 0
    assert check["inconsistencies"] == repair["inconsistencies"] == {"missing": 0, "outdated": 0, "orphan": 0}
