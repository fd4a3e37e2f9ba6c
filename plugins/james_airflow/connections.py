"""Airflow connections -> what the Spark job needs to reach Cassandra.

The job (spark/jobs/reconcile.py) reads its Cassandra settings from the environment
(`james_consistency.cql.CassandraSettings.from_env`: CASSANDRA_HOST, CASSANDRA_PORT, CASSANDRA_USERNAME,
CASSANDRA_PASSWORD, CASSANDRA_LOCAL_DC) and the connector from `spark.cassandra.*` conf. This module turns the
Airflow connection (`cassandra_default` unless told otherwise) into both, at task run time only: the password goes to
the job's environment, never to the spark-submit command line, a `--conf`, a rendered template or a log line.

The connection may come from the metadata database (scripts/airflow-init.sh creates `cassandra_default` for the
local node, without credentials), a secrets backend, or an `AIRFLOW_CONN_CASSANDRA_DEFAULT` environment variable,
e.g. `cassandra://james:${PASSWORD}@cassandra-1:9042?local_dc=datacenter1`.

The local datacenter is read from the extra as `local_dc`, or as the Cassandra provider's own
`load_balancing_policy_args.local_dc` (with `load_balancing_policy: DCAwareRoundRobinPolicy`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_CASSANDRA_CONN_ID = "cassandra_default"
DEFAULT_PORT = 9042


@dataclass(frozen=True)
class CassandraAccess:
    """Where and as whom the job reaches Cassandra (what `CassandraSettings.from_env` reads back)."""

    host: str
    port: int = DEFAULT_PORT
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    local_dc: str | None = None
    # Client TLS, from the connection's extra: `tls_ca_file` (PEM, for the Python driver), `tls_truststore` (PKCS12,
    # for the connector) and `tls_truststore_password` (environment only, like the password).
    tls_ca_file: str | None = None
    tls_truststore: str | None = None
    tls_truststore_password: str | None = field(default=None, repr=False)

    def environment(self) -> dict[str, str]:
        """The job's environment variables (the only place the password travels)."""
        env = {"CASSANDRA_HOST": self.host, "CASSANDRA_PORT": str(self.port)}
        if self.local_dc:
            env["CASSANDRA_LOCAL_DC"] = self.local_dc
        if self.username:
            env["CASSANDRA_USERNAME"] = self.username
        if self.password:
            env["CASSANDRA_PASSWORD"] = self.password
        if self.tls_ca_file:
            env["CASSANDRA_TLS_CA_FILE"] = self.tls_ca_file
        if self.tls_truststore:
            env["CASSANDRA_TLS_TRUSTSTORE"] = self.tls_truststore
        if self.tls_truststore_password:
            env["CASSANDRA_TLS_TRUSTSTORE_PASSWORD"] = self.tls_truststore_password
        return env

    def spark_conf(self) -> dict[str, str]:
        """The connector's `--conf` entries: no password (the job sets it from its environment)."""
        conf = {
            "spark.cassandra.connection.host": self.host,
            "spark.cassandra.connection.port": str(self.port),
        }
        if self.local_dc:
            conf["spark.cassandra.connection.localDC"] = self.local_dc
        if self.username:
            conf["spark.cassandra.auth.username"] = self.username
        if self.tls_truststore:
            conf["spark.cassandra.connection.ssl.enabled"] = "true"
            conf["spark.cassandra.connection.ssl.trustStore.path"] = self.tls_truststore
            conf["spark.cassandra.connection.ssl.trustStore.type"] = "PKCS12"
        return conf


def local_dc_from_extra(extra: dict) -> str | None:
    policy_args = extra.get("load_balancing_policy_args") or {}
    if not isinstance(policy_args, dict):
        policy_args = {}
    return extra.get("local_dc") or policy_args.get("local_dc") or None


def access_from_connection(connection) -> CassandraAccess:
    """A `CassandraAccess` from an Airflow `Connection` (of type cassandra, or any type with host/port/login).

    Of a comma-separated host list only the first is used: the job's Python driver sessions (re-checks, deletes)
    take one contact point, and any node of the cluster leads to the others."""
    hosts = [host.strip() for host in (connection.host or "").split(",") if host.strip()]
    extra = connection.extra_dejson or {}
    return CassandraAccess(
        host=hosts[0] if hosts else "127.0.0.1",
        port=int(connection.port or DEFAULT_PORT),
        username=connection.login or None,
        password=connection.password or None,
        local_dc=local_dc_from_extra(extra),
        tls_ca_file=extra.get("tls_ca_file") or None,
        tls_truststore=extra.get("tls_truststore") or None,
        tls_truststore_password=extra.get("tls_truststore_password") or None,
    )


def cassandra_access(conn_id: str = DEFAULT_CASSANDRA_CONN_ID) -> CassandraAccess:
    """Look the connection up (at task run time: never call this at DAG parse time)."""
    from airflow.sdk import BaseHook

    return access_from_connection(BaseHook.get_connection(conn_id))


def cassandra_environment(conn_id: str = DEFAULT_CASSANDRA_CONN_ID) -> tuple[dict[str, str], dict[str, str]]:
    """(Spark conf, environment) for the job from an Airflow Cassandra connection."""
    access = cassandra_access(conn_id)
    return access.spark_conf(), access.environment()
