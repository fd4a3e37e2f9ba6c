"""A minimal connector job, used to prove a spark-submit round trip: copy one Cassandra table into another.

spark-submit ... tests/support/copy_table.py KEYSPACE SOURCE_TABLE TARGET_TABLE
"""

import sys

from pyspark.sql import SparkSession

if __name__ == "__main__":
    keyspace, source, target = sys.argv[1:4]
    spark = SparkSession.builder.appName("copy-table").getOrCreate()
    rows = spark.read.format("org.apache.spark.sql.cassandra").options(keyspace=keyspace, table=source).load()
    rows.write.format("org.apache.spark.sql.cassandra").options(keyspace=keyspace, table=target).mode("append").save()
    print(f"copied {rows.count()} rows from {keyspace}.{source} to {keyspace}.{target}")
    spark.stop()
