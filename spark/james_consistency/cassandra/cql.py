"""Python driver sessions: connection settings from the environment, clear errors when the node is not there."""

import ssl

from cassandra import AuthenticationFailed, ConsistencyLevel
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile, NoHostAvailable
from cassandra.policies import RoundRobinPolicy
from cassandra.query import named_tuple_factory

from james_consistency.cassandra.connection import CassandraSettings as CassandraSettings  # callers import it from here
from james_consistency.cassandra.consistency_levels import CONSISTENCY_LEVELS as CONSISTENCY_LEVELS  # one list for all
from james_consistency.cassandra.consistency_levels import DEFAULT_CONSISTENCY_LEVEL
from james_consistency.errors import NodeUnreachable, OperatorError


def connect(settings: CassandraSettings, keyspace: str | None = None, timeout: float = 10.0, row_factory=None):
    """A driver session, or an OperatorError naming the unreachable node or the unknown keyspace."""
    auth = None
    if settings.username:
        auth = PlainTextAuthProvider(username=settings.username, password=settings.password or "")
    profile = ExecutionProfile(
        load_balancing_policy=RoundRobinPolicy(),
        consistency_level=ConsistencyLevel.name_to_value[DEFAULT_CONSISTENCY_LEVEL],
        request_timeout=60.0,
        row_factory=row_factory or named_tuple_factory,
    )
    ssl_context, ssl_options = None, None
    if settings.tls_ca_file:
        ssl_context = ssl.create_default_context(cafile=settings.tls_ca_file)
        ssl_options = {"server_hostname": settings.host.split(",")[0].strip()}
    cluster = Cluster(
        # Several contact points, comma-separated (as the connector takes them): one node down is no reason to fail.
        [host.strip() for host in settings.host.split(",") if host.strip()],
        port=settings.port,
        auth_provider=auth,
        ssl_context=ssl_context,
        ssl_options=ssl_options,
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        connect_timeout=timeout,
        control_connection_timeout=timeout,
        # v4, not v5: the driver's v5 segment reader (3.30.1) once lost its place in a local ring's reply
        # ("CRC mismatch on header 33c2da. Received 85": the CRC it read was the next frame's v5 header byte),
        # failing a connect that v4's unsegmented frames cannot fail that way. Cassandra 5.0 serves v4 in full.
        protocol_version=4,
        # No copy of the whole schema at each connect: a run connects a dozen times, and reading every keyspace's
        # tables and columns took 30-90 ms of each connect (5 ms without). What needs the schema reads the tables
        # it needs, or asks the driver for a refresh (the undo's Table).
        schema_metadata_enabled=False,
    )
    try:
        session = cluster.connect()
    except NoHostAvailable as error:
        cluster.shutdown()
        reason = next(iter(error.errors.values()), error)
        if isinstance(reason, AuthenticationFailed) or "Authentication" in type(reason).__name__:
            who = f"user '{settings.username}'" if settings.username else "a client without credentials"
            raise OperatorError(
                f"Cassandra node at {settings.address} refused {who} (authentication failed); "
                "set CASSANDRA_USERNAME and CASSANDRA_PASSWORD, or the login of the Airflow connection"
            ) from None
        if settings.tls_ca_file is None and _looks_like_tls_required(reason):
            raise OperatorError(
                f"Cassandra node at {settings.address} closed the connection: it may require client TLS; "
                "set CASSANDRA_TLS_CA_FILE to the CA certificate (PEM) it uses"
            ) from None
        raise NodeUnreachable(
            f"Cassandra node at {settings.address} is unreachable ({_short(reason)}); "
            "start it with `james-consistency cassandra start` or check CASSANDRA_HOST/CASSANDRA_PORT"
        ) from None
    if keyspace is not None:
        # Only checked: statements name their keyspace (a session keyspace is an anti-pattern with prepared ones).
        try:
            require_keyspace(session, keyspace)
        except OperatorError:
            close(session)
            raise
    return session


def require_keyspace(session, keyspace: str) -> None:
    row = session.execute(
        "SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = %s", (keyspace,)
    ).one()
    if row is None:
        raise OperatorError(
            f"keyspace '{keyspace}' does not exist on this node; create it with "
            f"`james-consistency schema --keyspace {keyspace}` or check the name"
        )


def table_names(session, keyspace: str) -> set[str]:
    rows = session.execute("SELECT table_name FROM system_schema.tables WHERE keyspace_name = %s", (keyspace,))
    return {row.table_name for row in rows}


def require_tables(session, keyspace: str, tables: list[str]) -> None:
    present = table_names(session, keyspace)
    missing = [table for table in tables if table.lower() not in present]
    if missing:
        raise OperatorError(f"keyspace '{keyspace}' has no table {', '.join(missing)}")


def primary_key(session, keyspace: str, table: str) -> tuple[list[str], list[str]]:
    """The table's partition key and clustering columns, each in key order (both empty: no such table)."""
    rows = session.execute(
        "SELECT column_name, kind, position FROM system_schema.columns WHERE keyspace_name = %s AND table_name = %s",
        (keyspace, table.lower()),
    )
    key: dict[str, list[tuple[int, str]]] = {"partition_key": [], "clustering": []}
    for row in rows:
        if row.kind in key:
            key[row.kind].append((row.position, row.column_name))
    return [name for _, name in sorted(key["partition_key"])], [name for _, name in sorted(key["clustering"])]


def column_types(session, keyspace: str, table: str) -> dict[str, str]:
    """The table's columns and their CQL types as the schema spells them (`set<text>`, `frozen<...>`)."""
    rows = session.execute(
        "SELECT column_name, type FROM system_schema.columns WHERE keyspace_name = %s AND table_name = %s",
        (keyspace, table.lower()),
    )
    return {row.column_name: row.type for row in rows}


def _looks_like_tls_required(reason: object) -> bool:
    text = str(reason)
    return any(
        hint in text for hint in ("Connection reset", "closed", "ConnectionShutdown", "EOF", "Connection refused by")
    )


def close(session) -> None:
    session.cluster.shutdown()


def _short(reason: object) -> str:
    text = str(reason)
    return text if len(text) < 160 else text[:157] + "..."
