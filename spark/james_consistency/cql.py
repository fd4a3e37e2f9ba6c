"""Python driver sessions: connection settings from the environment, clear errors when the node is not there."""

import os
from dataclasses import dataclass, field

from cassandra import ConsistencyLevel
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile, NoHostAvailable
from cassandra.policies import RoundRobinPolicy
from cassandra.query import named_tuple_factory

from james_consistency.errors import OperatorError


@dataclass(frozen=True)
class CassandraSettings:
    """How to reach Cassandra. Credentials come from the environment (or an Airflow connection), never from code."""

    host: str = "127.0.0.1"
    port: int = 9042
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    local_dc: str | None = None

    @classmethod
    def from_env(cls, host: str | None = None, port: int | None = None) -> "CassandraSettings":
        return cls(
            host=host or os.environ.get("CASSANDRA_HOST", "127.0.0.1"),
            port=int(port or os.environ.get("CASSANDRA_PORT", 9042)),
            username=os.environ.get("CASSANDRA_USERNAME") or None,
            password=os.environ.get("CASSANDRA_PASSWORD") or None,
            local_dc=os.environ.get("CASSANDRA_LOCAL_DC") or None,
        )

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


def connect(settings: CassandraSettings, keyspace: str | None = None, timeout: float = 10.0, row_factory=None):
    """A driver session, or an OperatorError naming the unreachable node or the unknown keyspace."""
    auth = None
    if settings.username:
        auth = PlainTextAuthProvider(username=settings.username, password=settings.password or "")
    profile = ExecutionProfile(
        load_balancing_policy=RoundRobinPolicy(),
        consistency_level=ConsistencyLevel.LOCAL_QUORUM,
        request_timeout=60.0,
        row_factory=row_factory or named_tuple_factory,
    )
    cluster = Cluster(
        [settings.host],
        port=settings.port,
        auth_provider=auth,
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        connect_timeout=timeout,
        control_connection_timeout=timeout,
        protocol_version=5,
    )
    try:
        session = cluster.connect()
    except NoHostAvailable as error:
        cluster.shutdown()
        reason = next(iter(error.errors.values()), error)
        raise OperatorError(
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


def close(session) -> None:
    session.cluster.shutdown()


def _short(reason: object) -> str:
    text = str(reason)
    return text if len(text) < 160 else text[:157] + "..."
