"""The seeder writes a consistent platform: every table agrees with the messages, checked here with plain CQL."""

import json
from collections import Counter, defaultdict

import pytest
from james_consistency.seed import seed_platform

RIGHTS_ORDER = "aeiklprstwx"


def rows(cql, keyspace, table):
    return list(cql.execute(f"SELECT * FROM {keyspace}.{table}"))


def assert_platform_is_consistent(cql, keyspace, generation, users, mailboxes, messages):
    truth = rows(cql, keyspace, "imapuidtable")
    projection = rows(cql, keyspace, "messageidtable")
    assert len(truth) == messages
    assert {r._asdict()["messageid"]: r._asdict() for r in truth} == {
        r._asdict()["messageid"]: r._asdict() for r in projection
    }, "both message tables hold the same rows"
    by_mailbox = defaultdict(list)
    for message in truth:
        by_mailbox[message.mailboxid].append(message)

    mailbox_rows = rows(cql, keyspace, "mailbox")
    path_table = "mailboxpathv3" if generation == "3.9" else "mailboxpathv2"
    paths = rows(cql, keyspace, path_table)
    assert len(mailbox_rows) == len(paths) == mailboxes
    assert {(m.mailboxbase.namespace, m.mailboxbase.user, m.name): m.id for m in mailbox_rows} == {
        (p.namespace, p.user, p.mailboxname): p.mailboxid for p in paths
    }, "every mailbox registered under its own path, one to one"
    assert {m.id for m in mailbox_rows} >= set(by_mailbox)
    assert len({m.mailboxbase.user for m in mailbox_rows}) == users

    def uids(table, column="uid"):
        found = defaultdict(set)
        for row in rows(cql, keyspace, table):
            found[row.mailboxid].add(getattr(row, column))
        return found

    assert uids("messagedeleted") == {
        box: {m.uid for m in ms if m.flagdeleted} for box, ms in by_mailbox.items() if any(m.flagdeleted for m in ms)
    }
    assert uids("firstunseen") == {
        box: {m.uid for m in ms if not m.flagseen} for box, ms in by_mailbox.items() if any(not m.flagseen for m in ms)
    }
    assert uids("mailboxrecents", "recent_mesage_uid") == {
        box: {m.uid for m in ms if m.flagrecent} for box, ms in by_mailbox.items() if any(m.flagrecent for m in ms)
    }
    applicable = {row.mailboxid: set(row.userflags) for row in rows(cql, keyspace, "applicableflag")}
    for box, ms in by_mailbox.items():
        used = set().union(*(m.userflags or set() for m in ms))
        assert applicable.get(box, set()) == used

    counters = {row.mailboxid: (row.count, row.unseen) for row in rows(cql, keyspace, "mailboxcounters")}
    assert counters == {box: (len(ms), sum(not m.flagseen for m in ms)) for box, ms in by_mailbox.items()}
    assert {r.mailboxid: r.nextuid for r in rows(cql, keyspace, "messagecounter")} == {
        box: max(m.uid for m in ms) for box, ms in by_mailbox.items()
    }
    assert all(r.nextmodseq >= max(m.modseq for m in by_mailbox[r.mailboxid]) for r in rows(cql, keyspace, "modseq"))

    owner = {m.id: m.mailboxbase.user for m in mailbox_rows}
    count_per_user = Counter(owner[m.mailboxid] for m in truth)
    if generation == "3.9":
        sizes = {m.messageid: m.fullcontentoctets for m in truth}
        size_per_user = Counter()
        for m in truth:
            size_per_user[owner[m.mailboxid]] += sizes[m.messageid]
        quotas = {(r.identifier, r.quotatype): r.currentvalue for r in rows(cql, keyspace, "quotacurrentvalue")}
        assert {k: v for k, v in quotas.items() if k[1] == "count"} == {
            (f"#private&{user}", "count"): n for user, n in count_per_user.items()
        }
        assert {k: v for k, v in quotas.items() if k[1] == "size"} == {
            (f"#private&{user}", "size"): n for user, n in size_per_user.items()
        }
    else:
        quotas = {r.quotaroot: r.messagecount for r in rows(cql, keyspace, "currentquota")}
        assert quotas == {f"#private&{user}": n for user, n in count_per_user.items()}

    acl_truth = {}
    if generation == "3.9":
        last_events = {}
        for event in rows(cql, keyspace, "eventstore"):
            if event.aggregateid not in last_events or event.eventid > last_events[event.aggregateid][0]:
                last_events[event.aggregateid] = (event.eventid, json.loads(event.event))
        for aggregate, (_, event) in last_events.items():
            assert event["type"] == "acl-updated"
            acl_truth[aggregate] = event["aclDiff"]["newAcl"]["entries"]
        aclv2 = defaultdict(dict)
        for row in rows(cql, keyspace, "aclv2"):
            aclv2[str(row.id)][row.key] = "".join(sorted(row.rights))
        assert aclv2 == {box: {k: "".join(sorted(v)) for k, v in e.items()} for box, e in acl_truth.items()}
    else:
        acl_truth = {str(r.id): json.loads(r.acl)["entries"] for r in rows(cql, keyspace, "acl")}
    expected_user_acl = {
        (key, box): "".join(right for right in RIGHTS_ORDER if right in rights)
        for box, entries in acl_truth.items()
        for key, rights in entries.items()
        if not key.startswith(("-", "$")) and key not in ("owner", "anyone", "authenticated")
    }
    assert {(r.username, str(r.mailboxid)): r.rights for r in rows(cql, keyspace, "usermailboxacl")} == (
        expected_user_acl
    )
    assert any(key.startswith("$") for entries in acl_truth.values() for key in entries), "groups are seeded too"


@pytest.mark.parametrize("generation", ["3.9", "3.5"])
def test_seeded_platform_is_consistent_across_every_table(cql, cassandra_settings, spark, new_keyspace, generation):
    keyspace = new_keyspace("seed")

    summary = seed_platform(
        cassandra_settings,
        keyspace=keyspace,
        users=6,
        mailboxes_per_user=5,
        messages_per_mailbox=30,
        random_seed=3,
        generation=generation,
        spark=spark,
    )

    assert summary["messages"] == 900 and summary["mailboxes"] == 30 and summary["generation"] == generation
    assert_platform_is_consistent(cql, keyspace, generation, users=6, mailboxes=30, messages=900)


def test_same_seed_same_platform_and_a_second_seed_is_refused(cql, cassandra_settings, spark, new_keyspace):
    first, second = new_keyspace("seed"), new_keyspace("seed")
    for keyspace in (first, second):
        seed_platform(
            cassandra_settings,
            keyspace=keyspace,
            users=2,
            mailboxes_per_user=2,
            messages_per_mailbox=10,
            random_seed=9,
            spark=spark,
        )

    for table in ("imapuidtable", "mailbox", "usermailboxacl", "mailboxcounters", "eventstore"):
        assert sorted(rows(cql, first, table)) == sorted(rows(cql, second, table)), table

    from james_consistency.errors import OperatorError

    with pytest.raises(OperatorError, match="already holds messages"):
        seed_platform(
            cassandra_settings, keyspace=first, users=1, mailboxes_per_user=1, messages_per_mailbox=1, spark=spark
        )
