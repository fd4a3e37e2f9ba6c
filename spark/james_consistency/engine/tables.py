"""Cassandra tables as Spark reads them, through the Spark Cassandra Connector: whole scans and direct joins."""

from pyspark.sql import DataFrame, SparkSession

from james_consistency.errors import OperatorError
from james_consistency.spark_env import refresh_connector_schema


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
