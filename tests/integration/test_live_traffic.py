"""Repairs under live traffic: a James-like writer (its own OS process, James's write order, partial failures)
writes while the message, ACL and index repairs run. No user write is undone, the truth is written by the writer
only, and a second repair with the writer stopped leaves nothing to fix."""

import json
import multiprocessing
import time
import uuid

import pytest
from james_consistency.cassandra.cql import close, connect
from james_consistency.cassandra.schema import create_schema
from james_consistency.engine.run import RunOptions
from james_consistency.jobs.targets import run_target
from james_consistency_kit.faults import inject
from james_consistency_kit.seed import seed_platform
from james_consistency_kit.traffic import MESSAGE_COLUMNS, TrafficOptions, plain, read_log, run_writer
from support import messages
from support.traffic import read_projections, undone_writes

pytestmark = pytest.mark.end_to_end

TARGETS = ("messages", "acl", "aclv2", "deleted", "unseen", "recent", "flags")
FAULTS = (
    "projection-missing",
    "projection-stale-flags",
    "projection-orphan",
    "acl-user-missing",
    "acl-user-wrong-rights",
    "aclv2-wrong",
    "deleted-missing",
    "unseen-stale",
    "recent-missing",
    "applicable-flag-missing",
)


def read_truth(cql, keyspace) -> tuple[dict, dict]:
    """imapUidTable and eventStore as plain values, and the WRITETIME of each row."""
    rows, written = {}, {}
    for row in cql.execute(
        f"SELECT {', '.join(MESSAGE_COLUMNS)}, WRITETIME(modseq) AS written FROM {keyspace}.imapuidtable"
    ):
        values = row._asdict()
        key = ("imapuidtable", str(values["messageid"]), str(values["mailboxid"]), str(values["uid"]))
        written[key] = values.pop("written")
        rows[key] = {name: plain(value) for name, value in values.items()}
    for row in cql.execute(
        f"SELECT aggregateid, eventid, event, WRITETIME(event) AS written FROM {keyspace}.eventstore"
    ):
        key = ("eventstore", row.aggregateid, str(row.eventid))
        written[key] = row.written
        rows[key] = {"event": row.event}
    return rows, written


def truth_key(entry: dict) -> tuple:
    key = entry["key"]
    if entry["table"] == "imapuidtable":
        return ("imapuidtable", key["messageid"], key["mailboxid"], str(key["uid"]))
    return ("eventstore", key["aggregateid"], str(key["eventid"]))


def test_projection_rows_without_message_id_are_repaired(cql, cassandra_settings, spark, new_keyspace):
    """James's flag update is an UPDATE of messageIdTable's flag columns: where the row was missing (an add that
    failed after the truth write) it creates a row without messageId. Its re-check used to query the truth with a
    null messageId and fail on every run."""
    keyspace = new_keyspace("nullid")
    session = connect(cassandra_settings)
    try:
        create_schema(session, keyspace, "3.9")
    finally:
        close(session)
    mailbox = messages.timeuuid(1)
    kept = messages.message("3.9", mailbox, 1, 1)
    messages.insert(cql, keyspace, "imapuidtable", kept)
    for uid in (1, 2):  # uid 1: its truth exists (a partial row to complete); uid 2: none (an orphan to delete)
        cql.execute(
            f"UPDATE {keyspace}.messageidtable SET flagseen = true, modseq = 9 WHERE mailboxid = %s AND uid = %s",
            (mailbox, uid),
        )
        cql.execute(f"INSERT INTO {keyspace}.firstunseen (mailboxid, uid) VALUES (%s, %s)", (mailbox, uid))

    for target in ("messages", "unseen"):
        report = run_target(
            spark, cassandra_settings, RunOptions(target, keyspace, mode="repair", allow_destructive=True)
        )
        assert report["status"] == "COMPLETED", report["errors"]
    assert messages.projection(cql, keyspace) == messages.truth(cql, keyspace)
    unseen = {r.uid for r in cql.execute(f"SELECT uid FROM {keyspace}.firstunseen")}
    assert unseen == ({1} if not kept["flagseen"] else set())


def writer_process(settings, options, stop):
    run_writer(settings, options, stop)


def test_repairs_under_live_traffic_undo_no_user_write(cql, cassandra_settings, spark, new_keyspace, tmp_path):
    keyspace = new_keyspace("traffic")
    seed_platform(
        cassandra_settings,
        keyspace=keyspace,
        users=4,
        mailboxes_per_user=3,
        messages_per_mailbox=25,
        generation="3.9",
        spark=spark,
    )
    injected = sum(
        inject(cassandra_settings, keyspace=keyspace, kind=kind, rate=0.1, manifest_path=str(tmp_path / kind))["count"]
        for kind in FAULTS
    )
    truth_before, written_before = read_truth(cql, keyspace)

    log_path = tmp_path / "writer.jsonl"
    context = multiprocessing.get_context("spawn")
    stop = context.Event()
    options = TrafficOptions(keyspace=keyspace, log_path=str(log_path), partial_share=0.15, seconds=240)
    writer = context.Process(target=writer_process, args=(cassandra_settings, options, stop), daemon=True)
    writer.start()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not log_path.exists() or len(log_path.read_text().splitlines()) < 3):
            time.sleep(0.2)
        assert log_path.exists(), "the writer did not start"
        repairs_started = time.time_ns() // 1000
        first = {}
        for target in TARGETS:
            first[target] = run_target(
                spark,
                cassandra_settings,
                RunOptions(target, keyspace, mode="repair", allow_destructive=True, recheck_delay_seconds=0.5),
            )
        repairs_finished = time.time_ns() // 1000
    finally:
        stop.set()
        writer.join(60)
    assert writer.exitcode == 0, "the writer failed"

    log = read_log(log_path)
    summary = json.loads(log_path.read_text().splitlines()[-1])["summary"]
    during = [e for e in log if repairs_started <= e["started"] <= repairs_finished]
    projections = read_projections(cql, keyspace)
    undone = undone_writes(log, projections)

    # The truth holds exactly the seed plus what the writer wrote, each row written when the writer wrote it.
    expected_truth = dict(truth_before)
    windows = {}
    for entry in log:
        for change in entry["truth"]:
            key = truth_key(change)
            windows[key] = change["window"]
            if change["row"] is None:
                expected_truth.pop(key, None)
            else:
                expected_truth[key] = change["row"] if key[0] == "imapuidtable" else {"event": change["row"]["event"]}
    truth_after, written_after = read_truth(cql, keyspace)
    wrong_truth = sorted(
        k for k in set(truth_after) | set(expected_truth) if truth_after.get(k) != expected_truth.get(k)
    )
    # A lightweight transaction's write carries its ballot's time, in whole milliseconds.
    foreign_writes = [
        key
        for key, written in written_after.items()
        if (key in windows and not windows[key][0] // 1000 * 1000 <= written <= windows[key][1])
        or (key not in windows and written != written_before.get(key))
    ]

    fixed_during = {
        target: sum(report.get(field, 0) for field in report if field.startswith(("added", "updated", "removed")))
        for target, report in first.items()
    }
    print(
        f"\nlive traffic: {injected} injected inconsistencies; writer made {summary['operations']} operations "
        f"({summary['partial']} simulated partial failures), {len(during)} during the repairs "
        f"({sum(not e['partial'] for e in during)} complete, "
        f"{sum(len(e['projections']) for e in during if not e['partial'])} projection writes); "
        f"undone: {len(undone)}; truth rows differing from seed + writer log: {len(wrong_truth)}; "
        f"truth rows written outside the writer's windows: {len(foreign_writes)}; repairs fixed {fixed_during} in "
        f"{(repairs_finished - repairs_started) / 1e6:.1f}s"
    )
    assert summary["failed"] == 0
    assert len(during) >= 20, "the writer must write while the repairs run"
    assert undone == [], undone[:5]
    assert wrong_truth == [], [(k, truth_after.get(k), expected_truth.get(k)) for k in wrong_truth[:3]]
    assert foreign_writes == [], [
        (k, written_after[k], windows.get(k), written_before.get(k)) for k in foreign_writes[:5]
    ]

    second = {}
    for target in TARGETS:
        report = run_target(
            spark, cassandra_settings, RunOptions(target, keyspace, mode="repair", allow_destructive=True)
        )
        second[target] = {k: report.get(k) for k in ("status", "inconsistencies", "failedCount", "outcomes")}
        second[target]["errors"] = report.get("errors", [])[:3]
    print(f"second repair: {json.dumps(second, default=str)}")
    left = {
        target: run_target(spark, cassandra_settings, RunOptions(target, keyspace, mode="check"))["inconsistencies"]
        for target in TARGETS
    }
    print(f"after a second repair with the writer stopped: {left}")
    if any(sum(found.values()) for found in left.values()):
        for target in ("messages", "deleted"):
            report = run_target(
                spark, cassandra_settings, RunOptions(target, keyspace, mode="verify", gates_enabled=False)
            )
            print(target, "remaining:", json.dumps(report.get("remainingSample", [])[:5], default=str))
            for sample in report.get("remainingSample", [])[:3]:
                mailbox, uid = uuid.UUID(sample["mailboxId"]), sample["uid"]
                for table in ("imapuidtable", "messageidtable"):
                    where = "mailboxid = %s AND uid = %s" + (" ALLOW FILTERING" if table == "imapuidtable" else "")
                    rows = [
                        r._asdict()
                        for r in cql.execute(f"SELECT * FROM {keyspace}.{table} WHERE {where}", (mailbox, uid))
                    ]
                    print("  ", table, rows)
    assert all(sum(found.values()) == 0 for found in left.values()), left
