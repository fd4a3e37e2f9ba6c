"""The undo reads a table's columns from the driver's schema metadata, which the product's sessions do not read when
they connect, and which follows schema changes by events: a table missing from it (never read, or an event's refresh
that failed or was skipped) is read again, not a failed image."""

import pytest
from cassandra.cluster import Cluster
from james_consistency.cassandra.cql import close, connect
from james_consistency.errors import OperatorError
from james_consistency.undo.tables import Table


@pytest.fixture(params=["following-no-schema-event", "the-product's-own"])
def session_without_schema_events(cassandra_settings, request):
    """A real driver session that follows no schema change after it connected, as one whose refreshes all failed; or
    one of the product's, which reads no schema at all."""
    if request.param == "the-product's-own":
        session = connect(cassandra_settings)
        yield session
        close(session)
        return
    cluster = Cluster(
        [cassandra_settings.host], port=cassandra_settings.port, protocol_version=4, schema_event_refresh_window=-1
    )
    session = cluster.connect()
    yield session
    cluster.shutdown()


def test_a_table_created_after_the_session_connected_is_read_again(cql, new_keyspace, session_without_schema_events):
    keyspace = new_keyspace("undoschema")
    cql.execute(f"CREATE KEYSPACE {keyspace} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}")
    cql.execute(f"CREATE TABLE {keyspace}.mailbox (id timeuuid PRIMARY KEY, name text)")
    assert keyspace not in session_without_schema_events.cluster.metadata.keyspaces

    table = Table(session_without_schema_events, keyspace, "mailbox")

    assert (table.types, table.key_columns) == ({"id": "timeuuid", "name": "text"}, ("id",))


def test_a_table_dropped_since_the_repair_is_named(cql, new_keyspace, session_without_schema_events):
    keyspace = new_keyspace("undoschema")
    cql.execute(f"CREATE KEYSPACE {keyspace} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}")

    with pytest.raises(OperatorError, match=f"table {keyspace}.mailbox of a before-image does not exist"):
        Table(session_without_schema_events, keyspace, "mailbox")
