"""The product's engine as the bench calls it: the repair jobs in process, in the bench's own Spark session (what
spark-submit runs, without a JVM start per job). The bench's only door to the engine."""

from james_consistency.cassandra.cql import CassandraSettings
from james_consistency.engine.run import RunOptions
from james_consistency.engine.tables import read_table
from james_consistency.jobs.targets import resolve, run_target

__all__ = ["read_table", "run_job", "target_spec"]


def run_job(spark, settings: CassandraSettings, target: str, keyspace: str, mode: str, **options) -> dict:
    """One check, repair or verify of `target` on `keyspace`; its report."""
    return run_target(spark, settings, RunOptions(target, keyspace, mode=mode, **options))


def target_spec(settings: CassandraSettings, target: str, keyspace: str):
    """The projection spec the engine repairs `target` with on `keyspace`."""
    return resolve(settings, RunOptions(target, keyspace)).spec
