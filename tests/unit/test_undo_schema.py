"""The undo reads a table's columns from the driver's schema metadata, which follows schema changes by events: a table
missing from it (an event's refresh that failed) is read again, not a failed image."""

from types import SimpleNamespace

import pytest
from james_consistency.errors import OperatorError
from james_consistency.undo import Table

MAILBOX = SimpleNamespace(
    columns={"id": SimpleNamespace(cql_type="timeuuid"), "name": SimpleNamespace(cql_type="text")},
    partition_key=[SimpleNamespace(name="id")],
    clustering_key=[],
)


class Session:
    """A driver session whose schema metadata lacks the keyspace's tables until the schema is read again."""

    def __init__(self, tables_after_refresh: dict):
        self.refreshes = 0
        keyspace = SimpleNamespace(tables={})

        def refresh_schema_metadata():
            self.refreshes += 1
            keyspace.tables = tables_after_refresh

        metadata = SimpleNamespace(keyspaces={"james": keyspace})
        self.cluster = SimpleNamespace(metadata=metadata, refresh_schema_metadata=refresh_schema_metadata)


def test_a_table_missing_from_the_drivers_metadata_is_read_again():
    session = Session({"mailbox": MAILBOX})

    table = Table(session, "james", "mailbox")

    assert (table.types, table.key_columns) == ({"id": "timeuuid", "name": "text"}, ("id",))
    assert session.refreshes == 1


def test_a_table_dropped_since_the_repair_is_named():
    session = Session({})

    with pytest.raises(OperatorError, match="table james.mailbox of a before-image does not exist"):
        Table(session, "james", "mailbox")
    assert session.refreshes == 1
