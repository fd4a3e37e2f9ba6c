"""The jars every Spark job gets (`spark_jars`): the Spark Cassandra Connector with its dependencies, then the
product's JVM side (the package's jvm/ jar). The connector's come from the first of:

1. JAMES_SPARK_JARS_DIR, a folder the operator filled (a site without Maven Central): nothing is downloaded;
2. `<local dir>/jars/spark` when it holds the connector: a checkout's set-up or the Airflow image resolved it there
   with Maven (jars/spark/pom.xml);
3. Spark's own resolution of CONNECTOR_PACKAGE (spark.jars.packages) from Maven Central into the Ivy folder
   JAMES_SPARK_IVY_DIR, the first time a job needs it; the jars Spark retrieved are listed there (`resolved/`).

Resolved once, then shipped by path like a folder's, rather than by each job's spark.jars.packages: Ivy's resolution
cost a small job 4 to 5 s (about 2 s of processor time) on 2 cores even with a warm cache, parallel jobs would
retrieve into one folder at once, and jars at fixed paths keep the driver's class path and its class archive
(spark_env) as they are with a folder.
"""

import fcntl
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

from james_consistency.errors import OperatorError
from james_consistency.runtime.package_data import jvm_jar, require_package_data
from james_consistency.runtime.paths import LOCAL_DIR, SPARK_JARS_DIR
from james_consistency.settings import setting

# The connector for pip's pyspark 3.5 (Scala 2.12); jars/spark/pom.xml pins the same release (a unit test holds them
# together), and the JVM side is compiled against it.
CONNECTOR_PACKAGE = "com.datastax.spark:spark-cassandra-connector_2.12:3.5.1"
# What Spark 3.5 ships itself, left out so that Spark's own versions win (the pom's excludeArtifactIds).
SPARK_PROVIDED = (
    "org.scala-lang:scala-library",
    "org.scala-lang:scala-reflect",
    "org.slf4j:slf4j-api",
    "io.dropwizard.metrics:metrics-core",
    "org.apache.commons:commons-lang3",
    "com.thoughtworks.paranamer:paranamer",
)
# The connector's own jar, as Maven names it (spark-cassandra-connector_2.12-3.5.1.jar) or Ivy (com.datastax.spark_...).
CONNECTOR_JAR = re.compile(r"spark-cassandra-connector(-assembly)?_2\.12-[^/]*\.jar$")
MAVEN_CENTRAL_HOST = "repo1.maven.org"


def spark_jars() -> list[Path]:
    """The connector's jars, then the product's JVM jar, which the package ships (a broken install is named before
    anything is resolved)."""
    require_package_data()
    return [*connector_jars(), jvm_jar()]


def connector_jars() -> list[Path]:
    """The Spark Cassandra Connector and its dependencies: the configured folder's, the local folder's, or Spark's
    resolution from Maven Central (once)."""
    if setting("JAMES_SPARK_JARS_DIR"):
        folder = Path(setting("JAMES_SPARK_JARS_DIR"))
        jars = folder_jars(folder)
        if not jars:
            raise OperatorError(
                f"JAMES_SPARK_JARS_DIR={folder} holds no Spark Cassandra Connector jar: put {CONNECTOR_PACKAGE} and "
                "its dependencies there (docs/deployment.md), or unset it to resolve them from Maven Central"
            )
        return jars
    return folder_jars(SPARK_JARS_DIR) or resolved_jars(ivy_dir())


def folder_jars(folder: Path) -> list[Path]:
    """The jars of `folder` when one of them is the connector's, else none (a left-over product jar is ignored)."""
    jars = sorted(jar for jar in folder.glob("*.jar") if jar.name != jvm_jar().name)
    return jars if any(CONNECTOR_JAR.search(jar.name) for jar in jars) else []


def ivy_dir() -> Path:
    return Path(setting("JAMES_SPARK_IVY_DIR") or LOCAL_DIR / "ivy")


def resolved_list(ivy: Path) -> Path:
    """Where the jars Spark resolved for CONNECTOR_PACKAGE are listed, one path a line."""
    return ivy / "resolved" / f"{CONNECTOR_PACKAGE.replace(':', '_')}.txt"


def resolved_jars(ivy: Path) -> list[Path]:
    """The jars Spark resolved for the connector into `ivy`, resolving them first when they are not all there (one
    process at a time: the others wait, then read its list)."""
    listed = resolved_list(ivy)
    listed.parent.mkdir(parents=True, exist_ok=True)
    with open(listed.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        jars = [Path(line) for line in listed.read_text().splitlines()] if listed.is_file() else []
        if not jars or not all(jar.is_file() for jar in jars):
            print(f"resolving {CONNECTOR_PACKAGE} with Spark into {ivy} (once)", file=sys.stderr, flush=True)
            jars = resolve_with_spark(ivy)
            listed.write_text("".join(f"{jar}\n" for jar in jars))
    return jars


def resolution_conf(ivy: Path) -> dict[str, str]:
    """Spark's conf resolving the connector into `ivy`: spark.jars.packages, without what Spark ships."""
    return {
        "spark.jars.packages": CONNECTOR_PACKAGE,
        "spark.jars.excludes": ",".join(SPARK_PROVIDED),
        "spark.jars.ivy": str(ivy),
    }


def resolve_with_spark(ivy: Path) -> list[Path]:
    """Spark's own resolution (spark-submit resolves spark.jars.packages with Ivy: ~/.m2, the Ivy cache, then Maven
    Central), run in a child process that starts a Spark JVM, and no SparkContext, then prints the jars Spark
    retrieved; an OperatorError in one line when it fails."""
    environment = {**os.environ, "PYSPARK_SUBMIT_ARGS": "pyspark-shell"}
    # -P: the package as installed, whatever the working folder holds.
    command = [sys.executable, "-P", "-m", "james_consistency.runtime.connector_jars", str(ivy)]
    try:
        done = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=600, check=False)
    except subprocess.TimeoutExpired:
        done = subprocess.CompletedProcess(command, 1, "", "Spark's resolution did not end in 600 s")
    printed = [line for line in done.stdout.splitlines() if line.startswith("spark.jars=")]
    if done.returncode != 0 or not printed:
        raise OperatorError(
            f"could not resolve the Spark Cassandra Connector ({CONNECTOR_PACKAGE}) with Spark into {ivy}: "
            f"{resolution_failure(done.stdout + done.stderr)}; a site without Maven Central sets "
            "JAMES_SPARK_JARS_DIR to a folder of its jars (docs/deployment.md)"
        )
    return [Path(unquote(urlparse(uri).path)) for uri in printed[-1].removeprefix("spark.jars=").split(",") if uri]


def resolution_failure(output: str) -> str:
    """Why Spark's resolution failed, in a few words: Maven Central unreachable, else what Ivy left unresolved, else
    the output's last line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in lines:
        access = re.search(rf"Server access error at url \S*{re.escape(MAVEN_CENTRAL_HOST)}\S* \((.+)\)", line)
        if access:
            return f"Maven Central is unreachable ({access.group(1)})"
        if re.search(rf"Host {re.escape(MAVEN_CENTRAL_HOST)} not found", line):
            return f"Maven Central is unreachable (host {MAVEN_CENTRAL_HOST} not found)"
    unresolved = next((line for line in lines if "unresolved dependency" in line), None)
    if unresolved:
        return re.sub(r".*\[(unresolved dependency: .*)\].*", r"\1", unresolved)
    return lines[-1] if lines else "spark-submit printed nothing"


def _print_resolution(ivy: Path) -> None:
    """In the child process: start Spark's JVM as PySpark does (spark-submit, which resolves the packages before it
    runs anything), print the jars it put in spark.jars, and let the JVM go (it ends with this process's stdin)."""
    from pyspark import SparkConf
    from pyspark.java_gateway import launch_gateway

    gateway = launch_gateway(SparkConf(loadDefaults=False).setAll(resolution_conf(ivy).items()))
    print(f"spark.jars={gateway.jvm.System.getProperty('spark.jars') or ''}", flush=True)


if __name__ == "__main__":
    _print_resolution(Path(sys.argv[1]))
