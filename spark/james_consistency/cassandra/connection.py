"""How the jobs reach Cassandra: `CassandraSettings` (read from the CASSANDRA_* settings of the catalogue, and given
back as a job's environment), and what the Spark Cassandra Connector is told about it.

The connector's `spark.cassandra.*` settings are built here only, for the CLI's spark-submit, the in-process
sessions and the Airflow operators alike: `connector_connection_conf` may go on a command line, `connector_secrets`
(the passwords) never does: the job sets them inside its Spark driver from its environment.

No Cassandra driver, Spark or Airflow import: the Airflow side uses this module at DAG parse time.
"""

from dataclasses import dataclass, field

from james_consistency.settings import default, setting


@dataclass(frozen=True)
class CassandraSettings:
    """How to reach Cassandra. Credentials come from the environment (or an Airflow connection), never from code."""

    host: str = default("CASSANDRA_HOST")
    port: int = default("CASSANDRA_PORT")
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    local_dc: str | None = None
    # Client TLS: the CA certificate (PEM) the Python driver trusts, and the same trust as a PKCS12 truststore for
    # the Spark connector (its password, like the user's, travels only by environment).
    tls_ca_file: str | None = None
    tls_truststore: str | None = None
    tls_truststore_password: str | None = field(default=None, repr=False)

    @classmethod
    def from_env(cls, host: str | None = None, port: int | None = None) -> "CassandraSettings":
        """The CASSANDRA_* settings; `host` and `port` (the command line's) take precedence."""
        return cls(
            host=host or setting("CASSANDRA_HOST"),
            port=int(port or setting("CASSANDRA_PORT")),
            username=setting("CASSANDRA_USERNAME"),
            password=setting("CASSANDRA_PASSWORD"),
            local_dc=setting("CASSANDRA_LOCAL_DC"),
            tls_ca_file=setting("CASSANDRA_TLS_CA_FILE"),
            tls_truststore=setting("CASSANDRA_TLS_TRUSTSTORE"),
            tls_truststore_password=setting("CASSANDRA_TLS_TRUSTSTORE_PASSWORD"),
        )

    def environment(self) -> dict[str, str]:
        """The CASSANDRA_* variables `from_env` reads back: a job's environment (the only place passwords travel)."""
        values = {
            "CASSANDRA_HOST": self.host,
            "CASSANDRA_PORT": str(self.port),
            "CASSANDRA_LOCAL_DC": self.local_dc,
            "CASSANDRA_USERNAME": self.username,
            "CASSANDRA_PASSWORD": self.password,
            "CASSANDRA_TLS_CA_FILE": self.tls_ca_file,
            "CASSANDRA_TLS_TRUSTSTORE": self.tls_truststore,
            "CASSANDRA_TLS_TRUSTSTORE_PASSWORD": self.tls_truststore_password,
        }
        return {name: value for name, value in values.items() if value}

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


def connector_connection_conf(settings: CassandraSettings) -> dict[str, str]:
    """The connector's `spark.cassandra.*` settings to reach Cassandra, without a password: fit for `--conf`."""
    conf = {
        "spark.cassandra.connection.host": settings.host,
        "spark.cassandra.connection.port": str(settings.port),
    }
    if settings.local_dc:
        conf["spark.cassandra.connection.localDC"] = settings.local_dc
    if settings.username:
        conf["spark.cassandra.auth.username"] = settings.username
    if settings.tls_truststore:
        conf["spark.cassandra.connection.ssl.enabled"] = "true"
        conf["spark.cassandra.connection.ssl.trustStore.path"] = settings.tls_truststore
        conf["spark.cassandra.connection.ssl.trustStore.type"] = "PKCS12"
    return conf


def connector_secrets(settings: CassandraSettings) -> dict[str, str]:
    """The connector settings that are secrets: set inside the Spark driver from the environment, never passed on
    a command line (Spark redacts `password` keys in its UI and event logs)."""
    secrets = {}
    if settings.password:
        secrets["spark.cassandra.auth.password"] = settings.password
    if settings.tls_truststore_password:
        secrets["spark.cassandra.connection.ssl.trustStore.password"] = settings.tls_truststore_password
    return secrets
