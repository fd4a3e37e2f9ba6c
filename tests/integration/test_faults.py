"""Each fault kind breaks exactly the rows its manifest lists: the tables change at those keys and nowhere else, and
the platform's inconsistencies (read by this suite's own CQL checker) are exactly the ones the manifest announces.

One platform is seeded per schema generation; after each kind the test puts every changed row back (counters by
their delta) and proves the keyspace is the seeded one again, so every kind starts from a consistent platform.
"""

import json
import uuid

import pytest
from james_consistency.errors import OperatorError
from james_consistency_kit.cli import main
from james_consistency_kit.faults import KINDS, inject
from james_consistency_kit.seed import seed_platform
from test_seed import inconsistencies

# projection (as the manifest names it) -> the manifest fields that are its key, as the checker reports it
PROJECTION_KEYS = {
    "messageIdTable": ("mailboxId", "uid"),
    "imapUidTable": ("messageId", "mailboxId", "uid"),
    "messageDeleted": ("mailboxId", "uid"),
    "firstUnseen": ("mailboxId", "uid"),
    "mailboxRecents": ("mailboxId", "uid"),
    "applicableFlag": ("mailboxId", "keyword"),
    "mailboxCounters": ("mailboxId",),
    "quotaCurrentValue": ("quotaRoot",),
    "currentQuota": ("quotaRoot",),
    "aclv2": ("mailboxId", "key"),
    "UserMailboxACL": ("userName", "mailboxId"),
    "eventStore": ("mailboxId",),
    "acl": ("mailboxId",),
    "mailbox": ("mailboxId",),
    "mailboxPathV3": ("mailboxPath",),
    "mailboxPathV2": ("mailboxPath",),
}

# table written (as the manifest names it) -> its primary key from a manifest row
WRITTEN_KEYS = {
    "messageIdTable": lambda r: (r["mailboxId"], r["uid"]),
    "imapUidTable": lambda r: (r["messageId"], r["mailboxId"], r["uid"]),
    "messageDeleted": lambda r: (r["mailboxId"], r["uid"]),
    "firstUnseen": lambda r: (r["mailboxId"], r["uid"]),
    "mailboxRecents": lambda r: (r["mailboxId"], r["uid"]),
    "applicableFlag": lambda r: (r["mailboxId"],),
    "mailboxCounters": lambda r: (r["mailboxId"],),
    "quotaCurrentValue": lambda r: (r["quotaRoot"], r["quotaComponent"], r["quotaType"]),
    "currentQuota": lambda r: (r["quotaRoot"],),
    "aclv2": lambda r: (r["mailboxId"], r["key"]),
    "UserMailboxACL": lambda r: (r["userName"], r["mailboxId"]),
    "eventStore": lambda r: (r["mailboxId"], r["eventId"]),
    "acl": lambda r: (r["mailboxId"],),
    "mailbox": lambda r: (r["mailboxId"],),
    "mailboxPathV3": lambda r: tuple(r["mailboxPath"].split(":", 2)),
    "mailboxPathV2": lambda r: tuple(r["mailboxPath"].split(":", 2)),
}


def schema(cql, keyspace) -> dict[str, dict]:
    """table -> its primary key columns in order, and its counter columns."""
    tables: dict[str, dict] = {}
    for row in cql.execute(
        "SELECT table_name, column_name, kind, position, type FROM system_schema.columns WHERE keyspace_name = %s",
        (keyspace,),
    ):
        table = tables.setdefault(row.table_name, {"key": [], "counters": []})
        if row.kind in ("partition_key", "clustering"):
            table["key"].append(((0 if row.kind == "partition_key" else 100) + row.position, row.column_name))
        elif row.type == "counter":
            table["counters"].append(row.column_name)
    for table in tables.values():
        table["key"] = [name for _, name in sorted(table["key"])]
    return tables


def snapshot(cql, keyspace, tables) -> dict[str, dict]:
    """Every row of every table, by its primary key (as strings)."""
    return {
        table: {
            tuple(str(getattr(row, column)) for column in spec["key"]): row
            for row in cql.execute(f"SELECT * FROM {keyspace}.{table}")
        }
        for table, spec in tables.items()
    }


def changed(before: dict, after: dict) -> dict[str, set]:
    found = {}
    for table in before:
        keys = {
            key for key in before[table].keys() | after[table].keys() if before[table].get(key) != after[table].get(key)
        }
        if keys:
            found[table] = keys
    return found


def restore(cql, keyspace, tables, before: dict, after: dict) -> None:
    """Put every changed row back as it was: rows re-inserted whole, added rows deleted, counters moved back."""
    for table, keys in changed(before, after).items():
        spec = tables[table]
        where = " AND ".join(f"{column} = ?" for column in spec["key"])
        for key in keys:
            old, new = before[table].get(key), after[table].get(key)
            if spec["counters"]:
                deltas = [(getattr(old, c) if old else 0) - (getattr(new, c) if new else 0) for c in spec["counters"]]
                assignments = ", ".join(f"{c} = {c} + ?" for c in spec["counters"])
                statement = cql.prepare(f"UPDATE {keyspace}.{table} SET {assignments} WHERE {where}")
                cql.execute(statement, [*deltas, *(getattr(old or new, c) for c in spec["key"])])
            elif old is None:
                statement = cql.prepare(f"DELETE FROM {keyspace}.{table} WHERE {where}")
                cql.execute(statement, [getattr(new, column) for column in spec["key"]])
            else:
                values = old._asdict()
                statement = cql.prepare(
                    f"INSERT INTO {keyspace}.{table} ({', '.join(values)}) VALUES ({', '.join('?' for _ in values)})"
                )
                cql.execute(statement, list(values.values()))


def announced(manifest) -> set[tuple[str, tuple[str, ...], str]]:
    """The inconsistencies the manifest says the platform now has, in the checker's terms."""
    expected = set()
    for row in manifest["rows"]:
        for entry in (row, *row.get("also", ())):
            key = tuple(str(entry[field]) for field in PROJECTION_KEYS[entry["projection"]])
            expected.add((entry["projection"], key, entry["expected_kind"]))
    return expected


def written(manifest) -> dict[str, set]:
    """The rows the manifest says were written, by table (lower-cased, as Cassandra names it) and primary key."""
    found: dict[str, set] = {}
    for row in manifest["rows"]:
        key = tuple(str(part) for part in WRITTEN_KEYS[row["table"]](row))
        found.setdefault(row["table"].lower(), set()).add(key)
    return found


@pytest.fixture(scope="module", params=["3.9", "3.5"])
def platform(request, cql, cassandra_settings, spark):
    generation = request.param
    keyspace = f"faults_{generation.replace('.', '')}_{uuid.uuid4().hex[:8]}"
    seed_platform(
        cassandra_settings,
        keyspace=keyspace,
        users=5,
        mailboxes_per_user=6,
        messages_per_mailbox=20,
        random_seed=5,
        generation=generation,
        spark=spark,
    )
    tables = schema(cql, keyspace)
    assert inconsistencies(cql, keyspace, generation) == set(), "the seeded platform is consistent"
    yield keyspace, generation, tables, snapshot(cql, keyspace, tables)
    cql.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)


@pytest.mark.parametrize("kind", list(KINDS))
def test_kind_breaks_exactly_what_its_manifest_says(cql, cassandra_settings, platform, kind, tmp_path):
    keyspace, generation, tables, seeded = platform
    if generation not in KINDS[kind].generations:
        with pytest.raises(OperatorError, match=f"fault kind '{kind}' exists only in the James .* schema"):
            inject(cassandra_settings, keyspace=keyspace, kind=kind, rate=0.1, manifest_path=str(tmp_path / "m.json"))
        assert snapshot(cql, keyspace, tables) == seeded, "nothing written"
        return
    before = snapshot(cql, keyspace, tables)
    assert before == seeded, "the previous kind was undone"

    manifest = inject(
        cassandra_settings,
        keyspace=keyspace,
        kind=kind,
        rate=0.1,
        random_seed=11,
        manifest_path=str(tmp_path / "m.json"),
    )
    after = snapshot(cql, keyspace, tables)
    try:
        assert json.loads((tmp_path / "m.json").read_text()) == json.loads(json.dumps(manifest))
        assert (manifest["kind"], manifest["keyspace"], manifest["generation"]) == (kind, keyspace, generation)
        assert (manifest["rate"], manifest["random_seed"]) == (0.1, 11) and manifest["created_at"]
        assert manifest["count"] == len(manifest["rows"]) >= 1
        assert all(row["expected_kind"] and "before" in row and "after" in row for row in manifest["rows"])

        assert changed(before, after) == written(manifest), "the tables changed exactly at the manifest's rows"
        assert inconsistencies(cql, keyspace, generation) == announced(manifest), "and broke what it announces"
    finally:
        restore(cql, keyspace, tables, before, after)
    assert snapshot(cql, keyspace, tables) == seeded


def test_rate_is_a_share_of_the_candidates_chosen_by_the_seed(cql, cassandra_settings, platform, tmp_path):
    keyspace, generation, tables, seeded = platform
    runs = {}
    for name, rate, random_seed in (("a", 0.3, 1), ("b", 0.3, 1), ("c", 0.3, 2), ("none", 0.0, 1), ("all", 1.0, 1)):
        manifest = inject(
            cassandra_settings,
            keyspace=keyspace,
            kind="unseen-missing",
            rate=rate,
            random_seed=random_seed,
            manifest_path=str(tmp_path / f"{name}.json"),
        )
        runs[name] = {(row["mailboxId"], row["uid"]) for row in manifest["rows"]}
        restore(cql, keyspace, tables, seeded, snapshot(cql, keyspace, tables))
    candidates = len(seeded["firstunseen"])

    assert runs["a"] == runs["b"], "same seed, same rows"
    assert runs["a"] != runs["c"], "another seed, other rows"
    assert 0.15 * candidates < len(runs["a"]) < 0.45 * candidates
    assert runs["none"] == set() and len(runs["all"]) == candidates
    assert snapshot(cql, keyspace, tables) == seeded


def test_wrong_requests_are_refused_in_one_line(cql, cassandra_settings, platform, capsys):
    keyspace, generation, tables, seeded = platform
    with pytest.raises(OperatorError, match="unknown fault kind 'nope': choose one of projection-missing, "):
        inject(cassandra_settings, keyspace=keyspace, kind="nope", rate=0.1)
    with pytest.raises(OperatorError, match="rate 2 is outside 0..1"):
        inject(cassandra_settings, keyspace=keyspace, kind="projection-missing", rate=2)
    with pytest.raises(OperatorError, match="keyspace 'no_such_keyspace' does not exist"):
        inject(cassandra_settings, keyspace="no_such_keyspace", kind="projection-missing", rate=0.1)
    assert snapshot(cql, keyspace, tables) == seeded

    port = str(cassandra_settings.port)
    assert main(["break", "--keyspace", keyspace, "--kind", "nope", "--port", port]) == 2
    assert "error: unknown fault kind 'nope'" in capsys.readouterr().err
    assert main(["break", "--kind", "list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listed] == list(KINDS)
