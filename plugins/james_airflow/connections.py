"""Airflow connections -> what the Spark job needs to reach Cassandra.

The job (the reconcile entry point) reads its Cassandra settings from the environment
(`james_consistency.cassandra.connection.CassandraSettings.from_env`: the CASSANDRA_* settings of the catalogue) and the
connector from `spark.cassandra.*` conf. This module turns the Airflow connection (`cassandra_default` unless told
otherwise) into a `CassandraSettings`, then into both (`CassandraSettings.environment`,
`cassandra.connection.connector_connection_conf`), at task run time only: the password goes to the job's
environment, never to the spark-submit command line, a `--conf`, a rendered template or a log line.

The connection may come from the metadata database (scripts/airflow-init.sh creates `cassandra_default` for the
local node, without credentials), a secrets backend, or an `AIRFLOW_CONN_CASSANDRA_DEFAULT` environment variable,
e.g. `cassandra://james:${PASSWORD}@cassandra-1:9042?local_dc=datacenter1`.

The local datacenter is read from the extra as `local_dc`, or as the Cassandra provider's own
`load_balancing_policy_args.local_dc` (with `load_balancing_policy: DCAwareRoundRobinPolicy`).
"""

from __future__ import annotations

from james_consistency.cassandra.connection import CassandraSettings, connector_connection_conf

DEFAULT_CASSANDRA_CONN_ID = "cassandra_default"


def local_dc_from_extra(extra: dict) -> str | None:
    policy_args = extra.get("load_balancing_policy_args") or {}
    if not isinstance(policy_args, dict):
        policy_args = {}
    return extra.get("local_dc") or policy_args.get("local_dc") or None


def access_from_connection(connection) -> CassandraSettings:
    """The `CassandraSettings` of an Airflow `Connection` (of type cassandra, or any type with host/port/login).

    Of a comma-separated host list only the first is used: the job's Python driver sessions (re-checks, deletes)
    take one contact point, and any node of the cluster leads to the others."""
    hosts = [host.strip() for host in (connection.host or "").split(",") if host.strip()]
    extra = connection.extra_dejson or {}
    return CassandraSettings(
        host=hosts[0] if hosts else CassandraSettings.host,
        port=int(connection.port or CassandraSettings.port),
        username=connection.login or None,
        password=connection.password or None,
        local_dc=local_dc_from_extra(extra),
        tls_ca_file=extra.get("tls_ca_file") or None,
        tls_truststore=extra.get("tls_truststore") or None,
        tls_truststore_password=extra.get("tls_truststore_password") or None,
    )


def cassandra_access(conn_id: str = DEFAULT_CASSANDRA_CONN_ID) -> CassandraSettings:
    """Look the connection up (at task run time: never call this at DAG parse time)."""
    from airflow.sdk import BaseHook

    return access_from_connection(BaseHook.get_connection(conn_id))


def cassandra_environment(conn_id: str = DEFAULT_CASSANDRA_CONN_ID) -> tuple[dict[str, str], dict[str, str]]:
    """(the connector's `--conf` entries, environment) for the job from an Airflow Cassandra connection: the
    passwords are in the environment only (the job sets them inside its Spark driver)."""
    access = cassandra_access(conn_id)
    return connector_connection_conf(access), access.environment()
