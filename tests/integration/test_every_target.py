"""What every repair target shares: a consistent keyspace is left untouched, and a user's change made between the
scan and the fix is not undone (the index and ACL stories; messages, counters and flags have their own)."""

import json
import threading
import time
import uuid

import pytest
from james_consistency.cassandra.cql import close, connect
from james_consistency.engine.run import RunOptions
from james_consistency.jobs.targets import run_target
from james_consistency.projections import TARGETS
from james_consistency_kit.faults import inject
from support.james_platform import PROJECTION_TABLES, james_platform


def contents(cql, keyspace, table) -> list:
    return sorted(repr(tuple(row)) for row in cql.execute(f"SELECT * FROM {keyspace}.{table}"))


@pytest.mark.parametrize("generation", ["3.9", "3.5"])
def test_a_consistent_keyspace_is_left_untouched_by_every_target(
    cql, cassandra_settings, spark, new_keyspace, generation
):
    keyspace = new_keyspace("clean")
    james_platform(cql, cassandra_settings, keyspace, generation)
    before = {table: contents(cql, keyspace, table) for table in PROJECTION_TABLES[generation]}

    reports = {
        target: run_target(spark, cassandra_settings, RunOptions(target, keyspace, mode="repair")) for target in TARGETS
    }

    for target, report in reports.items():
        if target == "aclv2" and generation == "3.5":
            assert report["status"] == "NOT_APPLICABLE" and "3.9" in report["reason"]
            continue
        assert report["status"] == "COMPLETED", target
        assert sum(report["inconsistencies"].values()) == 0, (target, report["inconsistencies"])
    after = {table: contents(cql, keyspace, table) for table in PROJECTION_TABLES[generation]}
    assert after == before


def _seed_small(cql, settings, keyspace):
    james_platform(cql, settings, keyspace, "3.9")


def _when_candidates_are_written(run_dir, action) -> threading.Thread:
    """Runs `action` as a user would, once the scan has produced its candidates and before the delayed re-check."""

    def wait_then_act():
        marker = run_dir / "candidates" / "_SUCCESS"
        while not marker.exists():
            time.sleep(0.05)
        action()

    thread = threading.Thread(target=wait_then_act, daemon=True)
    thread.start()
    return thread


def test_a_message_undeleted_during_the_run_is_not_put_back_in_messageDeleted(
    cql, cassandra_settings, spark, new_keyspace, tmp_path
):
    keyspace = new_keyspace("race_idx")
    _seed_small(cql, cassandra_settings, keyspace)
    broken = inject(
        cassandra_settings, keyspace=keyspace, kind="deleted-missing", rate=0.5, manifest_path=str(tmp_path / "d")
    )
    undeleted = broken["rows"][0]
    mailbox, uid = uuid.UUID(undeleted["mailboxId"]), undeleted["uid"]
    message_id = cql.execute(
        f"SELECT messageid FROM {keyspace}.messageidtable WHERE mailboxid = %s AND uid = %s", (mailbox, uid)
    ).one()[0]

    def user_undeletes():  # IMAP STORE -FLAGS (\Deleted): truth first, then the projection; the index is current
        cql.execute(
            f"UPDATE {keyspace}.imapuidtable SET flagdeleted = false WHERE messageid = %s AND mailboxid = %s "
            "AND uid = %s",
            (message_id, mailbox, uid),
        )
        cql.execute(
            f"UPDATE {keyspace}.messageidtable SET flagdeleted = false WHERE mailboxid = %s AND uid = %s",
            (mailbox, uid),
        )

    user = _when_candidates_are_written(tmp_path / "run", user_undeletes)
    report = run_target(
        spark,
        cassandra_settings,
        RunOptions("deleted", keyspace, mode="repair", recheck_delay_seconds=4, run_dir=str(tmp_path / "run")),
    )
    user.join(timeout=5)

    deleted = {(r.mailboxid, r.uid) for r in cql.execute(f"SELECT * FROM {keyspace}.messagedeleted")}
    assert (mailbox, uid) not in deleted, "the user's undelete is not undone"
    assert report["alreadyConsistentOnRecheck"] == 1
    assert report["addedEntries"] == broken["count"] - 1
    truth = {(m.mailboxid, m.uid) for m in cql.execute(f"SELECT * FROM {keyspace}.imapuidtable") if m.flagdeleted}
    assert deleted == truth


def test_a_right_revoked_during_the_run_is_not_restored(cql, cassandra_settings, spark, new_keyspace, tmp_path):
    keyspace = new_keyspace("race_acl")
    james_platform(cql, cassandra_settings, keyspace, "3.9")
    broken = inject(
        cassandra_settings, keyspace=keyspace, kind="acl-user-missing", rate=0.5, manifest_path=str(tmp_path / "a")
    )
    revoked = broken["rows"][0]
    user_name, mailbox = revoked["userName"], revoked["mailboxId"]

    def admin_revokes():  # a new acl-updated event without the user, then the projection (nothing to delete there)
        session = connect(cassandra_settings, keyspace)
        try:
            events = list(
                session.execute(f"SELECT eventid, event FROM {keyspace}.eventstore WHERE aggregateid = %s", (mailbox,))
            )
            last = max(events, key=lambda row: row.eventid)
            entries = json.loads(last.event)["aclDiff"]["newAcl"]["entries"]
            remaining = {key: rights for key, rights in entries.items() if key != user_name}
            event = {
                "eventId": last.eventid + 1,
                "aggregateKey": mailbox,
                "type": "acl-updated",
                "aclDiff": {"oldAcl": {"entries": entries}, "newAcl": {"entries": remaining}},
            }
            session.execute(
                f"INSERT INTO {keyspace}.eventstore (aggregateid, eventid, event) VALUES (%s, %s, %s)",
                (mailbox, last.eventid + 1, json.dumps(event)),
            )
        finally:
            close(session)

    admin = _when_candidates_are_written(tmp_path / "run", admin_revokes)
    report = run_target(
        spark,
        cassandra_settings,
        RunOptions("acl", keyspace, mode="repair", recheck_delay_seconds=4, run_dir=str(tmp_path / "run")),
    )
    admin.join(timeout=5)

    rows = {(r.username, str(r.mailboxid)) for r in cql.execute(f"SELECT * FROM {keyspace}.usermailboxacl")}
    assert (user_name, mailbox) not in rows, "the revoked right is not given back"
    assert report["status"] == "COMPLETED" and report["alreadyConsistentOnRecheck"] == 1
    restored = {(row["userName"], row["mailboxId"]) for row in broken["rows"][1:]}
    assert restored <= rows
