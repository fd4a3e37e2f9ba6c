"""The command line run by its path, as cron, systemd or another tool runs it: no `scripts/env.sh`, no virtualenv on
PATH, an unrelated working folder, and nothing project-specific in the environment."""

import json
import subprocess
from pathlib import Path

from james_consistency.cassandra.schema import create_schema
from james_consistency.runtime.connector_jars import CONNECTOR_PACKAGE
from james_consistency.runtime.paths import PROJECT_ROOT, SPARK_JARS_DIR
from james_consistency_kit.faults import inject
from james_consistency_kit.seed import seed_platform

CLI = PROJECT_ROOT / ".venv" / "bin" / "james-consistency"


def run_by_path(tmp_path, *arguments, **environment):
    """`env -i HOME=... PATH=/usr/bin:/bin <repo>/.venv/bin/james-consistency ...` from a temporary folder."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    variables = [f"{key}={value}" for key, value in {"HOME": home, "PATH": "/usr/bin:/bin", **environment}.items()]
    return subprocess.run(
        ["/usr/bin/env", "-i", *variables, str(CLI), *arguments],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_check_by_path_with_a_minimal_environment(cassandra_settings, new_keyspace, tmp_path):
    keyspace = new_keyspace("bypath")
    seed_platform(cassandra_settings, keyspace=keyspace, users=2, mailboxes_per_user=2, messages_per_mailbox=5)
    broken = inject(
        cassandra_settings,
        keyspace=keyspace,
        kind="projection-missing",
        rate=0.2,
        manifest_path=str(tmp_path / "manifest.json"),
    )
    report_path = tmp_path / "report.json"

    result = run_by_path(
        tmp_path, "check", "messages", "--keyspace", keyspace, "--port", str(cassandra_settings.port),
        "--report", str(report_path),
    )  # fmt: skip

    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stdout + result.stderr
    report = json.loads(report_path.read_text())
    assert report["status"] == "COMPLETED"
    assert report["processedImapUidEntries"] == 20
    assert report["processedMessageIdEntries"] == 20 - broken["count"]
    assert report["inconsistencies"] == {"missing": broken["count"], "outdated": 0, "orphan": 0}
    assert f"found missing {broken['count']}, outdated 0, orphan 0" in result.stdout
    # Not a terminal: the job's progress in plain lines, before its summary; its report is the same.
    assert f"messages check on {keyspace}: scan (1/5)" in result.stdout.split("report:")[0]
    assert (tmp_path / "report.progress.json").is_file() and "\r" not in result.stdout


def test_missing_java_is_named_in_one_line(cql, cassandra_settings, new_keyspace, tmp_path):
    keyspace = new_keyspace("nojava")
    create_schema(cql, keyspace, "3.9")
    no_java = tmp_path / "bin"
    no_java.mkdir()

    result = run_by_path(
        tmp_path, "check", "messages", "--keyspace", keyspace, "--port", str(cassandra_settings.port),
        PATH=no_java,
    )  # fmt: skip

    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "james-consistency: error: no Java runtime: java is not on PATH and JAVA_HOME is not set (Spark needs Java 17)"
    ]


# Spark's resolution as on a site without Maven Central: the JVM spark-submit starts gets a proxy nothing listens on,
# and a home of its own (Ivy looks in ~/.m2 first, Java's home is not $HOME).
def without_maven_central(home: Path) -> str:
    unreachable = " ".join(f"-D{scheme}.proxyHost=127.0.0.1 -D{scheme}.proxyPort=9" for scheme in ("http", "https"))
    return f"-Duser.home={home} {unreachable}"


def test_without_maven_central_or_a_folder_of_jars_the_error_names_the_setting(
    cql, cassandra_settings, new_keyspace, tmp_path
):
    keyspace = new_keyspace("nojars")
    create_schema(cql, keyspace, "3.9")
    empty_local = tmp_path / "local"
    empty_local.mkdir()

    result = run_by_path(
        tmp_path, "check", "messages", "--keyspace", keyspace, "--port", str(cassandra_settings.port),
        JAMES_CONSISTENCY_LOCAL_DIR=empty_local, SPARK_SUBMIT_OPTS=without_maven_central(tmp_path / "home"),
    )  # fmt: skip

    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"resolving {CONNECTOR_PACKAGE} with Spark into {empty_local}/ivy (once)",
        f"james-consistency: error: could not resolve the Spark Cassandra Connector ({CONNECTOR_PACKAGE}) with Spark "
        f"into {empty_local}/ivy: Maven Central is unreachable (java.net.ConnectException: Connection refused); a site "
        "without Maven Central sets JAMES_SPARK_JARS_DIR to a folder of its jars (docs/deployment.md)",
    ]


def test_a_site_without_maven_central_runs_a_check_from_its_folder_of_jars(
    cql, cassandra_settings, new_keyspace, tmp_path
):
    keyspace = new_keyspace("jarsdir")
    create_schema(cql, keyspace, "3.9")
    folder = tmp_path / "connector"
    folder.mkdir()
    for jar in SPARK_JARS_DIR.glob("*.jar"):  # what an operator copied there (docs/deployment.md)
        (folder / jar.name).symlink_to(jar)
    empty_local = tmp_path / "local"
    empty_local.mkdir()

    result = run_by_path(
        tmp_path, "check", "messages", "--keyspace", keyspace, "--port", str(cassandra_settings.port),
        JAMES_CONSISTENCY_LOCAL_DIR=empty_local, JAMES_SPARK_JARS_DIR=folder,
        SPARK_SUBMIT_OPTS=without_maven_central(tmp_path / "home"),
    )  # fmt: skip

    assert result.returncode == 0, result.stderr[-3000:]
    assert f"messages check on {keyspace}: COMPLETED; found missing 0, outdated 0, orphan 0" in result.stdout
    assert "resolving" not in result.stderr and not (empty_local / "ivy").exists(), "nothing was downloaded"
