"""Spark with the Spark Cassandra Connector: an in-process session for tools, a spark-submit command for jobs."""

import importlib.util
import os
import shutil
import sys
from pathlib import Path

from james_consistency.cassandra.connection import CassandraSettings, connector_connection_conf, connector_secrets
from james_consistency.errors import OperatorError
from james_consistency.runtime.connector_jars import spark_jars
from james_consistency.runtime.package_data import entry_point, log4j_config, require_package_data
from james_consistency.runtime.paths import JARS_DIR, LOCAL_DIR
from james_consistency.settings import configured, setting

CASSANDRA_EXTENSIONS = "com.datastax.spark.connector.CassandraSparkExtensions"
# Spark's classes as the driver JVM loaded them, archived once by `build_class_archive` (scripts/setup.sh): a JVM
# mapping the archive starts Spark about 2 s sooner. A JVM that cannot use it (another JDK or Spark) ignores it.
CLASS_ARCHIVE = JARS_DIR / "spark-driver-classes.jsa"
# The executors' Python on the local standalone cluster: pyspark and the third-party packages, not this project.
LOCAL_WORKER_PYTHON = LOCAL_DIR / "worker-venv" / "bin" / "python"
# JVM classes PySpark names by their simple name on every call: `functions` for each Column function (F.col, F.lit,
# ...), `PythonUtils` for each list or map it hands over. Py4J resolves a simple name by trying java.lang, then each
# package PySpark imported, and each miss searches the jars of the classpath: about a tenth of the driver JVM's
# processor time in a repair of a small keyspace. Imported by their full names, they are found at once.
NAMED_BY_PYSPARK = ("org.apache.spark.sql.functions", "org.apache.spark.api.python.PythonUtils")


def is_cluster(master: str) -> bool:
    """A master whose executors are other processes (other machines): they need the code shipped."""
    return not master.startswith("local")


def cluster_shipping_conf(master: str) -> dict[str, str]:
    """What a job submitted to a cluster master needs beyond local[*]; empty for local masters.

    The product zip, built from the installed package at submit time (`product_zip`; SPARK_PY_FILES names another),
    goes to every executor with the job's files and on the executors' PYTHONPATH (relative: an executor fetches it
    into its working folder). Not `--py-files`: that also puts the zip first on the DRIVER's path, and the driver
    (which has the package installed) would then look for its package data (entry points, suites) inside the zip.
    The executors' Python is spark.pyspark.python
    (SPARK_EXECUTOR_PYTHON, else the local worker venv when there is one, else the executors' `python3`); the
    driver keeps this one."""
    if not is_cluster(master):
        return {}
    from james_consistency.runtime.product_zip import product_zip

    zip_path = setting("SPARK_PY_FILES") if configured("SPARK_PY_FILES") else str(product_zip())
    executor_python = setting("SPARK_EXECUTOR_PYTHON") or (
        str(LOCAL_WORKER_PYTHON) if LOCAL_WORKER_PYTHON.exists() else "python3"
    )
    return {
        "spark.files": zip_path,
        "spark.executorEnv.PYTHONPATH": Path(zip_path).name,
        "spark.pyspark.python": executor_python,
        "spark.pyspark.driver.python": sys.executable,
        "spark.executor.memory": setting("SPARK_EXECUTOR_MEMORY"),
    }


def local_driver_conf(master: str) -> dict[str, str]:
    """What a local[*] job's driver gets: the connector jars on the JVM's own class path too (classes the JVM's class
    loader reads can come from the class archive; those of --jars cannot). Empty for a cluster master."""
    if is_cluster(master):
        return {}
    return {"spark.driver.extraClassPath": os.pathsep.join(str(jar) for jar in spark_jars())}


def use_this_interpreter() -> None:
    """Point Spark at the interpreter and pyspark this code runs from, so a command run by its path (cron, systemd,
    another tool) works without `scripts/env.sh`: spark-submit otherwise looks for SPARK_HOME and the driver's Python
    with whatever `python3` the caller's PATH has. Values the caller set are kept."""
    os.environ.setdefault("SPARK_HOME", str(Path(importlib.util.find_spec("pyspark").origin).parent))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if not is_cluster(setting("SPARK_MASTER")):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")


def require_java() -> str:
    """The java Spark will start (JAVA_HOME's, else the PATH's), or an error that names what is missing."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        java = Path(java_home) / "bin" / "java"
        if not os.access(java, os.X_OK):
            raise OperatorError(f"no Java runtime: JAVA_HOME is {java_home} but {java} is not an executable")
        return str(java)
    java = shutil.which("java")
    if java is None:
        raise OperatorError("no Java runtime: java is not on PATH and JAVA_HOME is not set (Spark needs Java 17)")
    return java


def driver_java_options(quick_jit: bool = False) -> str:
    """The driver JVM's options: Spark's log configuration and, when built, the class archive. `quick_jit` (the
    spark-submit jobs) keeps the JVM to its quick compiler: a short job spends seconds of its 2 cores compiling with
    C2 code it runs once. JAMES_SPARK_FULL_JIT=1 gives C2 back (a long local[*] run on a big keyspace)."""
    options = [f"-Dlog4j2.configurationFile=file:{log4j_config()}"]
    if CLASS_ARCHIVE.is_file():
        options += [f"-XX:SharedArchiveFile={CLASS_ARCHIVE}", "-Xlog:cds=off", "-Xlog:cds+dynamic=off"]
    if quick_jit:
        options += quick_jit_options()
    return " ".join(options)


# Keeps a JVM to its quick compiler (C1).
QUICK_JIT_OPTION = "-XX:TieredStopAtLevel=1"


def quick_jit_options() -> list[str]:
    """The JVM option that keeps a JVM to its quick compiler, unless JAMES_SPARK_FULL_JIT is set."""
    return [] if setting("JAMES_SPARK_FULL_JIT") else [QUICK_JIT_OPTION]


def connector_conf(settings: CassandraSettings) -> dict[str, str]:
    """A job's Spark conf with the connector; the passwords are not in it (`connector_secrets`): they are passed
    through the environment of the job, not its command line."""
    return {
        "spark.sql.extensions": CASSANDRA_EXTENSIONS,
        **connector_connection_conf(settings),
        # The default split (512 MB) would leave one core idle on small tables.
        "spark.cassandra.input.split.sizeInMB": "16",
        "spark.sql.shuffle.partitions": str(setting("SPARK_SHUFFLE_PARTITIONS")),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
    }


def local_session(
    app_name: str, settings: CassandraSettings, master: str | None = None, java_options: tuple[str, ...] = ()
):
    """An in-process SparkSession (local[*] unless SPARK_MASTER says otherwise) with the connector jars; on a
    cluster master, its executors get the product zip as a submitted job's do. `java_options` are added to the
    driver JVM's."""
    from pyspark.sql import SparkSession

    use_this_interpreter()
    require_java()
    master = master or setting("SPARK_MASTER")
    builder = (
        SparkSession.builder.appName(app_name)
        .master(master)
        .config("spark.jars", ",".join(str(jar) for jar in spark_jars()))
        .config("spark.driver.memory", setting("SPARK_DRIVER_MEMORY"))
        .config("spark.driver.extraJavaOptions", " ".join([driver_java_options(), *java_options]))
    )
    conf = {**connector_conf(settings), **cluster_shipping_conf(master), **local_driver_conf(master)}
    for key, value in conf.items():
        builder = builder.config(key, value)
    for key, value in connector_secrets(settings).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(setting("SPARK_LOG_LEVEL"))
    import_named_classes(session)
    return session


def import_named_classes(session) -> None:
    """Resolve the classes PySpark names on every call (NAMED_BY_PYSPARK) directly in the session's JVM."""
    from py4j.java_gateway import java_import

    for name in NAMED_BY_PYSPARK:
        java_import(session.sparkContext._jvm, name)


def spark_submit_command(
    entry_point: Path, arguments: list[str], settings: CassandraSettings, master: str | None = None
) -> list[str]:
    """The spark-submit command line of the virtualenv's Spark, with the connector jars shipped by --jars."""
    use_this_interpreter()
    require_java()
    require_package_data()
    spark_submit = Path(sys.executable).with_name("spark-submit")
    master = master or setting("SPARK_MASTER")
    command = [
        str(spark_submit),
        "--master",
        master,
        "--jars",
        ",".join(str(jar) for jar in spark_jars()),
        "--driver-memory",
        setting("SPARK_DRIVER_MEMORY"),
        "--driver-java-options",
        driver_java_options(quick_jit=True),
    ]
    conf = {**connector_conf(settings), **cluster_shipping_conf(master), **local_driver_conf(master)}
    for key, value in conf.items():
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


def _class_archive_stamp() -> str:
    """What the archive is only good for: this JDK, this Spark and these jars (where they are: the JVM checks the
    class path the archive was made with)."""
    import subprocess

    from pyspark.version import __version__ as spark_version

    java = subprocess.run([require_java(), "-version"], capture_output=True, text=True, check=True)
    jars = " ".join(sorted(str(jar) for jar in spark_jars()))
    return f"{java.stderr.splitlines()[0]}; spark {spark_version}; {jars}\n"


def ensure_class_archive() -> Path | None:
    """Build CLASS_ARCHIVE unless it is there for this JDK and Spark; None when it already was."""
    use_this_interpreter()
    stamp_file = CLASS_ARCHIVE.with_suffix(".stamp")
    stamp = _class_archive_stamp()
    if CLASS_ARCHIVE.is_file() and stamp_file.is_file() and stamp_file.read_text() == stamp:
        return None
    print("setup: archiving the Spark driver's classes (one short local Spark job)")
    build_class_archive()
    stamp_file.write_text(stamp)
    return CLASS_ARCHIVE


def build_class_archive() -> Path:
    """Archive the classes a small local Spark SQL job loads (the connector's too, up to its connection, which fails:
    no Cassandra needed) into CLASS_ARCHIVE, for the driver JVMs of later jobs (Java's dynamic class data sharing).
    Written aside, then renamed into place."""
    import subprocess

    use_this_interpreter()
    partial = CLASS_ARCHIVE.with_name(f"{CLASS_ARCHIVE.name}.{os.getpid()}.partial")
    partial.parent.mkdir(parents=True, exist_ok=True)
    options = f"-Dlog4j2.configurationFile=file:{log4j_config()} -XX:ArchiveClassesAtExit={partial} -Xlog:cds=off"
    command = [
        str(Path(sys.executable).with_name("spark-submit")),
        "--master",
        "local[2]",
        "--driver-java-options",
        options + " -Xlog:cds+dynamic=off",
        "--driver-class-path",
        os.pathsep.join(str(jar) for jar in spark_jars()),
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        "spark.cassandra.connection.port=1",  # nothing listens: the connector loads its classes, then gives up
        "--conf",
        "spark.cassandra.connection.timeoutMS=500",
        str(entry_point("class_archive_warm_up.py")),
    ]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    os.replace(partial, CLASS_ARCHIVE)
    return CLASS_ARCHIVE


if __name__ == "__main__":
    ensure_class_archive()
