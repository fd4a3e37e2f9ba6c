"""A run's work folder, a local path or a Hadoop filesystem URL (file://, hdfs://, s3a://), reached through the
driver JVM's Hadoop filesystem: small documents are read and written there without a Spark job."""

from pyspark.sql import SparkSession

from james_consistency.engine.jvm import jvm_class

WORK_FOLDERS_CLASS = "org.james.consistency.WorkFolders"


def _hadoop_path(spark: SparkSession, url: str):
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(url)
    return path, path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())


def exists(spark: SparkSession, url: str) -> bool:
    path, filesystem = _hadoop_path(spark, url)
    return filesystem.exists(path)


def delete(spark: SparkSession, url: str) -> None:
    path, filesystem = _hadoop_path(spark, url)
    if filesystem.exists(path):
        filesystem.delete(path, True)


def files_named(spark: SparkSession, url: str, name: str) -> list[tuple[str, int]]:
    """Every file called `name` below `url` (at any depth), with its modification time in milliseconds; none when
    `url` is not there. Walked on the JVM side (spark/jvm's WorkFolders) in one call."""
    path, filesystem = _hadoop_path(spark, url)
    if not filesystem.exists(path):
        return []
    found = []
    for line in jvm_class(spark, WORK_FOLDERS_CLASS).filesNamed(filesystem, path, name):
        modified_ms, file_url = line.split("\t", 1)
        found.append((file_url, int(modified_ms)))
    return found


def write_text(spark: SparkSession, url: str, text: str) -> None:
    """Write (or replace) one small file."""
    path, filesystem = _hadoop_path(spark, url)
    stream = filesystem.create(path, True)
    try:
        stream.write(bytearray(text.encode()))
    finally:
        stream.close()


def read_text(spark: SparkSession, url: str) -> str:
    """Read one small file; FileNotFoundError when it is not there."""
    path, filesystem = _hadoop_path(spark, url)
    if not filesystem.isFile(path):
        raise FileNotFoundError(url)
    stream = filesystem.open(path)
    try:
        return bytes(spark.sparkContext._jvm.org.apache.commons.io.IOUtils.toByteArray(stream)).decode()
    finally:
        stream.close()
