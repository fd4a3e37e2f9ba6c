"""The product's JVM side (the package's jvm/, compiled into james-consistency-jvm.jar), reached from the driver."""

from functools import reduce

from py4j.java_gateway import JavaClass
from pyspark.sql import SparkSession

from james_consistency.errors import OperatorError


def jvm_class(spark: SparkSession, name: str):
    """A class of the product's JVM side, with a clear error when its jar is not on Spark's class path."""
    found = reduce(getattr, name.split("."), spark._jvm)
    if not isinstance(found, JavaClass):  # py4j names an unknown class as a package
        raise OperatorError(
            f"{name} is not on Spark's class path: pass runtime.connector_jars.spark_jars() to Spark (they end "
            "with the package's jvm/james-consistency-jvm.jar, which scripts/setup.sh compiles in a checkout)"
        )
    return found


def java_array(spark: SparkSession, java_type, values):
    array = spark.sparkContext._gateway.new_array(java_type, len(values))
    for position, value in enumerate(values):
        array[position] = value
    return array
