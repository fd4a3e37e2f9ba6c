"""A local Spark standalone cluster (local kit): a master and two workers from pyspark's own jars, on loopback.

`james-consistency spark start|stop|status`. The workers run the Python of .local/worker-venv (pyspark and the
third-party packages, not this project), so a job only works there when it ships its own code (the zip of the
installed package, `runtime.product_zip`). State (pid files, logs, work folders, the daemons' Spark conf
folder) in .local/spark-cluster.

Its JVMs (the daemons and the executors the workers launch) keep to the quick compiler, as the driver of a
spark-submit job does: the jobs on this machine are short and share its cores, and their executors spent seconds
compiling with C2 code they ran once (a message_consistency DAG run on this cluster took about a fifth less CPU
without). JAMES_SPARK_FULL_JIT=1 at start gives them C2 back (a bench on a big keyspace).
"""

import importlib.util
import os
import time
from dataclasses import dataclass
from pathlib import Path

from james_consistency.errors import OperatorError
from james_consistency.runtime.paths import LOCAL_DIR
from james_consistency.runtime.spark_env import LOCAL_WORKER_PYTHON, quick_jit_options, require_java

from james_consistency_kit.processes import DetachedService, alive, wait_for_port

CLUSTER_HOME = LOCAL_DIR / "spark-cluster"
CONF_DIR = CLUSTER_HOME / "conf"  # the daemons' SPARK_CONF_DIR
MASTER_HOST = "127.0.0.1"
MASTER_PORT = 7077
MASTER_URL = f"spark://{MASTER_HOST}:{MASTER_PORT}"
MASTER_UI_PORT = 8181
WORKER_UI_BASE_PORT = 8181  # + worker number
WORKERS = 2
WORKER_CORES = 1
WORKER_MEMORY = "1g"
DAEMON_MEMORY = "256m"  # the master's and workers' own JVMs


@dataclass(frozen=True)
class Daemon:
    """One standalone daemon (the master or a worker): its command line, pid file and log."""

    name: str
    arguments: tuple[str, ...]
    ui_port: int

    @property
    def service(self) -> DetachedService:
        return DetachedService(CLUSTER_HOME / f"{self.name}.pid", "org.apache.spark.deploy")

    @property
    def log_file(self) -> Path:
        return CLUSTER_HOME / "logs" / f"{self.name}.log"

    def pid(self) -> int | None:
        return self.service.pid()

    def start(self, environment: dict[str, str]) -> int:
        pid = self.pid()
        if pid is not None:
            return pid
        # spark-class execs the JVM: the child's pid is the daemon's.
        command = [str(Path(environment["SPARK_HOME"]) / "bin" / "spark-class"), *self.arguments]
        return self.service.start(command, self.log_file, cwd=CLUSTER_HOME, env=environment)

    def stop(self, timeout: float = 30.0) -> bool:
        return self.service.stop(grace_seconds=timeout)


def master() -> Daemon:
    return Daemon(
        "master",
        (
            "org.apache.spark.deploy.master.Master",
            "--host", MASTER_HOST, "--port", str(MASTER_PORT), "--webui-port", str(MASTER_UI_PORT),
        ),
        MASTER_UI_PORT,
    )  # fmt: skip


def worker(number: int) -> Daemon:
    return Daemon(
        f"worker{number}",
        (
            "org.apache.spark.deploy.worker.Worker",
            "--host", MASTER_HOST, "--cores", str(WORKER_CORES), "--memory", WORKER_MEMORY,
            "--webui-port", str(WORKER_UI_BASE_PORT + number),
            "--work-dir", str(CLUSTER_HOME / f"worker{number}"),
            MASTER_URL,
        ),
        WORKER_UI_BASE_PORT + number,
    )  # fmt: skip


def daemons() -> list[Daemon]:
    return [master(), *(worker(number) for number in range(1, WORKERS + 1))]


def daemon_environment() -> dict[str, str]:
    """The daemons' environment: pyspark's SPARK_HOME, loopback only, and the worker venv's Python; without this
    project's virtualenv or source on any path the executors could import it from."""
    if not LOCAL_WORKER_PYTHON.exists():
        raise OperatorError(f"{LOCAL_WORKER_PYTHON} is missing: run scripts/setup.sh (it creates the worker venv)")
    java = require_java()
    keep = ("HOME", "LANG", "LC_ALL", "JAVA_HOME", "TMPDIR", "USER")
    environment = {name: os.environ[name] for name in keep if name in os.environ}
    environment.update(
        PATH=f"{LOCAL_WORKER_PYTHON.parent}:{Path(java).parent}:/usr/bin:/bin",
        SPARK_HOME=str(Path(importlib.util.find_spec("pyspark").origin).parent),
        SPARK_LOCAL_IP=MASTER_HOST,
        SPARK_DAEMON_MEMORY=DAEMON_MEMORY,
        SPARK_LOG_DIR=str(CLUSTER_HOME / "logs"),
        PYSPARK_PYTHON=str(LOCAL_WORKER_PYTHON),
        SPARK_CONF_DIR=str(CONF_DIR),
    )
    return environment


def write_java_options() -> None:
    """The options every JVM of the cluster starts with: Spark's launcher reads `java-opts` in SPARK_CONF_DIR for the
    daemons, and the workers read it again for each executor they launch."""
    CONF_DIR.mkdir(parents=True, exist_ok=True)
    (CONF_DIR / "java-opts").write_text(" ".join(quick_jit_options()) + "\n")


def start(timeout: float = 60.0) -> dict:
    """Start the master, wait for its port, then the workers; return once every worker registered."""
    CLUSTER_HOME.mkdir(parents=True, exist_ok=True)
    environment = daemon_environment()
    write_java_options()
    the_master = master()
    launched = the_master.start(environment)
    deadline = time.monotonic() + timeout
    # Waits on the process launched, not on the pid file's reading: spark-class passes through a shell and a
    # launcher JVM before it execs the master's, and a reading between them must not end the wait.
    if not wait_for_port(MASTER_HOST, MASTER_PORT, timeout, still_starting=lambda: alive(launched)):
        raise OperatorError(f"the Spark master did not listen on {MASTER_URL}; log: {the_master.log_file}")
    workers = [worker(number) for number in range(1, WORKERS + 1)]
    for each in workers:
        each.start(environment)
    while alive_workers() < WORKERS:
        if time.monotonic() > deadline:
            raise OperatorError(f"{alive_workers()} of {WORKERS} workers registered with {MASTER_URL} in time")
        time.sleep(0.5)
    return status()


def alive_workers() -> int:
    """The workers the master counts ALIVE (its web UI's JSON)."""
    import json
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://{MASTER_HOST}:{MASTER_UI_PORT}/json/", timeout=2) as answer:
            state = json.load(answer)
    except OSError:
        return 0
    return sum(1 for each in state.get("workers", []) if each.get("state") == "ALIVE")


def stop() -> list[str]:
    """Stop the workers, then the master; the names of the daemons that were running."""
    return [each.name for each in reversed(daemons()) if each.stop()]


def status() -> dict:
    return {
        "master_url": MASTER_URL,
        "alive_workers": alive_workers(),
        "daemons": [
            {"name": each.name, "pid": each.pid(), "ui": f"http://{MASTER_HOST}:{each.ui_port}"} for each in daemons()
        ],
    }
