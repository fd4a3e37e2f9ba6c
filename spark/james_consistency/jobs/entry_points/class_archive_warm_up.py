"""A small local Spark SQL job whose loaded classes `spark_env.build_class_archive` archives for later driver JVMs:
the session, a shuffle, a join, observations, a parquet round trip, a text write, and the Cassandra connector up to
its connection (to a port where nothing listens), as a repair job uses them."""

import tempfile

from pyspark.sql import Observation, SparkSession
from pyspark.sql import functions as F

if __name__ == "__main__":
    spark = SparkSession.builder.appName("james-consistency-class-archive").getOrCreate()
    rows = spark.createDataFrame([(i % 7, i, str(i)) for i in range(200)], "k int, v long, s string")
    counted = Observation("rows")
    per_key = rows.observe(counted, F.count(F.lit(1)).alias("n")).groupBy("k").agg(F.collect_list("s").alias("l"))
    joined = rows.join(per_key, "k", "full_outer").where(F.size("l") > 1)
    with tempfile.TemporaryDirectory() as folder:
        joined.write.mode("overwrite").parquet(folder + "/rows")
        spark.read.parquet(folder + "/rows").repartition(2).groupBy("k").count().collect()
        spark.createDataFrame([("x",)], "value string").coalesce(1).write.mode("overwrite").text(folder + "/text")
    try:
        spark.read.format("org.apache.spark.sql.cassandra").options(keyspace="system", table="local").load().count()
    except Exception:  # noqa: BLE001 - expected: no Cassandra here, only its classes were wanted
        pass
    spark.stop()
