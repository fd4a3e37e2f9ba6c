"""The seeder writes a consistent platform: every table agrees with the messages and the ACLs, checked with plain CQL.

`inconsistencies` is this suite's own, independent reading of James's rules (it shares no code with the seeder or the
repairs); test_faults.py uses it to prove that a fault breaks exactly what its manifest says.
"""

import json
from collections import Counter, defaultdict

import pytest
from james_consistency.errors import OperatorError
from james_consistency_kit.cli import main
from james_consistency_kit.seed import seed_platform

RIGHTS_ORDER = "aeiklprstwx"
FLAGS = ("flaganswered", "flagdeleted", "flagdraft", "flagflagged", "flagrecent", "flagseen", "flaguser")
INDEXES = (
    ("messageDeleted", "messagedeleted", "uid", lambda m: m.flagdeleted),
    ("firstUnseen", "firstunseen", "uid", lambda m: not m.flagseen),
    ("mailboxRecents", "mailboxrecents", "recent_mesage_uid", lambda m: m.flagrecent),
)


def rows(cql, keyspace, table):
    return list(cql.execute(f"SELECT * FROM {keyspace}.{table}"))


def canonical(rights) -> str:
    return "".join(right for right in RIGHTS_ORDER if right in set(rights))


def is_user_entry(key: str) -> bool:
    return not key.startswith(("-", "$")) and key not in ("owner", "anyone", "authenticated")


def comparable(row) -> dict:
    return {key: frozenset(value or ()) if key == "userflags" else value for key, value in row._asdict().items()}


def acl_truth(cql, keyspace, generation, report) -> dict:
    """mailboxId (text) -> entries of the current ACL; an unreadable truth is reported and left out."""
    truth = {}
    if generation == "3.9":
        last = {}
        for event in rows(cql, keyspace, "eventstore"):
            if event.aggregateid not in last or event.eventid > last[event.aggregateid].eventid:
                last[event.aggregateid] = event
        for mailbox, event in last.items():
            try:
                parsed = json.loads(event.event)
                assert parsed["type"] == "acl-updated"
                truth[mailbox] = dict(parsed["aclDiff"]["newAcl"]["entries"])
            except (ValueError, KeyError, AssertionError):
                report("eventStore", (mailbox,), "malformed-truth")
                truth[mailbox] = None
    else:
        for row in rows(cql, keyspace, "acl"):
            try:
                truth[str(row.id)] = dict(json.loads(row.acl)["entries"])
            except (ValueError, KeyError, TypeError):
                report("acl", (row.id,), "malformed-truth")
                truth[str(row.id)] = None
    return truth


def compare(report, projection, expected: dict, actual: dict) -> None:
    for key in expected.keys() - actual.keys():
        report(projection, key, "missing")
    for key in actual.keys() - expected.keys():
        report(projection, key, "orphan")
    for key in expected.keys() & actual.keys():
        if expected[key] != actual[key]:
            report(projection, key, "outdated")


def inconsistencies(cql, keyspace, generation) -> set[tuple[str, tuple[str, ...], str]]:
    """Every disagreement between a James table and its source of truth, as (projection, key, kind).

    A mailbox whose truth holds a row no James writes (uid < 1, null modSeq or flags) is reported once and not
    checked further, like a mailbox whose ACL truth cannot be read: no repair may act on them."""
    found = set()

    def report(projection, key, kind):
        found.add((projection, tuple(str(part) for part in key), kind))

    unhealthy = set()
    truth = []
    for message in rows(cql, keyspace, "imapuidtable"):
        if message.uid < 1 or message.modseq is None or any(getattr(message, flag) is None for flag in FLAGS):
            report("imapUidTable", (message.messageid, message.mailboxid, message.uid), "malformed-truth")
            unhealthy.add(message.mailboxid)
        else:
            truth.append(message)
    truth = [m for m in truth if m.mailboxid not in unhealthy]
    by_mailbox = defaultdict(list)
    for message in truth:
        by_mailbox[message.mailboxid].append(message)

    # messageIdTable: the same row at the same (mailboxId, uid).
    compare(
        report,
        "messageIdTable",
        {(m.mailboxid, m.uid): comparable(m) for m in truth},
        {
            (p.mailboxid, p.uid): comparable(p)
            for p in rows(cql, keyspace, "messageidtable")
            if p.mailboxid not in unhealthy
        },
    )

    for name, table, column, qualifies in INDEXES:
        expected = {(m.mailboxid, m.uid): True for m in truth if qualifies(m)}
        actual = {
            (r.mailboxid, getattr(r, column)): True for r in rows(cql, keyspace, table) if r.mailboxid not in unhealthy
        }
        compare(report, name, expected, actual)

    applicable = {r.mailboxid: set(r.userflags or ()) for r in rows(cql, keyspace, "applicableflag")}
    for message in truth:
        for keyword in message.userflags or ():
            if keyword not in applicable.get(message.mailboxid, set()):
                report("applicableFlag", (message.mailboxid, keyword), "missing")

    counted = {box: (len(ms), sum(not m.flagseen for m in ms)) for box, ms in by_mailbox.items()}
    counters = {
        r.mailboxid: (r.count, r.unseen) for r in rows(cql, keyspace, "mailboxcounters") if r.mailboxid not in unhealthy
    }
    for box in counted.keys() | counters.keys():
        if counted.get(box, (0, 0)) != counters.get(box, (0, 0)):
            report("mailboxCounters", (box,), "outdated")

    next_uids = {r.mailboxid: r.nextuid for r in rows(cql, keyspace, "messagecounter")}
    next_modseqs = {r.mailboxid: r.nextmodseq for r in rows(cql, keyspace, "modseq")}
    for box, messages in by_mailbox.items():
        if next_uids.get(box, 0) < max(m.uid for m in messages):
            report("messageCounter", (box,), "behind")
        if next_modseqs.get(box, 0) < max(m.modseq for m in messages):
            report("modseq", (box,), "behind")

    # Mailboxes and their path registrations.
    path_table, path_name = (
        ("mailboxpathv3", "mailboxPathV3") if generation == "3.9" else ("mailboxpathv2", "mailboxPathV2")
    )
    mailboxes = {m.id: m for m in rows(cql, keyspace, "mailbox")}
    paths = {(p.namespace, p.user, p.mailboxname): p.mailboxid for p in rows(cql, keyspace, path_table)}

    def own_path(mailbox):
        return (mailbox.mailboxbase.namespace, mailbox.mailboxbase.user, mailbox.name)

    for box, mailbox in mailboxes.items():
        registered = paths.get(own_path(mailbox))
        if registered is None:
            report("mailbox", (box,), "orphan-mailbox")
        elif registered != box:
            report("mailbox", (box,), "two-ids-one-path")
    for path, box in paths.items():
        mailbox = mailboxes.get(box)
        if mailbox is None:
            report(path_name, (":".join(path),), "orphan-path")
        elif own_path(mailbox) != path:
            kind = "one-id-two-paths" if paths.get(own_path(mailbox)) == box else "conflict"
            report(path_name, (":".join(path),), kind)

    # Quotas: messages and octets per owner's quota root.
    owners = {box: user for (_, user, _), box in paths.items()}
    owners.update({box: m.mailboxbase.user for box, m in mailboxes.items()})
    unhealthy_users = {owners.get(box) for box in unhealthy}
    if generation == "3.9":
        sizes = {m.messageid: m.fullcontentoctets for m in truth}
    else:
        sizes = {r.messageid: r.fullcontentoctets for r in rows(cql, keyspace, "messagev2")}
    usage = defaultdict(lambda: [0, 0])
    for message in truth:
        root = f"#private&{owners[message.mailboxid]}"
        usage[root][0] += 1
        usage[root][1] += sizes[message.messageid]
    if generation == "3.9":
        current = defaultdict(lambda: [0, 0])
        for r in rows(cql, keyspace, "quotacurrentvalue"):
            if r.quotacomponent == "MAILBOX":
                current[r.identifier][0 if r.quotatype == "count" else 1] = r.currentvalue
        quota_name = "quotaCurrentValue"
    else:
        current = {r.quotaroot: [r.messagecount, r.storage] for r in rows(cql, keyspace, "currentquota")}
        quota_name = "currentQuota"
    for root in usage.keys() | current.keys():
        if root.removeprefix("#private&") not in unhealthy_users and usage.get(root, [0, 0]) != current.get(
            root, [0, 0]
        ):
            report(quota_name, (root,), "outdated")

    # ACLs: aclv2 (3.9) and UserMailboxACL follow the current ACL of each mailbox.
    acls = acl_truth(cql, keyspace, generation, report)
    unreadable = {box for box, entries in acls.items() if entries is None}
    readable = {box: entries for box, entries in acls.items() if entries is not None}
    if generation == "3.9":
        compare(
            report,
            "aclv2",
            {(box, key): canonical(rights) for box, entries in readable.items() for key, rights in entries.items()},
            {
                (str(r.id), r.key): canonical(r.rights)
                for r in rows(cql, keyspace, "aclv2")
                if str(r.id) not in unreadable
            },
        )
    compare(
        report,
        "UserMailboxACL",
        {
            (key, box): canonical(rights)
            for box, entries in readable.items()
            for key, rights in entries.items()
            if is_user_entry(key)
        },
        {
            (r.username, str(r.mailboxid)): r.rights
            for r in rows(cql, keyspace, "usermailboxacl")
            if str(r.mailboxid) not in unreadable
        },
    )
    return found


def seed(cassandra_settings, spark, keyspace, generation="3.9", random_seed=3, users=6, mailboxes=5, messages=30):
    return seed_platform(
        cassandra_settings,
        keyspace=keyspace,
        users=users,
        mailboxes_per_user=mailboxes,
        messages_per_mailbox=messages,
        random_seed=random_seed,
        generation=generation,
        spark=spark,
    )


@pytest.mark.parametrize("generation", ["3.9", "3.5"])
def test_seeded_platform_is_consistent_across_every_table(cql, cassandra_settings, spark, new_keyspace, generation):
    keyspace = new_keyspace("seed")

    summary = seed(cassandra_settings, spark, keyspace, generation)

    assert inconsistencies(cql, keyspace, generation) == set()
    assert (summary["generation"], summary["users"], summary["mailboxes"], summary["messages"]) == (
        generation,
        6,
        30,
        900,
    )
    for table, written in summary["rows_written"].items():
        assert len(rows(cql, keyspace, table)) == written, table

    truth = rows(cql, keyspace, "imapuidtable")
    projection = rows(cql, keyspace, "messageidtable")
    assert {(m.mailboxid, m.uid): comparable(m) for m in truth} == {
        (p.mailboxid, p.uid): comparable(p) for p in projection
    }, "both message tables hold the same rows"
    assert len(truth) == len(projection) == 900
    by_mailbox = defaultdict(list)
    for message in truth:
        by_mailbox[message.mailboxid].append(message)
    assert all(sorted(m.uid for m in ms) == list(range(1, 31)) for ms in by_mailbox.values()), "uids 1..30"
    for ms in by_mailbox.values():
        modseqs = [m.modseq for m in sorted(ms, key=lambda m: m.uid)]
        assert modseqs == sorted(set(modseqs)), "modSeq increases with the uid"
    assert {m.messageid.version for m in truth} == {1}, "message ids are timeuuids"
    assert len({m.messageid for m in truth}) == 900

    # Generators hold exactly the last value handed out; applicableFlag exactly the keywords used.
    assert {r.mailboxid: r.nextuid for r in rows(cql, keyspace, "messagecounter")} == {
        box: max(m.uid for m in ms) for box, ms in by_mailbox.items()
    }
    assert {r.mailboxid: r.nextmodseq for r in rows(cql, keyspace, "modseq")} == {
        box: max(m.modseq for m in ms) for box, ms in by_mailbox.items()
    }
    assert {r.mailboxid: set(r.userflags) for r in rows(cql, keyspace, "applicableflag")} == {
        box: set().union(*(m.userflags or set() for m in ms))
        for box, ms in by_mailbox.items()
        if any(m.userflags for m in ms)
    }

    # A realistic, non-trivial platform: most messages seen, every flag and several keywords used.
    flags = Counter(flag for m in truth for flag in FLAGS if getattr(m, flag))
    assert flags["flagseen"] > 0.6 * len(truth)
    assert all(flags[flag] > 0 for flag in ("flaganswered", "flagdeleted", "flagflagged", "flagrecent"))
    keywords = Counter(k for m in truth for k in m.userflags or ())
    assert {"$Forwarded", "$Junk"} <= set(keywords) and len(keywords) >= 4
    for _, table, _, _ in INDEXES:
        assert rows(cql, keyspace, table), f"{table} is not empty"

    mailboxes = rows(cql, keyspace, "mailbox")
    assert len({m.mailboxbase.user for m in mailboxes}) == 6
    assert {m.mailboxbase.namespace for m in mailboxes} == {"#private"}
    assert sum(m.name == "INBOX" for m in mailboxes) == 6, "one INBOX per user"

    # ACLs: shares with users, groups, negative rights; some with a history whose last event is the truth.
    found = {}
    acls = acl_truth(cql, keyspace, generation, lambda *problem: found.setdefault("problem", problem))
    assert "problem" not in found
    keys = [key for entries in acls.values() for key in entries]
    assert any(is_user_entry(key) for key in keys) and any(key.startswith("$") for key in keys)
    assert any(key.startswith("-") for key in keys)
    assert rows(cql, keyspace, "usermailboxacl")
    if generation == "3.9":
        events = Counter(e.aggregateid for e in rows(cql, keyspace, "eventstore"))
        assert max(events.values()) >= 2, "some ACLs changed over time"
        assert any(entries == {} for entries in acls.values()), "an ACL emptied since"
    else:
        assert max(r.version for r in rows(cql, keyspace, "acl")) >= 2


def test_same_seed_same_platform_other_seed_other_platform(cql, cassandra_settings, spark, new_keyspace):
    first, second, other = new_keyspace("seed"), new_keyspace("seed"), new_keyspace("seed")
    for keyspace, random_seed in ((first, 9), (second, 9), (other, 10)):
        seed(cassandra_settings, spark, keyspace, random_seed=random_seed, users=4, mailboxes=3, messages=10)

    tables = [
        r.table_name
        for r in cql.execute("SELECT table_name FROM system_schema.tables WHERE keyspace_name = %s", (first,))
    ]
    assert len(tables) >= 18
    for table in tables:
        assert sorted(rows(cql, first, table), key=str) == sorted(rows(cql, second, table), key=str), table
    assert {m.messageid for m in rows(cql, first, "imapuidtable")}.isdisjoint(
        {m.messageid for m in rows(cql, other, "imapuidtable")}
    )


def test_seeding_without_a_session_leaves_the_callers_session_running(cql, cassandra_settings, spark, new_keyspace):
    """An in-process caller (a test, a notebook) that seeds without passing its session keeps a working session."""
    keyspace = new_keyspace("own")

    seeded = seed_platform(cassandra_settings, keyspace=keyspace, users=1, mailboxes_per_user=1, messages_per_mailbox=2)

    assert seeded["messages"] == 2
    assert spark.range(3).count() == 3, "the caller's Spark session still runs"


def test_a_keyspace_holding_messages_is_not_seeded_twice(cql, cassandra_settings, spark, new_keyspace):
    keyspace = new_keyspace("seed")
    seed(cassandra_settings, spark, keyspace, users=1, mailboxes=1, messages=3)

    with pytest.raises(OperatorError, match="already holds messages: seed a new keyspace"):
        seed(cassandra_settings, spark, keyspace, users=1, mailboxes=1, messages=3)
    assert len(rows(cql, keyspace, "imapuidtable")) == 3
    assert [r.count for r in rows(cql, keyspace, "mailboxcounters")] == [3], "counters not incremented twice"


def test_a_generation_other_than_the_keyspace_s_is_refused(cql, cassandra_settings, spark, new_keyspace):
    keyspace = new_keyspace("seed")
    seed(cassandra_settings, spark, keyspace, generation="3.5", users=1, mailboxes=1, messages=0)

    with pytest.raises(OperatorError, match="already holds the James 3.5 schema"):
        seed(cassandra_settings, spark, keyspace, generation="3.9", users=1, mailboxes=1, messages=1)


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--users", "-1", "-1 is negative: sizes must be 0 or more"),
        ("--mailboxes-per-user", "-3", "-3 is negative: sizes must be 0 or more"),
        ("--messages-per-mailbox", "lots", "'lots' is not a whole number"),
    ],
)
def test_negative_sizes_are_refused_by_the_command_line(capsys, option, value, message):
    arguments = {"--users": "2", "--mailboxes-per-user": "2", "--messages-per-mailbox": "2", option: value}

    with pytest.raises(SystemExit) as exit_info:
        main(["seed", "--keyspace", "k", *(part for pair in arguments.items() for part in pair)])

    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
