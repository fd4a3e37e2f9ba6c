"""The fixture's copy of a James-written platform holds James's rows, written the way James writes them."""

import pytest
from james_consistency.cql import table_names
from support.james_platform import ACL_SIZES, james_platform


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
