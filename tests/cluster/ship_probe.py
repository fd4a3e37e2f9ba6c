"""A spark-submit entry point for the shipping test: the executors run a function of the product code (pickled by
reference, so they must import james_consistency) and say which Python they are and where they found the package; the
application's id names the executors' folders on the workers."""

import json
import sys

from james_consistency.cassandra.schema import validate_keyspace_name
from pyspark.sql import SparkSession


def where_the_executor_found_it(_):
    import james_consistency

    return sys.executable, james_consistency.__file__


if __name__ == "__main__":
    spark = SparkSession.builder.appName("james-consistency-ship-probe").getOrCreate()
    context = spark.sparkContext
    names = context.parallelize(["Ring_One", "Ring_Two"], 2).map(validate_keyspace_name).collect()
    executors = sorted(set(context.parallelize(range(2), 2).map(where_the_executor_found_it).collect()))
    print("PROBE " + json.dumps({"names": names, "executors": executors, "application": context.applicationId}))
    spark.stop()
