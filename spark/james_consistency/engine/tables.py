"""Cassandra tables as Spark reads them, through the Spark Cassandra Connector: whole scans, direct joins, and reads
of given keys a partition at a time (on the JVM side, through the connector's sessions)."""

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from james_consistency.cassandra.cql import CassandraSettings, close, connect, primary_key
from james_consistency.engine.jvm import java_array, jvm_class
from james_consistency.errors import OperatorError
from james_consistency.runtime.spark_env import refresh_connector_schema

PARTITION_READ_CLASS = "org.james.consistency.PartitionRead"
# Values of the last clustering column one request asks for, and the requests a Spark task has in flight.
KEYS_PER_REQUEST = 100
REQUESTS_IN_FLIGHT = 16
PAGE_SIZE = 5000


def read_table(spark: SparkSession, keyspace: str, table: str, columns: tuple[str, ...] | None = None) -> DataFrame:
    """A full scan of a Cassandra table through the connector, only the named columns (all of them: None).

    A long-lived Spark session's connector may not have seen a keyspace created after it connected (already
    checked with CQL by `resolve_target`): its schema metadata is refreshed once before giving up.
    """
    from pyspark.errors import AnalysisException

    def load():
        loaded = spark.read.format("org.apache.spark.sql.cassandra").options(keyspace=keyspace, table=table.lower())
        return loaded.load() if columns is None else loaded.load().select(*columns)

    try:
        return load()
    except AnalysisException:
        refresh_connector_schema(spark)
    try:
        return load()
    except AnalysisException as error:
        raise OperatorError(f"cannot read {keyspace}.{table} through the connector: {error}") from None


def direct_join_table(spark: SparkSession, keyspace: str, table: str, consistency: str) -> DataFrame:
    """The table as the right side of a join the connector turns into one read per key (its direct join)."""
    return (
        spark.read.format("org.apache.spark.sql.cassandra")
        .options(keyspace=keyspace, table=table.lower(), directJoinSetting="on")
        .option("spark.cassandra.input.consistency.level", consistency)
        .load()
    )


def partition_read_key(
    settings: CassandraSettings, keyspace: str, table: str, key: tuple[str, ...]
) -> tuple[list[str], str] | None:
    """How rows of the table at `key` (columns naming whole rows) are read a partition at a time: the columns a
    request fixes (the partition key and the clustering columns but the last) and the one it asks several values of
    (the last clustering column). None when `key` is not the table's whole primary key, or has no clustering column
    (one row a partition: nothing to group)."""
    session = connect(settings)
    try:
        partition, clustering = primary_key(session, keyspace, table)
    finally:
        close(session)
    if not clustering or sorted(key) != sorted([*partition, *clustering]):
        return None
    return [*partition, *clustering[:-1]], clustering[-1]


def read_by_partition(
    spark: SparkSession,
    keyspace: str,
    table: str,
    read_key: tuple[list[str], str],
    keys: DataFrame,
    columns: tuple[str, ...],
    consistency: str,
) -> DataFrame:
    """The `columns` of the table's rows at the keys of `keys`, read one partition at a time as `read_key`
    (partition_read_key) says: `... WHERE <fixed columns> = ? AND <last clustering column> IN ?` (jvm/PartitionRead).
    A point read inside a large partition (a mailbox's messageIdTable rows) costs Cassandra about what reading tens
    of its rows in one request does, and the connector's direct join sends a request per key."""
    fixed, last = read_key
    parallelism = max(spark.sparkContext.defaultParallelism, 1)
    grouped = (
        keys.dropna()  # a null key component names no row (and cannot be bound)
        .groupBy(*fixed)
        .agg(F.collect_set(last).alias(last))
        .repartition(parallelism)  # a small night's groups would otherwise be read by one task
    )
    schema = read_table(spark, keyspace, table, columns).schema
    frame = jvm_class(spark, PARTITION_READ_CLASS).read(
        spark._jsparkSession,
        grouped._jdf,
        keyspace,
        table.lower(),
        java_array(spark, spark._jvm.String, fixed),
        last,
        spark._jsparkSession.parseDataType(schema.json()),
        consistency,
        PAGE_SIZE,
        KEYS_PER_REQUEST,
        REQUESTS_IN_FLIGHT,
    )
    return DataFrame(frame, spark)
