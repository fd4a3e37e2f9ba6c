"""Token-range scans: journalled in james_consistency.run_ranges, resumed by the next run, stopped at a window's end.

A run stopped part-way (its range budget or its window spent) fixes what its finished ranges decide (the missing and
outdated rows whose truth and projection partitions were both scanned), deletes nothing, and leaves its finished
ranges journalled; the next run of the same target and keyspace scans only the others and repairs everything.
"""

import json
import os
import re
import subprocess
import time
import uuid
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from james_consistency.cassandra.schema import create_schema
from james_consistency.engine.projection_scan import hashed_as_serialized
from james_consistency.engine.ranges import (
    in_ranges,
    partition_key,
    partition_token,
    range_index,
    read_ranges,
    token_ranges,
)
from james_consistency.engine.run import GateFailed, RunOptions
from james_consistency.engine.tables import read_table
from james_consistency.errors import OperatorError
from james_consistency.jobs.targets import run_target
from james_consistency.projections.messages import message_projection
from james_consistency.report.progress import read_progress
from support.james_platform import james_platform
from support.messages import break_every_kind, insert, message, platform, projection, timeuuid, truth


def run(spark, settings, keyspace, mode="repair", **options):
    options.setdefault("max_destructive_share", 0.5)
    return run_target(spark, settings, RunOptions(target="messages", keyspace=keyspace, mode=mode, **options))


def journal(cql, keyspace):
    rows = cql.execute(
        "SELECT table_name, range_index, rows, finished_at FROM james_consistency.run_ranges "
        "WHERE target = 'messages' AND keyspace_name = %s",
        (keyspace,),
    )
    return [row for row in rows if row.table_name is not None]


def kept_columns(spark, cql, keyspace) -> dict[str, list[str]]:
    """The columns of the rows the journalled cycle keeps in its work folder, per table."""
    work_dir = (
        cql.execute(
            "SELECT work_dir FROM james_consistency.run_ranges "
            "WHERE target = 'messages' AND keyspace_name = %s LIMIT 1",
            (keyspace,),
        )
        .one()
        .work_dir
    )
    folders = sorted(Path(work_dir, "tables").iterdir())
    return {folder.name.split("-")[0]: spark.read.parquet(str(folder)).columns for folder in folders}


@pytest.mark.parametrize("generation", ["3.9", "3.5"])
def test_a_ranged_repair_repairs_like_a_single_scan(cql, cassandra_settings, spark, new_keyspace, generation):
    keyspace = new_keyspace("ranged")
    create_schema(cql, keyspace, generation)
    found = break_every_kind(cql, keyspace, generation, platform(cql, keyspace, generation))

    report = run(spark, cassandra_settings, keyspace, ranges=8)

    assert report["status"] == "COMPLETED"
    assert report["inconsistencies"] == found
    assert report["processedImapUidEntries"] == 30
    assert (report["ranges"]["done"], report["ranges"]["total"], report["ranges"]["resumed"]) == (16, 16, False)
    assert projection(cql, keyspace) == truth(cql, keyspace)
    assert journal(cql, keyspace) == [], "a finished cycle leaves nothing in the journal"


def test_a_stopped_run_is_resumed_by_the_next_one(cql, cassandra_settings, spark, new_keyspace, tmp_path):
    keyspace = new_keyspace("resumed")
    create_schema(cql, keyspace, "3.9")
    found = break_every_kind(cql, keyspace, "3.9", platform(cql, keyspace, "3.9"))
    projection_before = projection(cql, keyspace)
    published = tmp_path / "stopped.progress.json"

    stopped = run(spark, cassandra_settings, keyspace, ranges=8, max_ranges=6, progress_file=str(published))

    assert stopped["status"] == "WINDOW_ENDED"
    assert stopped["windowEnded"] == "window ended, 10 ranges left"
    assert (stopped["ranges"]["done"], stopped["ranges"]["scannedByThisRun"]) == (6, 6)
    assert stopped["removedMessageIdEntries"] == 0, "an orphan's truth may be in a range not scanned yet"
    assert set(projection(cql, keyspace)) >= set(projection_before), "a stopped scan deletes nothing"
    kept = journal(cql, keyspace)
    assert len(kept) == 6 and all(row.finished_at for row in kept)
    # Lockstep: a batch of ranges of the truth, then the same ranges of the projection (4 = 2 x local[2]'s cores).
    tables = {}
    for row in kept:
        tables.setdefault(row.table_name.split("-")[0], set()).add(row.range_index)
    assert tables == {"imapuidtable": {0, 1, 2, 3}, "messageidtable": {0, 1}}
    fourth_range_end = token_ranges(8)[3][1]
    in_four_ranges = cql.execute(
        f"SELECT count(*) FROM {keyspace}.imapuidtable WHERE token(messageid) <= %s", (fourth_range_end,)
    ).one()[0]
    assert sum(row.rows for row in kept if row.table_name.startswith("imapuidtable")) == in_four_ranges
    # What a watcher of the run saw last: the ranges done of the ring, the rows read, a rate; the run past its scan.
    progress = read_progress(published)
    assert (progress["runId"], progress["target"], progress["keyspace"]) == (stopped["runId"], "messages", keyspace)
    assert progress["ranges"] == {"done": 6, "total": 16, "scannedByThisRun": 6}
    assert progress["rowsScanned"] == sum(row.rows for row in kept) > 0
    assert progress["rowsPerSecond"] > 0
    assert progress["state"] == "running", "the job's process marks it ended, once the report is written"
    assert progress["stage"] == "summarize"

    resumed = run(spark, cassandra_settings, keyspace)  # no option: the journal's unfinished scan goes on

    assert resumed["status"] == "COMPLETED"
    assert resumed["ranges"]["resumed"] is True
    assert (resumed["ranges"]["done"], resumed["ranges"]["scannedByThisRun"]) == (16, 10)
    assert resumed["inconsistencies"] == found
    assert projection(cql, keyspace) == truth(cql, keyspace)
    assert journal(cql, keyspace) == []


def test_a_scan_refused_by_its_gate_is_not_resumed_once_the_truth_is_mended(
    cql, cassandra_settings, spark, new_keyspace
):
    keyspace = new_keyspace("rangedgate")
    create_schema(cql, keyspace, "3.9")
    rows = platform(cql, keyspace, "3.9", mailboxes=1, per_mailbox=4)
    bad = message("3.9", rows[0]["mailboxid"], 0, 8_000, modseq=None)
    insert(cql, keyspace, "imapuidtable", bad)

    with pytest.raises(GateFailed) as refused:
        run(spark, cassandra_settings, keyspace, mode="check", ranges=4)
    assert [(row["uid"], row["modseq"]) for row in refused.value.report["gates"][-1]["sample_rows"]] == [(0, None)]
    assert journal(cql, keyspace) == [], "the refused rows are not kept for the next run"

    cql.execute(
        f"DELETE FROM {keyspace}.imapuidtable WHERE messageid = %s AND mailboxid = %s AND uid = 0",
        (bad["messageid"], bad["mailboxid"]),
    )
    mended = run(spark, cassandra_settings, keyspace, mode="check", ranges=4)
    assert mended["status"] == "COMPLETED" and mended["ranges"]["resumed"] is False


def test_a_window_already_over_stops_before_any_range_and_fresh_starts_over(
    cql, cassandra_settings, spark, new_keyspace
):
    keyspace = new_keyspace("window")
    create_schema(cql, keyspace, "3.9")
    platform(cql, keyspace, "3.9", mailboxes=1, per_mailbox=4)

    ended = run(spark, cassandra_settings, keyspace, mode="check", ranges=4, until=time.time() - 1)
    assert ended["status"] == "WINDOW_ENDED" and ended["ranges"]["done"] == 0

    run(spark, cassandra_settings, keyspace, mode="check", ranges=4, max_ranges=2)
    with pytest.raises(OperatorError, match="in 4 ranges, not 6: run without --ranges to resume it, or with --fresh"):
        run(spark, cassandra_settings, keyspace, mode="check", ranges=6)
    fresh = run(spark, cassandra_settings, keyspace, mode="check", ranges=6, fresh=True)
    assert fresh["status"] == "COMPLETED"
    assert (fresh["ranges"]["done"], fresh["ranges"]["total"], fresh["ranges"]["resumed"]) == (12, 12, False)


@pytest.mark.end_to_end
def test_the_command_line_exits_6_when_the_window_ends_and_0_when_resumed(
    cql, cassandra_settings, new_keyspace, tmp_path
):
    keyspace = new_keyspace("rangescli")
    create_schema(cql, keyspace, "3.9")
    platform(cql, keyspace, "3.9", mailboxes=1, per_mailbox=4)

    command = ["james-consistency", "check", "messages", "--keyspace", keyspace, "--port", str(cassandra_settings.port)]

    def check(*options: str, terminal: bool = False) -> tuple[int, dict, str]:
        report = tmp_path / f"report-{len(options)}.json"
        arguments = [*command, "--report", str(report), *options]
        code, output = in_a_terminal(arguments) if terminal else piped(arguments)
        assert code in (0, 6), output[-2000:]
        return code, json.loads(report.read_text()), output

    code, stopped, on_terminal = check("--ranges", "4", "--max-ranges", "3", terminal=True)
    assert code == 6 and stopped["windowEnded"] == "window ended, 5 ranges left"
    # On a terminal, a progress bar while it ran: Spark starting, then the ranges once the scan published them.
    assert "\rstarting Spark   0%|" in on_terminal
    assert re.search(r"messages check: \w+ \(\d/5\)\s+\d+%\|.*\| \d/8 ranges", on_terminal), on_terminal[-2000:]
    code, resumed, quiet = check("--quiet")
    assert code == 0 and resumed["ranges"]["resumed"] is True and resumed["ranges"]["scannedByThisRun"] == 5
    assert quiet.splitlines()[0].startswith("messages check on"), "--quiet: the summary only"


def piped(arguments: list[str]) -> tuple[int, str]:
    result = subprocess.run(arguments, capture_output=True, text=True, timeout=300, env=os.environ)
    return result.returncode, result.stdout + result.stderr


def in_a_terminal(arguments: list[str]) -> tuple[int, str]:
    """The command run with a pseudo-terminal (24 x 120) as its standard output; what it wrote there."""
    import fcntl
    import pty
    import struct
    import termios

    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    process = subprocess.Popen(arguments, stdout=terminal, stderr=subprocess.STDOUT, env=os.environ)
    os.close(terminal)
    written = b""
    while True:
        try:
            chunk = os.read(controller, 4096)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        written += chunk
    os.close(controller)
    return process.wait(timeout=300), written.decode(errors="replace")


def test_a_window_that_ends_part_way_fixes_what_its_finished_ranges_decide(
    cql, cassandra_settings, spark, new_keyspace
):
    keyspace = new_keyspace("partway")
    create_schema(cql, keyspace, "3.9")
    rows = platform(cql, keyspace, "3.9", mailboxes=6, per_mailbox=5)
    mailboxes = sorted({row["mailboxid"] for row in rows})
    for mailbox in mailboxes:  # in every mailbox, uid 1 lost from the projection and an orphan at uid 900
        cql.execute(f"DELETE FROM {keyspace}.messageidtable WHERE mailboxid = %s AND uid = 1", (mailbox,))
        insert(cql, keyspace, "messageidtable", message("3.9", mailbox, 900, 90_000 + mailboxes.index(mailbox)))
    first_half_end = token_ranges(2)[0][1]
    token_of = dict(cql.execute(f"SELECT DISTINCT mailboxid, token(mailboxid) FROM {keyspace}.messageidtable").all())
    decided = {mailbox for mailbox in mailboxes if token_of[mailbox] <= first_half_end}
    assert 0 < len(decided) < len(mailboxes), "the fixture's mailboxes fall on both halves of the ring"

    # Both truth ranges, then the projection's first one: the budget of 3 ranges is spent.
    stopped = run(spark, cassandra_settings, keyspace, ranges=2, max_ranges=3)

    assert stopped["status"] == "WINDOW_ENDED" and stopped["windowEnded"] == "window ended, 1 ranges left"
    assert stopped["decidedByFinishedRanges"] is True
    assert stopped["inconsistencies"] == {"missing": len(decided), "outdated": 0, "orphan": 0}
    assert stopped["addedMessageIdEntries"] == len(decided) and stopped["removedMessageIdEntries"] == 0
    after = projection(cql, keyspace)
    assert {mailbox for mailbox in mailboxes if (mailbox, 1) in after} == decided
    assert all((mailbox, 900) in after for mailbox in mailboxes), "no orphan deleted before the ring is scanned"
    # What is kept for the next run: keys, a digest of the values, and the columns the candidates and the truth's
    # health figures read; not whole rows.
    assert kept_columns(spark, cql, keyspace) == {
        "imapuidtable": ["mailboxid", "uid", "messageid", "modseq", "__digest", "range_index"],
        "messageidtable": ["mailboxid", "uid", "messageid", "__digest", "range_index"],
    }

    resumed = run(spark, cassandra_settings, keyspace)

    assert resumed["status"] == "COMPLETED" and resumed["ranges"]["resumed"] is True
    assert resumed["addedMessageIdEntries"] == len(mailboxes) - len(decided)
    assert resumed["removedMessageIdEntries"] == len(mailboxes)
    assert resumed["alreadyConsistentOnRecheck"] == len(decided), "fixed last night, found again in the kept rows"
    assert projection(cql, keyspace) == truth(cql, keyspace)
    assert journal(cql, keyspace) == []


def test_counters_wait_for_the_whole_ring_when_the_window_ends(cql, cassandra_settings, spark, new_keyspace):
    keyspace = new_keyspace("partcount")
    create_schema(cql, keyspace, "3.9")
    platform(cql, keyspace, "3.9", mailboxes=2, per_mailbox=5)

    stopped = run_target(
        spark,
        cassandra_settings,
        RunOptions(target="counters", keyspace=keyspace, mode="repair", ranges=2, max_ranges=1),
    )

    assert stopped["status"] == "WINDOW_ENDED" and "decidedByFinishedRanges" not in stopped
    assert stopped["addedCounterEntries"] == 0 and stopped["updatedCounterEntries"] == 0
    assert cql.execute(f"SELECT count(*) FROM {keyspace}.mailboxcounters").one()[0] == 0


def rows_of(frame) -> list:
    """A frame's rows, comparable whatever their order; maps as sorted items and arrays sorted, as the diff compares
    them (the connector gives a set's elements in an order of its own, the Java driver in Cassandra's)."""

    def plain(value):
        if isinstance(value, dict):
            return sorted(((plain(key), plain(item)) for key, item in value.items()), key=repr)
        if isinstance(value, list):
            return sorted((plain(item) for item in value), key=repr)
        return value

    return sorted(([plain(value) for value in row] for row in frame.collect()), key=repr)


@pytest.mark.parametrize("generation", ["3.9", "3.5"])
def test_every_table_james_wrote_reads_the_same_in_token_ranges_as_through_the_connector(
    cql, cassandra_settings, spark, new_keyspace, generation
):
    """Every column of every table of a platform James wrote (uuids, sets, maps, timestamps, blobs, counters, static
    columns), read range by range by the ranged scan's reader, gives the connector's rows."""
    keyspace = new_keyspace("rangedread")
    james_platform(cql, cassandra_settings, keyspace, generation)
    tables = [
        row.table_name
        for row in cql.execute("SELECT table_name FROM system_schema.tables WHERE keyspace_name = %s", (keyspace,))
    ]
    compared = 0
    for table in tables:
        columns = cql.execute(
            "SELECT column_name FROM system_schema.columns WHERE keyspace_name = %s AND table_name = %s",
            (keyspace, table),
        )
        if cql.execute(f"SELECT * FROM {keyspace}.{table} LIMIT 1").one() is None:
            continue
        whole = read_table(spark, keyspace, table, tuple(row.column_name for row in columns))
        key = partition_key(cassandra_settings, keyspace, table)
        ranges = [(index, start, end) for index, (start, end) in enumerate(token_ranges(3))]

        in_ranges = read_ranges(spark, keyspace, table, whole.schema, key, ranges, "LOCAL_QUORUM")

        assert rows_of(in_ranges.drop("range_index")) == rows_of(whole), table
        compared += 1
    assert compared >= 12, f"only {compared} tables held rows"


KEYS = {
    "text": ("k text", ["k"], {"k": "text"}, ["'bob@domain.tld'", "'alice@domain.tld'", "'été@domain.tld'"]),
    "timeuuid": ("k timeuuid", ["k"], {"k": "timeuuid"}, ["d2177dd0-eaa2-11de-a572-001b779c76e3", "now()"]),
    "bigint": ("k bigint", ["k"], {"k": "bigint"}, ["42", "-7", "9223372036854775807"]),
    "int": ("k int", ["k"], {"k": "int"}, ["42", "-7"]),
    "composite": (
        "a text, b timeuuid",
        ["a", "b"],
        {"a": "text", "b": "timeuuid"},
        ["'x', d2177dd0-eaa2-11de-a572-001b779c76e3", "'bob', now()"],
    ),
}


def test_every_kind_of_partition_key_gets_the_token_cassandra_gives_it(cql, spark, new_keyspace):
    keyspace = new_keyspace("tokens")
    cql.execute(f"CREATE KEYSPACE {keyspace} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}")
    for kind, (columns, key, cql_types, values) in KEYS.items():
        cql.execute(f"CREATE TABLE {keyspace}.{kind} ({columns}, n int, PRIMARY KEY (({', '.join(key)})))")
        for value in values:
            cql.execute(f"INSERT INTO {keyspace}.{kind} ({', '.join(key)}, n) VALUES ({value}, 1)")
        by_cassandra = {
            tuple(str(row[index]) for index in range(len(key))): row[-1]
            for row in cql.execute(f"SELECT {', '.join(key)}, token({', '.join(key)}) FROM {keyspace}.{kind}")
        }

        scanned = read_table(spark, keyspace, kind, (*key, "n"))
        ours = scanned.select(*key, partition_token(spark, cql_types).alias("token")).collect()

        assert {tuple(str(row[column]) for column in key): row["token"] for row in ours} == by_cassandra, kind
        assert len(by_cassandra) == len(values), kind


def test_only_the_rows_of_the_finished_ranges_are_kept(spark):
    names = [f"user{number}@domain.tld" for number in range(40)]
    frame = spark.createDataFrame([(name, 1) for name in names] + [(None, 0)], "username string, n int")
    tokens = frame.select("username", partition_token(spark, {"username": "text"}).alias("token")).collect()
    index_of = {row["username"]: range_index(8, row["token"]) for row in tokens if row["username"]}
    finished = {0, 1, 2, 5}  # two runs of consecutive ranges

    kept = in_ranges(frame, {"username": "text"}, 8, finished).collect()

    expected = sorted(name for name, index in index_of.items() if index in finished)
    assert sorted(row["username"] for row in kept) == expected
    assert 0 < len(expected) < len(names)
    assert in_ranges(frame, {"username": "text"}, 8, set()).count() == 0
    with pytest.raises(OperatorError, match="no token for a partition key of type blob"):
        in_ranges(frame, {"username": "blob"}, 8, finished)


def changed(value, number: int):
    """Another value of the same type."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, uuid.UUID):
        return timeuuid(90_000 + number)
    if isinstance(value, datetime):
        return value + timedelta(seconds=1)
    if isinstance(value, str):
        return value + "x"
    return {"$Changed"} if not value else None  # a set of user flags (None: none)


@pytest.mark.parametrize("generation", ["3.9", "3.5"])
def test_a_ranged_check_finds_a_change_of_any_one_value_column(
    cql, cassandra_settings, spark, new_keyspace, generation
):
    keyspace = new_keyspace("onecolumn")
    create_schema(cql, keyspace, generation)
    spec = message_projection(generation)
    rows = platform(cql, keyspace, generation, mailboxes=1, per_mailbox=len(spec.value_columns) + 2)
    for row, column in zip(rows, spec.value_columns, strict=False):
        cql.execute(
            f"UPDATE {keyspace}.messageidtable SET {column} = %s WHERE mailboxid = %s AND uid = %s",
            (changed(row[column], row["uid"]), row["mailboxid"], row["uid"]),
        )
    unchanged = rows[len(spec.value_columns)]
    cql.execute(  # an empty set is stored as no value, like the truth's null: not a difference
        f"UPDATE {keyspace}.messageidtable SET userflags = {{}} WHERE mailboxid = %s AND uid = %s",
        (unchanged["mailboxid"], unchanged["uid"]),
    )

    report = run(spark, cassandra_settings, keyspace, mode="check", ranges=4)

    assert hashed_as_serialized(cassandra_settings, keyspace, spec) == spec.value_columns
    assert report["inconsistencies"] == {"missing": 0, "outdated": len(spec.value_columns), "orphan": 0}


def test_tables_whose_value_types_differ_are_digested_from_converted_values(cql, cassandra_settings, new_keyspace):
    keyspace = new_keyspace("othertypes")
    create_schema(cql, keyspace, "3.5")
    spec = message_projection("3.5")
    cql.execute(f"DROP TABLE {keyspace}.messageidtable")
    cql.execute(
        f"CREATE TABLE {keyspace}.messageidtable (mailboxid timeuuid, uid bigint, messageid timeuuid, modseq int, "
        "flaganswered boolean, flagdeleted boolean, flagdraft boolean, flagflagged boolean, flagrecent boolean, "
        "flagseen boolean, flaguser boolean, userflags set<text>, PRIMARY KEY (mailboxid, uid))"
    )

    assert hashed_as_serialized(cassandra_settings, keyspace, spec) == ()
