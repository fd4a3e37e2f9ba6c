"""Spark with the Spark Cassandra Connector: an in-process session for tools, a spark-submit command for jobs."""

import os
import sys
from pathlib import Path

from james_consistency.cql import CassandraSettings
from james_consistency.paths import JOBS_DIR, LOG4J_CONFIG, spark_jars  # noqa: F401 (JOBS_DIR re-exported)

CASSANDRA_EXTENSIONS = "com.datastax.spark.connector.CassandraSparkExtensions"


def connector_conf(settings: CassandraSettings) -> dict[str, str]:
    """Connector settings; the password is passed through the environment of the job, not its command line."""
    conf = {
        "spark.sql.extensions": CASSANDRA_EXTENSIONS,
        "spark.cassandra.connection.host": settings.host,
        "spark.cassandra.connection.port": str(settings.port),
        # The default split (512 MB) would leave one core idle on small tables.
        "spark.cassandra.input.split.sizeInMB": "16",
        "spark.sql.shuffle.partitions": os.environ.get("SPARK_SHUFFLE_PARTITIONS", "8"),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
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


def local_session(app_name: str, settings: CassandraSettings, master: str | None = None):
    """An in-process SparkSession (local[*] unless SPARK_MASTER says otherwise) with the connector jars."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.appName(app_name)
        .master(master or os.environ.get("SPARK_MASTER", "local[*]"))
        .config("spark.jars", ",".join(str(jar) for jar in spark_jars()))
        .config("spark.driver.memory", os.environ.get("SPARK_DRIVER_MEMORY", "2g"))
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{LOG4J_CONFIG}")
    )
    for key, value in connector_conf(settings).items():
        builder = builder.config(key, value)
    for key, value in connector_secrets(settings).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(os.environ.get("SPARK_LOG_LEVEL", "WARN"))
    return session


def spark_submit_command(
    entry_point: Path, arguments: list[str], settings: CassandraSettings, master: str | None = None
) -> list[str]:
    """The spark-submit command line of the virtualenv's Spark, with the connector jars shipped by --jars."""
    spark_submit = Path(sys.executable).with_name("spark-submit")
    command = [
        str(spark_submit),
        "--master",
        master or os.environ.get("SPARK_MASTER", "local[*]"),
        "--jars",
        ",".join(str(jar) for jar in spark_jars()),
        "--driver-memory",
        os.environ.get("SPARK_DRIVER_MEMORY", "2g"),
        "--driver-java-options",
        f"-Dlog4j2.configurationFile=file:{LOG4J_CONFIG}",
    ]
    for key, value in connector_conf(settings).items():
        command += ["--conf", f"{key}={value}"]
    return [*command, str(entry_point), *arguments]


def refresh_connector_schema(spark) -> None:
    """Make the connector's cached driver session re-read the schema: a long-lived Spark session does not always
    see a keyspace created after it connected."""
    connector = spark._jvm.com.datastax.spark.connector.cql.CassandraConnector.apply(spark.sparkContext._conf._jconf)
    session = connector.openSession()
    try:
        session.refreshSchema()
    finally:
        session.close()
