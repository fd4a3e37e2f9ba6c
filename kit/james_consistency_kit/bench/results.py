"""The bench's JSON result files: written to .local/bench/ by a run, published to docs/benchmarks/ for the page.

A run's figures end with its record: when it finished, the commit it ran, and the machine (cores, processor,
memory, its load average when the bench started: what else was running, and the time of a fixed one-core workload at
the start and the end: how fast the host was that day, which the load cannot show)."""

import json
import math
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import psutil
from james_consistency.cassandra.cql import CassandraSettings, close, connect
from james_consistency.errors import OperatorError
from james_consistency.runtime.paths import LOCAL_DIR, PROJECT_ROOT

PUBLISHED_DIR = PROJECT_ROOT / "docs" / "benchmarks"


# The additions the speed reference times (a fraction of a second on one core).
SPEED_REFERENCE_ADDITIONS = 5_000_000


def machine() -> dict:
    """The machine the bench runs on, its load average (1, 5, 15 min) and its speed (`speed_reference_seconds`) now."""
    return {
        "cores": os.cpu_count(),
        "processor": _processor(),
        "memoryGiB": round(psutil.virtual_memory().total / 2**30, 1),
        "loadAverageAtStart": [round(load, 2) for load in os.getloadavg()],
        "speedReferenceSecondsAtStart": speed_reference_seconds(),
    }


def speed_reference_seconds() -> float:
    """The best of three timings of a fixed one-core workload (a Python loop of SPEED_REFERENCE_ADDITIONS additions):
    higher on a slower host. The same 2-core machine can be twice as slow one day as another with an idle load average
    (its host changed, or its share of it); runs are compared by their ratios, and by this figure when times differ."""
    best = math.inf
    for _ in range(3):
        started = time.perf_counter()
        total = 0
        for value in range(SPEED_REFERENCE_ADDITIONS):
            total += value
        best = min(best, time.perf_counter() - started)
    return round(best, 3)


def cassandra_nodes(settings: CassandraSettings) -> int:
    """How many nodes the driver sees in the cluster `settings` points at."""
    session = connect(settings)
    try:
        return len(session.cluster.metadata.all_hosts())
    finally:
        close(session)


def require_only_the_benched_nodes(settings: CassandraSettings) -> None:
    """Refuse to bench while more Cassandra JVMs run on this machine than the benched cluster has nodes (e.g. the test
    node left running): their processor time would count in the machine's, and they compete for its cores."""
    from james_consistency_kit.bench.measure import local_cassandra_processes

    local, nodes = [process.name for process in local_cassandra_processes()], cassandra_nodes(settings)
    if len(local) > nodes:
        raise OperatorError(
            f"{len(local)} Cassandra JVMs run on this machine (pids {', '.join(sorted(local))}) but the benched "
            f"cluster ({settings.host}:{settings.port}) has {nodes} node(s): the others' processor time would count "
            "in the machine's. Stop the ones not benched first (the test node, .local/test-cassandra, "
            "stays up after a test session run with JAMES_TEST_KEEP_NODE=1)."
        )


def cluster(spark, settings: CassandraSettings, replication_factor: int) -> dict:
    """Where the bench ran: the Cassandra nodes its driver sees, the bench keyspace's replication factor, Spark's
    master and the cores its executors have."""
    nodes = cassandra_nodes(settings)
    return {
        "cassandraNodes": nodes,
        "replicationFactor": replication_factor,
        "sparkMaster": spark.sparkContext.master,
        "executorCores": spark.sparkContext.defaultParallelism,
    }


def on_one_node(figures: dict) -> bool:
    """Whether a run's figures come from one Cassandra node and local Spark (every run before `cluster` was
    recorded did)."""
    place = figures.get("cluster") or {}
    return place.get("cassandraNodes", 1) == 1 and place.get("sparkMaster", "local").startswith("local")


def where(figures: dict) -> str:
    """Where a run ran, in words."""
    place = figures.get("cluster")
    if not place or on_one_node(figures):
        return "one Cassandra node, local Spark"
    return (
        f"{place['cassandraNodes']} Cassandra nodes, RF {place['replicationFactor']}, "
        f"{place['sparkMaster']} ({place['executorCores']} executor cores)"
    )


def run_record(started_on: dict) -> dict:
    """What a run's figures end with: when it finished, the code it ran, the machine (`machine()` at its start, and
    its speed again at the end)."""
    ended = {"speedReferenceSecondsAtEnd": speed_reference_seconds()}
    return {"date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%MZ"), **_commit(), "machine": {**started_on, **ended}}


def write_figures(figures: dict, path: str | None) -> Path:
    name = figures.get("target", "messages")
    target = Path(path or LOCAL_DIR / "bench" / f"{name}-{figures['messages']}.json")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(figures, indent=2) + "\n")
    return target


def publish(result: Path, folder: Path = PUBLISHED_DIR) -> Path:
    """Copy a result file into the folder the page is made from, named after its target, size and date. An older
    file of the same target, size and place then leaves the folder for the history (report_history.retire_superseded):
    the folder keeps the newest of each."""
    figures = read_figures(result)
    stamp = (figures.get("date") or "undated").replace(":", "").replace("-", "")
    target = folder / f"{figures.get('target', 'messages')}-{figures['messages']}-{stamp}.json"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(result, target)
    return target


@dataclass(frozen=True)
class BenchFile:
    """One bench result file: its name and its figures."""

    name: str
    figures: dict

    @property
    def target(self) -> str:
        return self.figures.get("target", "messages")

    @property
    def date(self) -> str | None:
        return self.figures.get("date")


def size_class(result: BenchFile) -> int:
    """The order of magnitude of a run's messages (0 when the file does not say)."""
    messages = result.figures.get("messages") or 0
    return round(math.log10(messages)) if messages > 0 else 0


def read_figures(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise OperatorError(f"cannot read the bench result {path}: {error}") from None


def load(paths: list[Path]) -> tuple[list[BenchFile], list[dict]]:
    """The bench result files and the history records among `paths` (files, or folders whose *.json are read):
    a file holding {"history": [...]} is history; any other must be a bench result."""
    files = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(path.glob("*.json")))
        elif path.is_file():
            files.append(path)
        else:
            raise OperatorError(f"{path} is neither a bench result file nor a folder of them")
    results, history = [], []
    for path in files:
        figures = read_figures(path)
        if isinstance(figures, dict) and isinstance(figures.get("history"), list):
            history.extend(figures["history"])
        elif isinstance(figures, dict) and ("bareScan" in figures or "periods" in figures) and "messages" in figures:
            results.append(BenchFile(path.name, figures))
        else:
            raise OperatorError(
                f"{path} is not a bench result (no bareScan figures, nor an impact bench's periods) nor a history file"
            )
    return results, history


def _processor() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _commit() -> dict:
    """The checkout's commit, and whether files it tracks had uncommitted changes (nothing outside a checkout)."""

    def git(*arguments: str) -> str | None:
        try:
            done = subprocess.run(["git", *arguments], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "--short", "HEAD")
    if commit is None:
        return {"commit": None}
    return {"commit": commit, "uncommittedChanges": bool(git("status", "--porcelain", "--untracked-files=no"))}
