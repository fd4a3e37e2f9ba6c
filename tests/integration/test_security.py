"""A node with PasswordAuthenticator and client TLS only: the CLI, the Spark job (through spark-submit) and the
driver connect with credentials from the environment, clear errors without them, and the password shows up in no
output and no report."""

import dataclasses
import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from james_consistency.cassandra.cql import CassandraSettings, close, connect
from james_consistency.errors import OperatorError
from james_consistency.report.progress import is_progress_file
from james_consistency.runtime.paths import LOCAL_DIR
from james_consistency.settings import setting
from james_consistency_kit.cassandra_node import LocalNode

SECURE_NODE = LocalNode(
    home=LOCAL_DIR / "secure-cassandra",
    native_port=setting("JAMES_SECURE_CASSANDRA_PORT"),
    storage_port=27000,
    jmx_port=27199,
    heap="768M",
    skip_sync=True,
    quick_jit=True,
    auth=True,
    tls=True,
)
PASSWORD = "S3cret-" + secrets.token_hex(8)


@pytest.fixture(scope="module")
def secure_settings():
    started_here = SECURE_NODE.pid() is None
    SECURE_NODE.start()
    trust = dict(
        tls_ca_file=str(SECURE_NODE.ca_file),
        tls_truststore=str(SECURE_NODE.truststore),
        tls_truststore_password=(SECURE_NODE.tls_dir / "truststore.password").read_text().strip(),
    )
    # Cassandra's own bootstrap superuser creates the repair role (as an operator would, once).
    admin = CassandraSettings(
        host="127.0.0.1", port=SECURE_NODE.native_port, username="cassandra", password="cassandra"
    )
    session = _connect_when_ready(dataclasses.replace(admin, **trust))
    session.execute("DROP ROLE IF EXISTS james_repair")  # a node kept from an earlier session: this run's password
    session.execute(f"CREATE ROLE james_repair WITH PASSWORD = '{PASSWORD}' AND LOGIN = true AND SUPERUSER = true")
    close(session)
    yield CassandraSettings(
        host="127.0.0.1", port=SECURE_NODE.native_port, username="james_repair", password=PASSWORD, **trust
    )
    if started_here and not setting("JAMES_TEST_KEEP_NODE"):
        SECURE_NODE.stop()


def _connect_when_ready(settings, attempts=60):
    """The bootstrap superuser appears a moment after the node answers."""
    import time

    for _ in range(attempts):
        try:
            return connect(settings)
        except OperatorError:
            time.sleep(1)
    return connect(settings)


def test_without_tls_or_credentials_the_error_says_what_is_missing(secure_settings):
    with pytest.raises(OperatorError, match="require client TLS|unreachable"):
        connect(dataclasses.replace(secure_settings, tls_ca_file=None))
    with pytest.raises(OperatorError, match="refused a client without credentials"):
        connect(dataclasses.replace(secure_settings, username=None, password=None))
    with pytest.raises(OperatorError, match="refused user 'james_repair'") as wrong:
        connect(dataclasses.replace(secure_settings, password="not-the-password"))
    assert "not-the-password" not in str(wrong.value)


def secure_environment(settings: CassandraSettings) -> dict[str, str]:
    """What an operator exports to run the CLI against the secured node."""
    return {
        **os.environ,
        "CASSANDRA_HOST": "127.0.0.1",
        "CASSANDRA_PORT": str(settings.port),
        "CASSANDRA_USERNAME": settings.username,
        "CASSANDRA_PASSWORD": PASSWORD,
        "CASSANDRA_TLS_CA_FILE": settings.tls_ca_file,
        "CASSANDRA_TLS_TRUSTSTORE": settings.tls_truststore,
        "CASSANDRA_TLS_TRUSTSTORE_PASSWORD": settings.tls_truststore_password,
    }


def run_cli(env: dict, *arguments: str) -> str:
    """The CLI in its own process (its Spark session must not become this test session's)."""
    command = [str(Path(sys.executable).with_name("james-consistency")), *arguments]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return result.stdout + result.stderr


def seed_broken(env: dict, keyspace: str) -> list[str]:
    """40 messages, some missing from messageIdTable; the CLI's output."""
    sizes = ["--users", "2", "--mailboxes-per-user", "2", "--messages-per-mailbox", "10"]
    return [
        run_cli(env, "seed", "--keyspace", keyspace, *sizes),
        run_cli(env, "break", "--keyspace", keyspace, "--kind", "projection-missing", "--rate", "0.2"),
    ]


@pytest.mark.end_to_end
def test_the_cli_and_the_spark_job_work_with_credentials_from_the_environment(secure_settings, tmp_path):
    env = secure_environment(secure_settings)
    keyspace = "secure_" + secrets.token_hex(4)
    outputs = seed_broken(env, keyspace)

    def run(*arguments):
        output = run_cli(env, *arguments)
        outputs.append(output)
        return output

    report = tmp_path / "repair.json"
    out = run("repair", "messages", "--keyspace", keyspace, "--recheck-delay", "0", "--report", str(report))

    assert "COMPLETED" in out
    repaired = json.loads(report.read_text())
    assert repaired["addedMessageIdEntries"] > 0
    session = connect(secure_settings, keyspace)
    try:
        truth = session.execute(f"SELECT count(*) FROM {keyspace}.imapuidtable").one()[0]
        projection = session.execute(f"SELECT count(*) FROM {keyspace}.messageidtable").one()[0]
    finally:
        session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")
        close(session)
    assert truth == projection == 40
    for text in [*outputs, report.read_text(), Path(f"{report}.log").read_text()]:
        assert PASSWORD not in text
        assert secure_settings.tls_truststore_password not in text


@pytest.mark.end_to_end
def test_a_dag_run_on_the_secured_node_shows_the_password_nowhere(secure_settings, tmp_path, monkeypatch, capfd):
    """A dry run of message_consistency through Airflow with the login and TLS of the cassandra_default connection
    (the CLI test above repairs through the same job): the check reads the secured node, and neither password is in
    the task log (spark-submit command line included), an XCom, a rendered template field, the report or the alert
    log."""
    from airflow.dag_processing.dagbag import DagBag
    from airflow.models.renderedtifields import RenderedTaskInstanceFields
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from james_airflow.bundle import DAGS_FOLDER
    from james_airflow.runs import run_folder
    from sqlalchemy import select

    keyspace = "secure_dag_" + secrets.token_hex(4)
    seed_broken(secure_environment(secure_settings), keyspace)
    connection = {
        "conn_type": "cassandra",
        "host": "127.0.0.1",
        "port": secure_settings.port,
        "login": secure_settings.username,
        "password": PASSWORD,
        "extra": {
            "tls_ca_file": secure_settings.tls_ca_file,
            "tls_truststore": secure_settings.tls_truststore,
            "tls_truststore_password": secure_settings.tls_truststore_password,
        },
    }
    monkeypatch.setenv("AIRFLOW_CONN_CASSANDRA_DEFAULT", json.dumps(connection))
    alerts = tmp_path / "alerts.jsonl"
    monkeypatch.setenv("JAMES_ALERT_LOG", str(alerts))
    capfd.readouterr()

    run = DagBag(str(DAGS_FOLDER)).get_dag("message_consistency").test(run_conf={"keyspace": keyspace, "dry_run": True})

    task_log = "".join(capfd.readouterr())
    session = connect(secure_settings, keyspace)
    try:
        counts = [session.execute(f"SELECT count(*) FROM {keyspace}.{table}").one()[0] for table in TABLES]
    finally:
        session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")
        close(session)
    assert str(run.state) == "success", task_log[-6000:]
    assert counts[0] == 40 and counts[1] < 40, "a dry run writes nothing"
    assert "Spark-Submit cmd: spark-submit" in task_log and "spark.cassandra.auth.username=james_repair" in task_log
    with create_session() as db:
        xcoms = db.scalars(select(XComModel.value).where(XComModel.run_id == run.run_id)).all()
        rendered = db.scalars(
            select(RenderedTaskInstanceFields.rendered_fields).where(RenderedTaskInstanceFields.run_id == run.run_id)
        ).all()
    assert xcoms and rendered
    written = sorted(run_folder("message_consistency", run.run_id).glob("*.json"))
    reports = [path.read_text() for path in written if not is_progress_file(path)]
    assert len(reports) == 1 and json.loads(reports[0])["inconsistencies"]["missing"] == 40 - counts[1]
    progress = [path.read_text() for path in written if is_progress_file(path)]
    assert len(progress) == 1, "the run's progress, published beside its report for the consistency view"
    files = [*reports, *progress]
    shown = [task_log, *map(str, xcoms), *map(str, rendered), *files, alerts.read_text() if alerts.exists() else ""]
    for secret in (PASSWORD, secure_settings.tls_truststore_password):
        assert not [text[:200] for text in shown if secret in text]


TABLES = ("imapuidtable", "messageidtable")
