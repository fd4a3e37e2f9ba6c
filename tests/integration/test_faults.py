"""Each fault kind breaks exactly the rows its manifest lists, and nothing else (every table compared with CQL)."""

import pytest
from james_consistency.errors import OperatorError
from james_consistency.faults import KINDS, inject
from james_consistency.seed import seed_platform


def primary_keys(cql, keyspace) -> dict[str, list[str]]:
    keys: dict[str, list] = {}
    for row in cql.execute(
        "SELECT table_name, column_name, kind, position FROM system_schema.columns WHERE keyspace_name = %s",
        (keyspace,),
    ):
        if row.kind in ("partition_key", "clustering"):
            order = (0 if row.kind == "partition_key" else 100) + row.position
            keys.setdefault(row.table_name, []).append((order, row.column_name))
    return {table: [name for _, name in sorted(columns)] for table, columns in keys.items()}


def snapshot(cql, keyspace) -> dict:
    tables = {}
    for table, key in primary_keys(cql, keyspace).items():
        tables[table] = {
            tuple(str(getattr(row, column)) for column in key): row
            for row in cql.execute(f"SELECT * FROM {keyspace}.{table}")
        }
    return tables


def changed(before: dict, after: dict) -> dict[str, set]:
    found = {}
    for table in before:
        keys = {
            key for key in before[table].keys() | after[table].keys() if before[table].get(key) != after[table].get(key)
        }
        if keys:
            found[table] = keys
    return found


def path_table(generation):
    return "mailboxpathv3" if generation == "3.9" else "mailboxpathv2"


def message_key(row):
    return (row["mailboxId"], str(row["uid"]))


def path_key(path):
    return tuple(path.split(":", 2))


# kind -> (table changed, manifest row -> that table's primary key)
EXPECTED = {
    "projection-missing": (lambda g: "messageidtable", message_key),
    "projection-stale-flags": (lambda g: "messageidtable", message_key),
    "projection-outdated": (lambda g: "messageidtable", message_key),
    "projection-wrong-uid": (lambda g: "messageidtable", message_key),
    "projection-orphan": (lambda g: "imapuidtable", lambda r: (r["messageId"], r["mailboxId"], str(r["uid"]))),
    "truth-malformed": (lambda g: "imapuidtable", lambda r: (r["messageId"], r["mailboxId"], "0")),
    "acl-user-missing": (lambda g: "usermailboxacl", lambda r: (r["userName"], r["mailboxId"])),
    "acl-user-extra": (lambda g: "usermailboxacl", lambda r: (r["userName"], r["mailboxId"])),
    "acl-user-wrong-rights": (lambda g: "usermailboxacl", lambda r: (r["userName"], r["mailboxId"])),
    "aclv2-missing": (lambda g: "aclv2", lambda r: (r["mailboxId"], r["key"])),
    "aclv2-wrong": (lambda g: "aclv2", lambda r: (r["mailboxId"], r["key"])),
    "acl-json-malformed": (lambda g: "acl", lambda r: (r["mailboxId"],)),
    "acl-event-unknown-type": (lambda g: "eventstore", lambda r: (r["mailboxId"], str(r["eventId"]))),
    "mailbox-path-orphan": (lambda g: "mailbox", lambda r: (r["mailboxId"],)),
    "mailbox-orphan": (path_table, lambda r: path_key(r["mailboxPath"])),
    "mailbox-two-paths": (path_table, lambda r: path_key(r["otherPath"])),
    "mailbox-path-conflict": (lambda g: "mailbox", lambda r: (r["otherMailboxId"],)),
    "deleted-missing": (lambda g: "messagedeleted", message_key),
    "deleted-stale": (lambda g: "messagedeleted", message_key),
    "unseen-missing": (lambda g: "firstunseen", message_key),
    "unseen-stale": (lambda g: "firstunseen", message_key),
    "recent-missing": (lambda g: "mailboxrecents", message_key),
    "recent-stale": (lambda g: "mailboxrecents", message_key),
    "applicable-flag-missing": (lambda g: "applicableflag", lambda r: (r["mailboxId"],)),
    "counters-wrong": (lambda g: "mailboxcounters", lambda r: (r["mailboxId"],)),
    "quota-wrong": (
        lambda g: "quotacurrentvalue" if g == "3.9" else "currentquota",
        lambda r: (r["quotaRoot"], "MAILBOX", r["quotaType"]) if "quotaType" in r else (r["quotaRoot"],),
    ),
}


def test_every_kind_has_an_expectation():
    assert set(EXPECTED) == set(KINDS)


@pytest.fixture(scope="module", params=["3.9", "3.5"])
def seeded(request, cql, cassandra_settings, spark):
    generation = request.param
    keyspace = f"faults_{generation.replace('.', '')}_{id(request) % 100000}"
    cql.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)
    seed_platform(
        cassandra_settings,
        keyspace=keyspace,
        users=4,
        mailboxes_per_user=6,
        messages_per_mailbox=25,
        random_seed=5,
        generation=generation,
        spark=spark,
    )
    yield keyspace, generation
    cql.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)


@pytest.mark.parametrize("kind", list(KINDS))
def test_kind_breaks_exactly_what_its_manifest_says(cql, cassandra_settings, seeded, kind, tmp_path):
    keyspace, generation = seeded
    if generation not in KINDS[kind].generations:
        with pytest.raises(OperatorError, match=f"fault kind '{kind}' exists only in the James"):
            inject(cassandra_settings, keyspace=keyspace, kind=kind, rate=0.1, manifest_path=str(tmp_path / "m.json"))
        return
    table_of, key_of = EXPECTED[kind]
    before = snapshot(cql, keyspace)

    manifest = inject(
        cassandra_settings,
        keyspace=keyspace,
        kind=kind,
        rate=0.1,
        random_seed=11,
        manifest_path=str(tmp_path / "m.json"),
    )

    assert manifest["count"] == len(manifest["rows"]) >= 1
    assert (tmp_path / "m.json").exists()
    assert changed(before, snapshot(cql, keyspace)) == {table_of(generation): {key_of(row) for row in manifest["rows"]}}


def test_unknown_kind_and_bad_rate_are_refused(cassandra_settings, seeded):
    keyspace, _ = seeded
    with pytest.raises(OperatorError, match="unknown fault kind 'nope': choose one of projection-missing"):
        inject(cassandra_settings, keyspace=keyspace, kind="nope", rate=0.1)
    with pytest.raises(OperatorError, match="rate 2 is outside 0..1"):
        inject(cassandra_settings, keyspace=keyspace, kind="projection-missing", rate=2)
