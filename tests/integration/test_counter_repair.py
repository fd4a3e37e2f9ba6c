"""mailboxCounters and the users' current quotas recomputed from the truth by the shared engine.

Expected values are computed here from the truth with plain CQL (imapUidTable, mailbox, message sizes), not with
the project's code.
"""

import threading
import time
import uuid
from collections import Counter

import pytest
from cassandra.util import uuid_from_time
from james_consistency.engine.run import GateFailed, RunOptions
from james_consistency.jobs.targets import run_target
from james_consistency_kit.faults import inject
from james_consistency_kit.seed import seed_platform
from support.james_platform import james_platform
from support.messages import insert, message


def seeded(cql, settings, keyspace, generation, writer="james"):
    """A platform James wrote (3.8.1 for the 3.9 tables, 3.5.0 for 3.5); the project's seeder only for what no James
    release on Maven Central writes: 3.9's quotaCurrentValue (James 3.6 to 3.8 keep quotas in currentQuota)."""
    if writer == "james":
        james_platform(cql, settings, keyspace, generation)
    else:
        seed_platform(
            settings, keyspace=keyspace, users=3, mailboxes_per_user=3, messages_per_mailbox=20, generation=generation
        )


def quota_table(cql, keyspace) -> str:
    tables = {
        row.table_name
        for row in cql.execute("SELECT table_name FROM system_schema.tables WHERE keyspace_name = %s", (keyspace,))
    }
    return "quotacurrentvalue" if "quotacurrentvalue" in tables else "currentquota"


def messages_in(cql, keyspace, mailbox) -> int:
    return sum(1 for row in cql.execute(f"SELECT mailboxid FROM {keyspace}.imapuidtable") if row.mailboxid == mailbox)


def truth_counters(cql, keyspace) -> dict:
    """mailbox id -> (count, unseen) for every mailbox of the mailbox table (zero for an empty one) and every mailbox
    that has messages (its row may be lost)."""
    counts = {row.id: [0, 0] for row in cql.execute(f"SELECT id FROM {keyspace}.mailbox")}
    for row in cql.execute(f"SELECT mailboxid, flagseen FROM {keyspace}.imapuidtable"):
        counts.setdefault(row.mailboxid, [0, 0])
        counts[row.mailboxid][0] += 1
        counts[row.mailboxid][1] += 0 if row.flagseen else 1
    return {mailbox: tuple(values) for mailbox, values in counts.items()}


def counters(cql, keyspace) -> dict:
    return {r.mailboxid: (r.count, r.unseen) for r in cql.execute(f"SELECT * FROM {keyspace}.mailboxcounters")}


def as_read(expected: dict) -> dict:
    """What reading mailboxCounters gives when it matches `expected`: a mailbox with no row reads as 0/0."""
    return {mailbox: values for mailbox, values in expected.items() if values != (0, 0)}


def truth_usage(cql, keyspace, generation) -> dict:
    """quota root -> (messages, octets) over the mailboxes each user owns (by the mailbox row, or by the path
    registration of a mailbox whose row is lost), zero for a user with no message."""
    path_table = "mailboxpathv3" if generation == "3.9" else "mailboxpathv2"
    owner = {
        row.mailboxid: f"{row.namespace}&{row.user}"
        for row in cql.execute(f"SELECT namespace, user, mailboxid FROM {keyspace}.{path_table}")
    }
    owner |= {
        row.id: f"{row.mailboxbase.namespace}&{row.mailboxbase.user}"
        for row in cql.execute(f"SELECT id, mailboxbase FROM {keyspace}.mailbox")
    }
    sizes = {}
    if generation == "3.5":
        sizes = {r.messageid: r.fullcontentoctets for r in cql.execute(f"SELECT * FROM {keyspace}.messagev2")}
    usage = {root: [0, 0] for root in owner.values()}
    for row in cql.execute(f"SELECT * FROM {keyspace}.imapuidtable"):
        if row.mailboxid in owner:
            size = row.fullcontentoctets if generation == "3.9" else sizes[row.messageid]
            usage[owner[row.mailboxid]][0] += 1
            usage[owner[row.mailboxid]][1] += size
    return {root: tuple(values) for root, values in usage.items()}


def quota_usage(cql, keyspace) -> dict:
    if quota_table(cql, keyspace) == "currentquota":
        return {r.quotaroot: (r.messagecount, r.storage) for r in cql.execute(f"SELECT * FROM {keyspace}.currentquota")}
    values = {}
    for row in cql.execute(
        f"SELECT * FROM {keyspace}.quotacurrentvalue WHERE quotacomponent = 'MAILBOX' ALLOW FILTERING"
    ):
        values.setdefault(row.identifier, [0, 0])[0 if row.quotatype == "count" else 1] = row.currentvalue
    return {root: tuple(value) for root, value in values.items()}


def add_empty_mailbox_with_wrong_counters(cql, keyspace, generation, user) -> uuid.UUID:
    """A mailbox whose messages were all deleted but whose decrements were lost."""
    mailbox = uuid_from_time(time.time())
    cql.execute(
        f"INSERT INTO {keyspace}.mailbox (id, mailboxbase, name, uidvalidity) "
        "VALUES (%s, {namespace: '#private', user: %s}, 'Archive', 42)",
        (mailbox, user),
    )
    path_table = "mailboxpathv3" if generation == "3.9" else "mailboxpathv2"
    cql.execute(
        f"INSERT INTO {keyspace}.{path_table} (namespace, user, mailboxname, mailboxid) "
        "VALUES ('#private', %s, 'Archive', %s)",
        (user, mailbox),
    )
    cql.execute(
        f"UPDATE {keyspace}.mailboxcounters SET count = count + 3, unseen = unseen + 1 WHERE mailboxid = %s", (mailbox,)
    )
    return mailbox


def lose_a_mailbox_row(cql, keyspace) -> uuid.UUID:
    """An orphan path: the mailbox row is gone, its path registration and its messages are still there (the offline
    mailbox repair re-creates the row). Its counter and its owner's quota must still count its messages."""
    mailbox = next(iter(cql.execute(f"SELECT mailboxid FROM {keyspace}.imapuidtable"))).mailboxid
    cql.execute(f"DELETE FROM {keyspace}.mailbox WHERE id = %s", (mailbox,))
    return mailbox


@pytest.mark.parametrize("generation", ["3.9", "3.5"])
def test_mailbox_counters_are_recomputed_from_the_truth(
    cql, cassandra_settings, spark, new_keyspace, tmp_path, generation
):
    keyspace = new_keyspace("counters")
    seeded(cql, cassandra_settings, keyspace, generation)
    broken = inject(
        cassandra_settings, keyspace=keyspace, kind="counters-wrong", rate=0.5, manifest_path=str(tmp_path / "c")
    )
    user = next(iter(cql.execute(f"SELECT mailboxbase FROM {keyspace}.mailbox"))).mailboxbase.user
    emptied = add_empty_mailbox_with_wrong_counters(cql, keyspace, generation, user)
    gone = uuid_from_time(time.time())  # counters of a mailbox deleted since: removed
    cql.execute(f"UPDATE {keyspace}.mailboxcounters SET count = count + 5 WHERE mailboxid = %s", (gone,))
    seeded_mailboxes = sum(1 for _ in cql.execute(f"SELECT id FROM {keyspace}.mailbox"))
    rowless = lose_a_mailbox_row(cql, keyspace)
    before = counters(cql, keyspace)

    check = run_target(spark, cassandra_settings, RunOptions("counters", keyspace, mode="check"))

    assert check["inconsistencies"] == {"missing": 0, "outdated": broken["count"] + 1, "orphan": 1}
    assert counters(cql, keyspace) == before, "the dry run wrote nothing"

    repair = run_target(
        spark, cassandra_settings, RunOptions("counters", keyspace, mode="repair", allow_destructive=True)
    )

    expected = truth_counters(cql, keyspace)
    assert expected[emptied] == (0, 0) and expected[rowless][0] == messages_in(cql, keyspace, rowless) > 0
    assert counters(cql, keyspace) == as_read(expected) | {emptied: (0, 0)}
    assert repair["status"] == "COMPLETED"
    assert repair["processedMailboxes"] == len(expected) == seeded_mailboxes, (
        "the row-less one counted, the emptied too"
    )
    assert repair["failedMailboxes"] == []
    assert repair["updatedCounterEntries"] == broken["count"] + 1 and repair["removedCounterEntries"] == 1
    assert "not concurrency-safe" in repair["concurrencyNote"]
    again = run_target(spark, cassandra_settings, RunOptions("counters", keyspace, mode="repair"))
    assert sum(again["inconsistencies"].values()) == 0


@pytest.mark.parametrize(
    ("generation", "writer"), [("3.9", "james"), ("3.9", "seeder"), ("3.5", "james")], ids=["3.8.1", "3.9", "3.5.0"]
)
def test_quotas_are_recomputed_and_other_components_left_alone(
    cql, cassandra_settings, spark, new_keyspace, tmp_path, generation, writer
):
    keyspace = new_keyspace("quotas")
    seeded(cql, cassandra_settings, keyspace, generation, writer)
    table = quota_table(cql, keyspace)
    broken = inject(
        cassandra_settings, keyspace=keyspace, kind="quota-wrong", rate=0.7, manifest_path=str(tmp_path / "q")
    )
    wrong_roots = {row["quotaRoot"] for row in broken["rows"]}
    assert wrong_roots
    lose_a_mailbox_row(cql, keyspace)
    # A user with mailboxes but no message left, whose usage was never decremented.
    cql.execute(
        f"INSERT INTO {keyspace}.mailbox (id, mailboxbase, name, uidvalidity) "
        "VALUES (%s, {namespace: '#private', user: 'nomail@domain.tld'}, 'INBOX', 1)",
        (uuid_from_time(time.time()),),
    )
    if table == "quotacurrentvalue":
        cql.execute(
            f"UPDATE {keyspace}.quotacurrentvalue SET currentvalue = currentvalue + 12 "
            "WHERE identifier = '#private&nomail@domain.tld' AND quotacomponent = 'MAILBOX' AND quotatype = 'count'"
        )
        sieve = "WHERE identifier = '#private&nomail@domain.tld' AND quotacomponent = 'SIEVE' AND quotatype = 'size'"
        cql.execute(f"UPDATE {keyspace}.quotacurrentvalue SET currentvalue = currentvalue + 999 {sieve}")
    else:
        cql.execute(
            f"UPDATE {keyspace}.currentquota SET messagecount = messagecount + 12 "
            "WHERE quotaroot = '#private&nomail@domain.tld'"
        )

    repair = run_target(
        spark, cassandra_settings, RunOptions("quotas", keyspace, mode="repair", allow_destructive=True)
    )

    expected = truth_usage(cql, keyspace, generation)
    assert expected["#private&nomail@domain.tld"] == (0, 0)
    assert quota_usage(cql, keyspace) == expected
    if table == "quotacurrentvalue":
        assert cql.execute(f"SELECT currentvalue FROM {keyspace}.quotacurrentvalue {sieve}").one().currentvalue == 999
    assert repair["status"] == "COMPLETED"
    [component] = repair["recomputeSingleQuotaComponentResults"]
    assert component == {"quotaComponent": "MAILBOX", "processedIdentifierCount": 4, "failedIdentifiers": []}
    again = run_target(spark, cassandra_settings, RunOptions("quotas", keyspace, mode="check"))
    assert sum(again["inconsistencies"].values()) == 0


def test_mail_delivered_during_the_run_is_counted(cql, cassandra_settings, spark, new_keyspace, tmp_path):
    """James delivers a message (truth, projection, counter increment) after the scan, before the re-check: the
    repaired counter counts it, and the increment James made is not undone."""
    keyspace = new_keyspace("race")
    seeded(cql, cassandra_settings, keyspace, "3.9")
    inject(cassandra_settings, keyspace=keyspace, kind="counters-wrong", rate=1.0, manifest_path=str(tmp_path / "c"))
    mailbox = next(iter(cql.execute(f"SELECT id FROM {keyspace}.mailbox"))).id
    seeded_messages = messages_in(cql, keyspace, mailbox)
    delivered = threading.Event()

    def deliver():
        marker = tmp_path / "run" / "candidates" / "_SUCCESS"
        while not marker.exists():
            time.sleep(0.05)
        row = message("3.9", mailbox, 9_000, 424_242, flagseen=False)
        insert(cql, keyspace, "imapuidtable", row)
        insert(cql, keyspace, "messageidtable", row)
        cql.execute(
            f"UPDATE {keyspace}.mailboxcounters SET count = count + 1, unseen = unseen + 1 WHERE mailboxid = %s",
            (mailbox,),
        )
        delivered.set()

    james = threading.Thread(target=deliver, daemon=True)
    james.start()
    options = RunOptions(
        "counters",
        keyspace,
        mode="repair",
        recheck_delay_seconds=4,
        run_dir=str(tmp_path / "run"),
        allow_destructive=True,
    )
    report = run_target(spark, cassandra_settings, options)
    james.join(timeout=5)

    assert delivered.is_set()
    assert report["status"] == "COMPLETED"
    assert counters(cql, keyspace) == as_read(truth_counters(cql, keyspace))
    assert counters(cql, keyspace)[mailbox][0] == seeded_messages + 1, "and the one delivered during the run"


@pytest.mark.parametrize("target", ["counters", "quotas"])
def test_malformed_truth_stops_before_writing(cql, cassandra_settings, spark, new_keyspace, tmp_path, target):
    keyspace = new_keyspace("bad")
    seeded(cql, cassandra_settings, keyspace, "3.9")
    inject(cassandra_settings, keyspace=keyspace, kind="counters-wrong", rate=0.5, manifest_path=str(tmp_path / "c"))
    inject(cassandra_settings, keyspace=keyspace, kind="quota-wrong", rate=0.5, manifest_path=str(tmp_path / "q"))
    inject(cassandra_settings, keyspace=keyspace, kind="truth-malformed", rate=0.1, manifest_path=str(tmp_path / "m"))
    before = (counters(cql, keyspace), quota_usage(cql, keyspace))

    with pytest.raises(GateFailed) as failure:
        run_target(spark, cassandra_settings, RunOptions(target, keyspace, mode="repair", allow_destructive=True))

    report = failure.value.report
    assert report["status"] == "FAILED"
    [gate] = report["gates"]
    assert gate["name"] == f"{target}_truth_health" and "uid_below_1" in str(gate["failed_expectations"])
    assert all(row["uid"] == 0 for row in gate["sample_rows"])
    assert (counters(cql, keyspace), quota_usage(cql, keyspace)) == before, "nothing written"


def test_counter_counts_are_exact_per_mailbox(cql, cassandra_settings, spark, new_keyspace):
    """A consistent, freshly seeded keyspace: nothing to do, nothing written."""
    keyspace = new_keyspace("clean")
    seeded(cql, cassandra_settings, keyspace, "3.9")
    before = counters(cql, keyspace)
    assert Counter(before.values())  # the seeder wrote counters
    for target in ("counters", "quotas"):
        report = run_target(spark, cassandra_settings, RunOptions(target, keyspace, mode="repair"))
        assert report["status"] == "COMPLETED" and sum(report["inconsistencies"].values()) == 0
    assert counters(cql, keyspace) == before == as_read(truth_counters(cql, keyspace))
