"""The fixture's copy of a James-written platform holds James's rows, written the way James writes them."""

import json
import uuid

import pytest
from james_consistency.cassandra.cql import table_names
from james_consistency_kit import james_harness
from support.james_platform import ACL_SIZES, WRITTEN_BY_UPDATE, james_platform, keyspace_rows, restore_keyspace


def counts(cql, keyspace: str) -> dict[str, int]:
    # The tables from system_schema, not from the driver's metadata: that follows schema changes by events, and can
    # lack a table created a moment ago.
    return {name: len(list(cql.execute(f"SELECT * FROM {keyspace}.{name}"))) for name in table_names(cql, keyspace)}


@pytest.mark.parametrize("generation", ["3.9", "3.5"])
def test_a_copy_holds_every_row_of_james_platform(cql, cassandra_settings, new_keyspace, generation):
    first, second = new_keyspace("copy"), new_keyspace("copy")
    seeded = james_platform(cql, cassandra_settings, first, generation, **ACL_SIZES)
    james_platform(cql, cassandra_settings, second, generation, **ACL_SIZES)

    copied = counts(cql, first)
    assert copied == counts(cql, second)
    assert copied["imapuidtable"] == seeded["messages"] > 0
    assert copied["mailbox"] == seeded["mailboxes"]


def test_aclv2_rows_have_no_row_marker_as_james_writes_them(cql, cassandra_settings, new_keyspace):
    keyspace = new_keyspace("copy")
    james_platform(cql, cassandra_settings, keyspace, "3.9", **ACL_SIZES)
    row = cql.execute(f"SELECT id, key, rights FROM {keyspace}.aclv2 LIMIT 1").one()

    # James removes an entry's rights by UPDATE: on its own rows, the entry is then gone.
    cql.execute(
        f"UPDATE {keyspace}.aclv2 SET rights = rights - %s WHERE id = %s AND key = %s", (row.rights, row.id, row.key)
    )

    assert cql.execute(f"SELECT * FROM {keyspace}.aclv2 WHERE id = %s AND key = %s", (row.id, row.key)).one() is None


def rows_as_json(cql, keyspace: str) -> dict[str, list[str]]:
    return {
        name: sorted(row[0] for row in cql.execute(f"SELECT JSON * FROM {keyspace}.{name}"))
        for name in table_names(cql, keyspace)
    }


def test_the_rows_a_template_file_keeps_are_written_back_as_james_wrote_them(cql, cassandra_settings, new_keyspace):
    """What the template files keep (definitions, every row as JSON) gives back James's keyspace: values of every
    type, tables written by UPDATE, counters (one never incremented stays null)."""
    written, copy = new_keyspace("james"), new_keyspace("copy")
    on_keyspace = ["--keyspace", written]
    james_harness.run("3.5.0", "schema", on_keyspace, cassandra_settings)
    sizes = ["--users", "2", "--mailboxes-per-user", "2", "--messages-per-mailbox", "3"]
    james_harness.run("3.5.0", "seed", [*on_keyspace, *sizes], cassandra_settings)
    breaking = ["--kind", "counter-increment", "--rate", "0.5", "--random-seed", "1"]
    james_harness.run("3.5.0", "break", [*on_keyspace, *breaking], cassandra_settings)
    # A mailbox whose unseen counter was never incremented (as the broken templates hold): its count only.
    cql.execute(f"UPDATE {written}.mailboxcounters SET count = count + 1 WHERE mailboxid = %s", (uuid.uuid1(),))

    kept = json.loads(json.dumps(keyspace_rows(cql, written, WRITTEN_BY_UPDATE["3.5.0"])))
    restore_keyspace(cql, kept, copy)

    by_james = rows_as_json(cql, written)
    assert rows_as_json(cql, copy) == by_james
    assert by_james["messagev2"] and by_james["mailboxcounters"] and by_james["applicableflag"]
    assert any('"unseen": null' in row for row in by_james["mailboxcounters"]), "a counter left null"
