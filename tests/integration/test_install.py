"""The package as an operator installs it: the wheel built from this repository, installed with only its declared
dependencies (`james-consistency[airflow]`, the lock as uv's constraints) into a fresh virtualenv under Python 3.11
and under 3.12, nothing of the repository on any path of what runs there:

- the wheel holds the package data (DAG files, suites, entry points, log configuration, the JVM jar), not the kit,
  and the build refuses a wheel without the JVM jar;
- `pip check` is clean, `james-consistency --version` names the wheel's version, a kit command names the extra;
- an Airflow home whose DAGs folder is empty lists the eight DAGs, from the package's bundle, without import errors;
- with no folder of connector jars, the first job has Spark resolve the connector (spark.jars.packages) into the Ivy
  folder IVY_DIR, shared by both Pythons and kept under .local/ between runs: Maven Central is reached when that
  cache is cold only (Java's home is the install's: the machine's ~/.m2 is not looked at), and the session's first
  job resolves again from the cache. `james-consistency check messages` then finds what James broke in a copy of a
  keyspace James's own code broke once for the module (the kit's `james-consistency james ...`, from this
  checkout), and, under the newest Python (the one the checkout's own suite does not run on), one
  message_consistency run (`airflow dags test`) repairs it, its Spark tasks on the kit's standalone cluster, whose
  executors' Python lacks the package: they import the zip the installed package built at submit time;
- the driver's class archive builds from the jars Spark resolved;
- an install that lost a suite names it at start-up: the command line before spark-submit, the DAG files when parsed.

One virtualenv per Python version a session (uv and its cache: about 20 s each once the wheels are cached). pyspark,
published as a source archive only, comes from the wheel set-up built into .local/wheels: uv would build it again
for each virtualenv.
"""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from james_consistency.cassandra.schema import create_schema
from james_consistency.runtime.connector_jars import resolved_list
from james_consistency.runtime.package_data import JVM_JAR_NAME
from james_consistency.runtime.paths import LOCAL_DIR, PROJECT_ROOT, SPARK_JARS_DIR
from james_consistency_kit import james_harness, spark_cluster
from support.james_platform import WRITTEN_BY_UPDATE, copy_keyspace
from support.messages import projection, truth

pytestmark = pytest.mark.end_to_end

PYTHONS = ("3.11", "3.12")
# The Python whose install also runs a whole DAG run: the checkout's suite and stories run every DAG under 3.11.
DAG_RUN_PYTHON = PYTHONS[-1]
# Each folder of the wheel and the checkout's folder it is built from (pyproject.toml's package-dir).
PACKAGES = {
    "james_consistency": PROJECT_ROOT / "spark" / "james_consistency",
    "james_consistency/expectations": PROJECT_ROOT / "expectations",
    "james_airflow": PROJECT_ROOT / "plugins" / "james_airflow",
    "james_airflow/dags": PROJECT_ROOT / "dags",
}
UV = Path(sys.executable).with_name("uv")
WHEELHOUSE = LOCAL_DIR / "wheels"  # scripts/setup.sh
# Spark's Ivy folder for the installs (JAMES_SPARK_IVY_DIR): the connector downloaded once for both Pythons and later
# runs. The only path of this checkout an install is given: a cache, which Spark's resolution writes.
IVY_DIR = LOCAL_DIR / "install-test-ivy"
# The checkout's command line, with the kit: James's own code through `james-consistency james ...`.
CHECKOUT_CLI = Path(sys.executable).with_name("james-consistency")
DAG_IDS = {
    "acl_consistency",
    "attachment_integrity",
    "counters_recompute",
    "housekeeping",
    "index_rebuild",
    "mailbox_offline_repair",
    "message_consistency",
    "undo_repair",
}
# What docs/deployment.md tells an operator to configure: the DAGs folder's bundle and the package's.
BUNDLES = [
    {"name": "dags-folder", "classpath": "airflow.dag_processing.bundles.local.LocalDagBundle", "kwargs": {}},
    {"name": "james-consistency", "classpath": "james_airflow.bundle.JamesConsistencyDagBundle", "kwargs": {}},
]


def interpreter(version: str) -> str:
    """The machine's Python `version` (on PATH, or pyenv's when its shim does not offer it)."""
    home = Path.home() / ".pyenv" / "versions"
    candidates = [shutil.which(f"python{version}"), *sorted(glob.glob(f"{home}/{version}.*/bin/python{version}"))]
    for candidate in filter(None, candidates):
        probe = subprocess.run([candidate, "-c", "import sys; print(sys.executable)"], capture_output=True, text=True)
        if probe.returncode == 0:
            return probe.stdout.strip()
    pytest.skip(f"no Python {version} on this machine")


def run(command: list, environment: dict | None = None, timeout: float = 600, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(part) for part in command],
        env=environment,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def succeeded(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, (result.args, result.stdout[-3000:], result.stderr[-3000:])
    return result.stdout


def copy_sources(target: Path, with_jar: bool = True) -> Path:
    """What the wheel is built from (pyproject, README, the build backend, the two packages, the DAGs and the suites),
    as in a checkout."""
    target.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(PROJECT_ROOT / name, target / name)
    (target / "scripts").mkdir()
    shutil.copy(PROJECT_ROOT / "scripts" / "build_backend.py", target / "scripts")
    ignored = ("__pycache__", "*.pyc") if with_jar else ("__pycache__", "*.pyc", JVM_JAR_NAME)
    for root in ("spark", "plugins", "dags", "expectations"):
        shutil.copytree(PROJECT_ROOT / root, target / root, ignore=shutil.ignore_patterns(*ignored))
    return target


def package_files() -> set[str]:
    """The files of the two packages in this working tree (the JVM jar set-up compiled included), wheel-relative."""
    return {
        f"{folder}/{path.relative_to(source).as_posix()}"
        for folder, source in PACKAGES.items()
        for path in source.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("wheel")
    sources = copy_sources(folder / "sources")
    succeeded(run([UV, "build", "--wheel", "--out-dir", folder / "dist", sources], timeout=300))
    (built,) = (folder / "dist").glob("james_consistency-*.whl")
    return built


@dataclass
class Install:
    """A virtualenv with the wheel installed, an Airflow home and a local dir of its own, and a Python for the
    Spark executors with pyspark and cassandra-driver only."""

    python: str
    root: Path

    @property
    def bin(self) -> Path:
        return self.root / "venv" / "bin"

    @property
    def site_packages(self) -> Path:
        return self.root / "venv" / "lib" / f"python{self.python}" / "site-packages"

    @property
    def executor_python(self) -> Path:
        return self.root / "executors" / "bin" / "python"

    @property
    def local_dir(self) -> Path:
        return self.root / "local"

    @property
    def dags_folder(self) -> Path:
        return self.root / "airflow" / "dags"

    def environment(self, **extra: str) -> dict[str, str]:
        """As on an Airflow host: this virtualenv and the system's, Java, and the settings the deployment guide
        names; nothing of this checkout (but the Ivy cache) or of the tests' own environment."""
        kept = {name: os.environ[name] for name in ("JAVA_HOME", "TMPDIR", "LANG") if name in os.environ}
        return {
            **kept,
            "HOME": str(self.root / "home"),
            "PATH": f"{self.bin}:/usr/bin:/bin",
            "AIRFLOW_HOME": str(self.root / "airflow"),
            "AIRFLOW__CORE__DAGS_FOLDER": str(self.dags_folder),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST": json.dumps(BUNDLES),
            "JAMES_CONSISTENCY_LOCAL_DIR": str(self.local_dir),
            "JAMES_SPARK_IVY_DIR": str(IVY_DIR),
            # Java's home, where Ivy looks for ~/.m2, is the password file's, not $HOME: the install's, as on a host
            # where Maven never ran.
            "SPARK_SUBMIT_OPTS": f"-Duser.home={self.root / 'home'}",
            "GX_ANALYTICS_ENABLED": "false",
            "SPARK_LOCAL_IP": "127.0.0.1",
            # dag.test() of Airflow 3.3.2 cannot finish a run of a DAG with a Deadline alert (tests/conftest.py).
            "JAMES_REPAIR_WINDOW_MINUTES": "0",
            **extra,
        }

    def run(self, *command, timeout: float = 600, **extra: str) -> subprocess.CompletedProcess:
        """A command of this install, from a folder of its own (a `python -c` puts its folder on sys.path)."""
        return run([*command], self.environment(**extra), timeout, cwd=self.root)


@pytest.fixture(scope="session")
def installs(wheel, tmp_path_factory):
    """The Install of a Python version, built on first use and kept for the session. The list of the jars Spark
    resolved is forgotten first: the session's first job resolves again (from the kept Ivy cache)."""
    resolved_list(IVY_DIR).unlink(missing_ok=True)
    made: dict[str, Install] = {}

    def install(python: str) -> Install:
        if python not in made:
            made[python] = _install(python, wheel, tmp_path_factory.mktemp(f"install-{python}"))
        return made[python]

    return install


def _install(python: str, wheel: Path, root: Path) -> Install:
    started = time.perf_counter()
    found = interpreter(python)
    installed = Install(python, root)
    lock = PROJECT_ROOT / "requirements.txt"
    succeeded(run([UV, "venv", "--quiet", "--seed", "--python", found, root / "venv"]))
    succeeded(
        run(
            [UV, "pip", "install", "--quiet", "--python", installed.bin / "python", "-c", lock, "-f", WHEELHOUSE]
            + [f"james-consistency[airflow] @ {wheel.as_uri()}"],
            timeout=900,
        )
    )
    succeeded(run([UV, "venv", "--quiet", "--python", found, root / "executors"]))
    executors = [UV, "pip", "install", "--quiet", "--python", installed.executor_python, "-c", lock, "-f", WHEELHOUSE]
    succeeded(run([*executors, "pyspark", "cassandra-driver"], timeout=900))
    installed.dags_folder.mkdir(parents=True)
    succeeded(installed.run("airflow", "db", "migrate"))
    print(f"Python {python}: installed with an Airflow home in {time.perf_counter() - started:.0f}s")
    return installed


def listed(stdout: str):
    """The JSON an `airflow ... -o json` printed after its warnings."""
    return json.loads(next(line for line in stdout.splitlines() if line.startswith("[")))


def test_the_wheel_holds_the_package_data_and_not_the_kit(wheel, tmp_path):
    with zipfile.ZipFile(wheel) as opened:
        names = set(opened.namelist())
        metadata = opened.read(next(name for name in names if name.endswith(".dist-info/METADATA"))).decode()
        scripts = opened.read(next(name for name in names if name.endswith(".dist-info/entry_points.txt"))).decode()

    assert {name for name in names if ".dist-info/" not in name} == package_files()
    assert f"james_consistency/jvm/{JVM_JAR_NAME}" in names
    assert {"james_airflow/dags/message_consistency.py", "james_consistency/jobs/entry_points/reconcile.py"} <= names
    assert not any(name.startswith(("james_consistency_kit/", "tests/")) for name in names)
    assert "james-consistency = james_consistency.cli.main:main" in scripts
    assert set(re.findall(r"^Provides-Extra: (\S+)", metadata, re.MULTILINE)) == {"airflow", "plot", "kit"}
    assert "Requires-Python: <3.13,>=3.11" in metadata

    refused = run([UV, "build", "--wheel", "--out-dir", tmp_path / "dist", copy_sources(tmp_path / "no-jar", False)])
    assert refused.returncode != 0 and f"{JVM_JAR_NAME} is missing" in refused.stdout + refused.stderr
    assert "run scripts/setup.sh" in refused.stdout + refused.stderr


@pytest.mark.parametrize("python", PYTHONS)
def test_the_installed_command_line_needs_no_kit(installs, python):
    installed = installs(python)

    assert "No broken requirements found" in succeeded(installed.run(installed.bin / "python", "-m", "pip", "check"))
    assert succeeded(installed.run("james-consistency", "--version")).strip() == "james-consistency 0.2.0"
    assert "| `JAMES_KEYSPACE`" in succeeded(installed.run("james-consistency", "settings"))
    kit_command = installed.run("james-consistency", "cassandra", "start")
    assert kit_command.returncode == 2
    assert kit_command.stderr.splitlines() == [
        "james-consistency: error: cassandra is a command of the local kit, which this install lacks: "
        "pip install 'james-consistency[kit]'"
    ]


@pytest.mark.parametrize("python", PYTHONS)
def test_without_the_repository_the_command_line_checks_and_airflow_repairs_what_james_broke(
    installs, python, spark_standalone, cassandra_node, cql, new_keyspace, broken_by_james
):
    installed = installs(python)
    given = installed.environment(SPARK_EXECUTOR_PYTHON=str(installed.executor_python))
    assert [name for name, value in given.items() if str(PROJECT_ROOT) in value] == ["JAMES_SPARK_IVY_DIR"]
    succeeded(installed.run("airflow", "dags", "reserialize"))
    dags = listed(succeeded(installed.run("airflow", "dags", "list", "-o", "json")))
    errors = listed(succeeded(installed.run("airflow", "dags", "list-import-errors", "-o", "json")))

    assert {dag["dag_id"] for dag in dags} == DAG_IDS and errors == []
    assert {dag["bundle_name"] for dag in dags} == {"james-consistency"}
    assert all(dag["fileloc"].startswith(str(installed.site_packages / "james_airflow" / "dags")) for dag in dags)
    assert list(installed.dags_folder.iterdir()) == [], "the DAGs folder holds nothing"

    keyspace = new_keyspace(f"install{python.replace('.', '')}")
    template, broken = broken_by_james
    copy_keyspace(cql, template, keyspace, WRITTEN_BY_UPDATE[james_harness.DEFAULT_VERSION])
    started = time.time()
    check = installed.root / f"check-{keyspace}.json"
    checked = installed.run(
        "james-consistency", "check", "messages", "--keyspace", keyspace, "--port", cassandra_node.native_port,
        "--report", check,
    )  # fmt: skip
    print(f"Python {python}: james-consistency check messages in {time.time() - started:.0f}s")

    succeeded(checked)
    assert json.loads(check.read_text())["inconsistencies"] == broken
    assert_the_connector_came_from_sparks_resolution(installed)
    if python != DAG_RUN_PYTHON:
        return

    started = time.time()
    conf = {"keyspace": keyspace, "recheck_delay_seconds": 0, "max_destructive_share": 0.5}
    tested = installed.run(
        "airflow", "dags", "test", "message_consistency", "--conf", json.dumps(conf),
        timeout=1200,
        AIRFLOW_CONN_CASSANDRA_DEFAULT=f"cassandra://127.0.0.1:{cassandra_node.native_port}",
        AIRFLOW_CONN_SPARK_DEFAULT=f"{spark_standalone}?deploy-mode=client&spark-binary=spark-submit",
        SPARK_EXECUTOR_PYTHON=str(installed.executor_python),
    )  # fmt: skip
    print(f"Python {python}: airflow dags test message_consistency in {time.time() - started:.0f}s")

    succeeded(tested)
    run_id, states = last_run(installed)
    assert states == {task: "success" for task in ("check", "anything_to_repair", "repair", "verify", "report")}
    folder = installed.local_dir / "reports" / "airflow" / "message_consistency" / run_id
    reports = {step: json.loads((folder / f"{step}.json").read_text()) for step in ("check", "repair", "verify")}
    assert reports["check"]["inconsistencies"] == broken
    assert (reports["repair"]["addedMessageIdEntries"], reports["repair"]["removedMessageIdEntries"]) == (
        broken["missing"],
        broken["orphan"],
    )
    assert reports["verify"]["remainingInconsistencies"] == 0
    assert set(projection(cql, keyspace)) == set(truth(cql, keyspace))
    assert {(report["version"], report["schemaVersion"] > 0) for report in reports.values()} == {("0.2.0", True)}
    assert_the_executors_imported_the_installed_packages_zip(installed, tested.stdout + tested.stderr, started)


def assert_the_connector_came_from_sparks_resolution(installed: Install) -> None:
    """The install has no folder of jars; its jobs shipped the jars Spark resolved into IVY_DIR (this session: the
    `installs` fixture removed the list first), the same jars as Maven's resolution of jars/spark/pom.xml (Ivy names
    them `<group>_<artifact>`)."""
    assert not (installed.local_dir / "jars" / "spark").exists()
    listed = resolved_list(IVY_DIR)
    jars = [Path(line) for line in listed.read_text().splitlines()]
    assert all(jar.parent == IVY_DIR / "jars" and jar.is_file() for jar in jars)
    assert {jar.name.split("_", 1)[1] for jar in jars} == {jar.name for jar in SPARK_JARS_DIR.glob("*.jar")}


@pytest.fixture(scope="module")
def broken_by_james(cassandra_node, cql, tmp_path_factory):
    """A template keyspace James broke once for the module (each Python version's run repairs a copy of it: James's
    JVM starts three times for it), and the inconsistencies James left there."""
    template = f"install_template_{uuid.uuid4().hex[:8]}"
    yield template, break_with_james(template, cassandra_node.native_port, tmp_path_factory.mktemp("james"))
    cql.execute(f"DROP KEYSPACE IF EXISTS {template}", timeout=120)


def break_with_james(keyspace: str, port: int, root: Path) -> dict[str, int]:
    """A platform James (the harness's default version, 3.8.1) writes, then breaks through its own write paths; the
    inconsistencies it left."""
    james = [CHECKOUT_CLI, "james"]
    on_keyspace = ["--keyspace", keyspace, "--port", str(port)]
    sizes = ["--users", "2", "--mailboxes-per-user", "2", "--messages-per-mailbox", "15"]
    succeeded(run([*james, "seed", *on_keyspace, *sizes]))
    left = {}
    for kind, options in (
        ("messageIdTable-insert", ["--rate", "0.5"]),
        ("delete-messageIdTable-kept", ["--rate", "0.3", "--operations", "10"]),
    ):
        manifest = root / f"{keyspace}-{kind}.json"
        succeeded(run([*james, "break", *on_keyspace, "--kind", kind, *options, "--manifest", manifest]))
        left[kind] = len(json.loads(manifest.read_text())["inconsistencies"])
    return {"missing": left["messageIdTable-insert"], "outdated": 0, "orphan": left["delete-messageIdTable-kept"]}


LAST_RUN = """
import json
from airflow.models import DagRun
from airflow.utils.session import create_session
from sqlalchemy import select

with create_session() as session:
    newest = select(DagRun).where(DagRun.dag_id == "message_consistency").order_by(DagRun.id.desc())
    run = session.scalars(newest).first()
    states = {ti.task_id: str(ti.state) for ti in run.get_task_instances(session=session)}
print(json.dumps([run.run_id, states]))
"""


def last_run(installed: Install) -> tuple[str, dict[str, str]]:
    """The run folder of message_consistency's last run and its task states, from the metadata database."""
    run_id, states = json.loads(succeeded(installed.run("python", "-c", LAST_RUN)).strip().splitlines()[-1])
    return re.sub(r"[^A-Za-z0-9_.-]", "_", run_id), states


def assert_the_executors_imported_the_installed_packages_zip(installed: Install, log: str, since: float) -> None:
    """Each Spark job shipped the zip built from the installed package, and the workers fetched it for executors
    whose Python lacks the package (they could import it from nowhere else)."""
    (zip_path,) = (installed.local_dir / "dist").glob("james_consistency-*.zip")
    installed_code = {
        path.relative_to(installed.site_packages).as_posix()
        for path in (installed.site_packages / "james_consistency").rglob("*.py")
        if "__pycache__" not in path.parts
    }
    with zipfile.ZipFile(zip_path) as opened:
        assert set(opened.namelist()) == installed_code
    assert log.count(f"spark.files={zip_path}") == 3, "check, repair and verify shipped it"
    fetched = [
        path
        for path in spark_cluster.CLUSTER_HOME.glob(f"worker*/app-*/*/{zip_path.name}")
        if path.stat().st_mtime >= since
    ]
    assert fetched, f"no worker fetched {zip_path.name}"
    lacks = run(
        [installed.executor_python, "-c", "import importlib.util as u; print(u.find_spec('james_consistency'))"]
    )
    assert succeeded(lacks).strip() == "None"


def test_an_install_archives_the_drivers_classes_with_the_jars_spark_resolved(installs):
    """`python -m james_consistency.runtime.spark_env` (what set-up runs in a checkout) builds the class archive of
    the driver JVMs for the class path the jobs use: the jars Spark resolved, then the package's JVM jar."""
    installed = installs(PYTHONS[0])

    succeeded(installed.run("python", "-m", "james_consistency.runtime.spark_env"))
    archive = installed.local_dir / "jars" / "spark-driver-classes.jsa"
    stamp = archive.with_suffix(".stamp").read_text()
    resolved = resolved_list(IVY_DIR).read_text().split()
    jvm_jar = installed.site_packages / "james_consistency" / "jvm" / JVM_JAR_NAME
    assert archive.stat().st_size > 0
    assert stamp.rstrip("\n").split("; ")[-1].split() == sorted([*resolved, str(jvm_jar)])


PARSE_ERRORS = """
import json
from airflow.dag_processing.dagbag import DagBag
from james_airflow.bundle import DAGS_FOLDER

print(json.dumps(DagBag(str(DAGS_FOLDER)).import_errors))
"""


def test_an_install_that_lost_a_suite_names_it_at_start_up(installs, cql, cassandra_node, new_keyspace):
    installed = installs(PYTHONS[0])
    keyspace = new_keyspace("lostsuite")
    create_schema(cql, keyspace, "3.9")
    suite = installed.site_packages / "james_consistency" / "expectations" / "plan_safety.json"
    suite.rename(suite.with_suffix(".lost"))
    try:
        checked = installed.run(
            "james-consistency", "check", "messages", "--keyspace", keyspace, "--port", str(cassandra_node.native_port)
        )
        parsed = installed.run("python", "-c", PARSE_ERRORS)
    finally:
        suite.with_suffix(".lost").rename(suite)

    package = installed.site_packages / "james_consistency"
    missing = (
        f"this james-consistency install is incomplete: expectations/plan_safety.json missing from {package} "
        "(reinstall it: pip install --force-reinstall james-consistency)"
    )
    assert checked.returncode == 2
    assert checked.stderr.splitlines() == [f"james-consistency: error: {missing}"]
    errors = json.loads(succeeded(parsed).strip().splitlines()[-1])
    assert {Path(path).stem for path in errors} == DAG_IDS
    assert all(missing in error for error in errors.values())
