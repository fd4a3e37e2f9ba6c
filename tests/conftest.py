"""Shared fixtures: one real local Cassandra node per test session, a fresh keyspace per test module, real Spark."""

import contextlib
import fcntl
import logging
import os
import shutil
import subprocess
import time
import uuid

import pytest
from james_consistency.cassandra.cql import CassandraSettings, close, connect
from james_consistency.runtime.paths import LOCAL_DIR, REPORTS_DIR
from james_consistency.settings import setting
from james_consistency_kit import spark_cluster
from james_consistency_kit.cassandra_node import LocalNode
from james_consistency_kit.processes import port_open

REPORTS_CHECKED = pytest.StashKey[tuple]()
NODE_DOWN = pytest.StashKey[str]()
# Every Data Docs update indexes the kept validation results: a short history keeps the suite's gates fast.
os.environ.setdefault("JAMES_GX_RESULTS_KEPT", "3")
# Airflow 3.3.2's dag.test() cannot finish a successful run of a DAG that has a Deadline alert (it looks the alerts up
# by their serialized form instead of their id: "'dict' object has no attribute 'hex'"); the scheduler can. DAG tests
# therefore parse the repair DAGs without their window; test_dag_integrity checks the window as deployed.
os.environ["JAMES_REPAIR_WINDOW_MINUTES"] = "0"
# A shuffle of a few hundred rows in 8 tasks (the jobs' default) spends its time scheduling them: 2, one per core of
# local[2], in-process and in the jobs the suite submits.
os.environ.setdefault("SPARK_SHUFFLE_PARTITIONS", "2")


SESSION_STARTED = time.time()

# `make test` runs the suite in pytest-xdist workers (scripts/test.sh). Each worker has a test node and an Airflow
# home of its own: schema changes on one node from two processes at once race (a table just created is not yet known
# to the other's next read), and two processes on one SQLite metadata database lock each other out.
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
WORKER_INDEX = int(WORKER.removeprefix("gw")) if WORKER else 0
if WORKER_INDEX:
    os.environ["AIRFLOW_HOME"] = str(LOCAL_DIR / f"airflow-{WORKER}")
# Test files that run one at a time, because they share something of the machine: pytest-xdist sends the files that
# share a group, transitively, to one worker as one unit of work, one file after the other (`shared_units`), and a file
# of a group holds the group's lock while it runs. One unit, not only a lock: a worker handed a file whose lock the
# other worker holds would sit idle until that file ended (the install test waited 7 minutes for the cluster layer).
ONE_AT_A_TIME = {
    # Cassandra JVMs other than the test node, started, stopped or counted (two of them share the secondary node's
    # ports; the bench's guard test counts the JVMs that run);
    "test_security.py": ("local-cassandra-jvms",),
    "test_cassandra_node.py": ("local-cassandra-jvms",),
    "test_cli_errors.py": ("local-cassandra-jvms",),
    "test_node_faults.py": ("local-cassandra-jvms",),
    # `airflow standalone`, whose scheduler serves task logs on Airflow's fixed log-server ports (8793, 8794); the
    # kit's Spark standalone cluster (port 7077), started and stopped by the module that uses it.
    "test_install.py": ("airflow-standalone", "spark-standalone"),
    "test_airflow_ui.py": ("airflow-standalone",),
    "test_ring_repairs.py": ("spark-standalone",),
}


def shared_units(groups: dict[str, tuple[str, ...]]) -> dict[str, str]:
    """Each file of `groups` -> the name of its unit: files sharing a group, directly or through another file, share
    a unit (named by its first file in name order)."""
    units = {name: {name} for name in groups}
    for name, shared in groups.items():
        for other, other_shared in groups.items():
            if set(shared) & set(other_shared) and units[name] is not units[other]:
                merged = units[name] | units[other]
                for member in merged:
                    units[member] = merged
    return {name: f"shared:{min(unit)}" for name, unit in units.items()}


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile`, except that the files of one ONE_AT_A_TIME unit are one unit of work."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    units = shared_units(ONE_AT_A_TIME)

    class SharedThingsTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            file = super()._split_scope(nodeid)
            return units.get(file.rsplit("/", 1)[-1], file)

    return SharedThingsTogether(config, log)


def pytest_sessionfinish(session, exitstatus):
    """Every run report the session's runs wrote (jobs, DAG runs, the command line) validated against the published
    JSON Schema: a report a reader cannot rely on fails the suite, naming the file. In-process runs are checked
    against the same model when they finish (engine.reports.checked)."""
    from support.reports import invalid_reports, reports_written_since

    folders = [REPORTS_DIR, session.config._tmp_path_factory.getbasetemp()]
    written = reports_written_since(SESSION_STARTED, folders)
    problems = invalid_reports(written)
    session.config.stash[REPORTS_CHECKED] = (len(written), problems)
    if problems and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter):
    checked, problems = terminalreporter.config.stash.get(REPORTS_CHECKED, (0, []))
    terminalreporter.write_line(f"run reports validated against docs/run-report.schema.json: {checked}")
    for problem in problems:
        terminalreporter.write_line(f"INVALID RUN REPORT {problem}", red=True)
    if NODE_DOWN in terminalreporter.config.stash:
        terminalreporter.write_line(f"TEST NODE DOWN: {terminalreporter.config.stash[NODE_DOWN]}", red=True)


def pytest_configure(config):
    if WORKER_INDEX:
        from james_consistency.runtime.paths import PROJECT_ROOT

        subprocess.run([str(PROJECT_ROOT / "scripts" / "airflow-init.sh")], check=True)


def pytest_unconfigure(config):
    # py4j closes its gateway connections at interpreter exit, after pytest closed the streams its log handler holds:
    # its "Closing down clientserver connection" would print a "Logging error" traceback under a green run.
    logging.getLogger("py4j").setLevel(logging.WARNING)


TEST_NODE = LocalNode(
    home=LOCAL_DIR / ("test-cassandra" + (f"-{WORKER}" if WORKER_INDEX else "")),
    native_port=setting("JAMES_TEST_CASSANDRA_PORT") + 100 * WORKER_INDEX,
    storage_port=setting("JAMES_TEST_CASSANDRA_STORAGE_PORT") + 100 * WORKER_INDEX,
    jmx_port=setting("JAMES_TEST_CASSANDRA_JMX_PORT") + 100 * WORKER_INDEX,
    heap="1G",
    skip_sync=True,
    quick_jit=True,
)


def pytest_report_header(config):
    free = shutil.disk_usage(LOCAL_DIR if LOCAL_DIR.exists() else LOCAL_DIR.parent).free
    return f"free disk where the test node writes ({LOCAL_DIR}): {free / 2**30:.1f} GiB"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A failure after the test node stopped answering says so once: otherwise every later test fails with
    NoHostAvailable and nothing tells why (a full disk stops Cassandra's transports; an out-of-memory kill ends it)."""
    report = yield
    if report.failed and "cassandra_node" in item.fixturenames and NODE_DOWN not in item.config.stash:
        if not port_open("127.0.0.1", TEST_NODE.native_port, 2.0):
            free = shutil.disk_usage(TEST_NODE.home).free / 2**30
            running = f"its JVM (pid {TEST_NODE.pid()}) still runs" if TEST_NODE.pid() else "its JVM has ended"
            item.config.stash[NODE_DOWN] = (
                f"port {TEST_NODE.native_port} refused connections after {item.nodeid} ({call.when}): {running}; "
                f"{free:.1f} GiB free disk in {TEST_NODE.home}; the last errors of its logs:\n{TEST_NODE.log_errors()}"
            )
            report.sections.append(("the test Cassandra node", item.config.stash[NODE_DOWN]))
    return report


@pytest.fixture(scope="session")
def cassandra_node():
    """The test node, started by the same code as `james-consistency cassandra start`.

    A node already running (another pytest session, or JAMES_TEST_KEEP_NODE=1 from an earlier one) is reused and
    left running; a node this session started is stopped at the end unless JAMES_TEST_KEEP_NODE=1.
    """
    started_here = TEST_NODE.pid() is None
    TEST_NODE.start()
    yield TEST_NODE
    if started_here and not setting("JAMES_TEST_KEEP_NODE"):
        TEST_NODE.stop()


@pytest.fixture(scope="module")
def spark_standalone():
    """The kit's standalone cluster (a master and two workers), stopped after the module if the module started it
    (unless CLUSTER_TEST_KEEP=1). Its modules (test_install, the cluster layer) hold the `spark-standalone` lock from
    start to stop: one never stops it under the other."""
    started_here = spark_cluster.alive_workers() == 0
    spark_cluster.start()
    yield spark_cluster.MASTER_URL
    if started_here and os.environ.get("CLUSTER_TEST_KEEP") != "1":
        spark_cluster.stop()


@pytest.fixture(scope="module", autouse=True)
def one_at_a_time(request):
    """The locks of the file's ONE_AT_A_TIME groups, when workers run files side by side (taken in name order, so two
    files never each hold a lock the other waits for)."""
    groups = ONE_AT_A_TIME.get(request.path.name, ())
    if not WORKER or not groups:
        yield
        return
    with contextlib.ExitStack() as held:
        for group in sorted(groups):
            lock = held.enter_context((LOCAL_DIR / f"tests-{group}.lock").open("w"))
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@pytest.fixture(scope="session", autouse=bool(WORKER))
def worker_node_first(request):
    """A worker starts its node before its first test: no test that counts the local Cassandra JVMs sees a worker's
    node start in the middle (tests/integration/test_cli_errors.py, the bench's guard)."""
    request.getfixturevalue("cassandra_node")


@pytest.fixture(scope="session")
def cassandra_settings(cassandra_node) -> CassandraSettings:
    return CassandraSettings(host="127.0.0.1", port=cassandra_node.native_port)


@pytest.fixture(scope="session")
def cql(cassandra_settings):
    session = connect(cassandra_settings)
    yield session
    close(session)


@pytest.fixture
def new_keyspace(cql, request):
    """A factory of unique keyspace names; every keyspace it named is dropped after the test."""
    created = []

    def make(prefix: str = "t") -> str:
        name = f"{prefix}_{request.node.name[:20]}_{uuid.uuid4().hex[:8]}".lower()
        name = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
        created.append(name)
        return name

    yield make
    for name in created:
        cql.execute(f"DROP KEYSPACE IF EXISTS {name}", timeout=120)


@pytest.fixture(scope="session")
def spark():
    """Real local Spark with the connector, pointed at the test node (which pure DataFrame tests do not need)."""
    from support.spark_session import suite_session

    session = suite_session(CassandraSettings(host="127.0.0.1", port=TEST_NODE.native_port))
    yield session
    session.stop()
