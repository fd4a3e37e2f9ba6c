"""PySpark and the connector: the versions agree, and a spark-submitted job reads and writes Cassandra."""

import re
import subprocess
from pathlib import Path

import pyspark
from james_consistency.runtime.connector_jars import spark_jars
from james_consistency.runtime.spark_env import spark_submit_command

COPY_TABLE = Path(__file__).resolve().parents[1] / "support" / "copy_table.py"


def test_pyspark_reports_the_version_of_its_spark_jars():
    jars = Path(pyspark.__file__).parent / "jars"
    core = next(jars.glob("spark-core_2.12-*.jar"))

    assert re.search(r"spark-core_2\.12-(.+)\.jar", core.name).group(1) == pyspark.__version__
    assert pyspark.__version__.startswith("3.5.")


def test_connector_jars_are_the_pinned_release_for_the_same_scala():
    names = [jar.name for jar in spark_jars()]

    assert "spark-cassandra-connector_2.12-3.5.1.jar" in names
    assert not any(name.startswith(("scala-library", "scala-reflect")) for name in names), "Spark brings Scala"


def test_submitted_job_reads_and_writes_through_the_connector(cql, cassandra_settings, new_keyspace):
    keyspace = new_keyspace("spark")
    cql.execute(f"CREATE KEYSPACE {keyspace} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}")
    for table in ("source", "target"):
        cql.execute(f"CREATE TABLE {keyspace}.{table} (id int PRIMARY KEY, tags set<text>, note text)")
    for i in range(50):
        cql.execute(f"INSERT INTO {keyspace}.source (id, tags, note) VALUES (%s, %s, %s)", (i, {f"t{i % 3}"}, f"n{i}"))

    command = spark_submit_command(COPY_TABLE, [keyspace, "source", "target"], cassandra_settings)
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)

    assert result.returncode == 0, result.stderr[-3000:]
    assert f"copied 50 rows from {keyspace}.source to {keyspace}.target" in result.stdout
    copied = {row.id: (set(row.tags), row.note) for row in cql.execute(f"SELECT * FROM {keyspace}.target")}
    assert copied == {i: ({f"t{i % 3}"}, f"n{i}") for i in range(50)}
    assert " INFO " not in result.stderr, "Spark's INFO logs are silenced by the package's conf/log4j2.properties"
