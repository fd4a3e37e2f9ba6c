"""Whole runs of message_consistency through Airflow's dag.test() on the real node, Spark and Great Expectations;
and the pieces around them: the job's command line and environment, the alert notifier."""

import json
import shutil
import time
from types import SimpleNamespace

import pytest
from james_consistency.cassandra.schema import create_schema
from james_consistency.settings import setting
from support.dag_runs import announcements, report_summary, task_states
from support.messages import break_every_kind, platform, projection, truth, write_times

DAG_ID = "message_consistency"


def test_a_dry_run_stops_after_the_check_and_writes_nothing(dagbag, airflow_against_test_node, cql, new_keyspace):
    keyspace = new_keyspace("dagdry")
    create_schema(cql, keyspace, "3.9")
    found = break_every_kind(cql, keyspace, "3.9", platform(cql, keyspace, "3.9"))
    before = write_times(cql, keyspace)

    started = time.perf_counter()
    run = dagbag.get_dag(DAG_ID).test(run_conf={"keyspace": keyspace, "dry_run": True})
    print(f"dag.test() dry run: {time.perf_counter() - started:.0f}s")

    assert str(run.state) == "success"
    states = task_states(run)
    assert states["check"] == "success" and states["report"] == "success"
    assert states["repair"] == states["verify"] == "skipped"
    assert write_times(cql, keyspace) == before
    summary = report_summary(run)
    assert summary["check"]["inconsistencies"] == found and set(summary) == {"check"}
    assert announcements(keyspace) == [], "a dry run changes nothing: counters_recompute is not scheduled"


def test_an_unreachable_node_is_retried_then_alerts_once(monkeypatch, airflow_against_test_node):
    """Exit 5 (no node answered) is the one transient failure: retried with the deployment's settings, then failed
    with one alert."""
    import socket

    from airflow.dag_processing.dagbag import DagBag
    from james_airflow.bundle import DAGS_FOLDER

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    monkeypatch.setenv("AIRFLOW_CONN_CASSANDRA_DEFAULT", f"cassandra://127.0.0.1:{closed_port}")
    monkeypatch.setenv("JAMES_REPAIR_RETRIES", "1")
    monkeypatch.setenv("JAMES_REPAIR_RETRY_DELAY_SECONDS", "1")
    dag = DagBag(str(DAGS_FOLDER)).get_dag(DAG_ID)

    started = time.perf_counter()
    run = dag.test(run_conf={"keyspace": "any_keyspace"})
    print(f"dag.test() unreachable-node run: {time.perf_counter() - started:.0f}s")

    assert str(run.state) == "failed"
    check = next(ti for ti in run.get_task_instances() if ti.task_id == "check")
    assert (str(check.state), check.try_number) == ("failed", 2)
    alerts = airflow_against_test_node()
    assert [alert["task_id"] for alert in alerts] == ["check"]


@pytest.fixture
def submitted(monkeypatch):
    """Run a ConsistencyJobOperator up to spark-submit and keep what it would have started."""
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    captured = {}

    def submit(hook, application="", **kwargs):
        captured["command"] = hook._build_spark_submit_command(application)
        captured["env"] = dict(hook._env or {})

    monkeypatch.setattr(SparkSubmitHook, "submit", submit)
    return captured


def test_the_job_gets_the_password_by_environment_only(monkeypatch, submitted):
    from james_airflow.operators import ConsistencyJobOperator
    from james_airflow.runs import run_folder

    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    monkeypatch.setenv("AIRFLOW_CONN_CASSANDRA_DEFAULT", "cassandra://james:Very-S3cret-pass@cassandra-1:9142")
    operator = ConsistencyJobOperator(task_id="repair", target="messages", mode="repair", pool="cassandra_heavy")
    params = {
        "keyspace": "james_prod",
        "dry_run": False,
        "messages_per_second": 50,
        "recheck_delay_seconds": 3,
        "truth_consistency": "SERIAL",
        "max_destructive_share": 0.05,
        "allow_destructive": False,
    }
    run_id = "test__credentials_by_environment"
    try:
        operator.execute({"dag": SimpleNamespace(dag_id=DAG_ID), "run_id": run_id, "params": params})
    finally:
        shutil.rmtree(run_folder(DAG_ID, run_id), ignore_errors=True)

    command = submitted["command"]
    assert "Very-S3cret-pass" not in " ".join(command)
    assert submitted["env"]["CASSANDRA_PASSWORD"] == "Very-S3cret-pass"
    assert submitted["env"]["CASSANDRA_USERNAME"] == "james"
    assert command[command.index("--master") + 1] == "local[2]"
    assert "spark.cassandra.connection.host=cassandra-1" in command
    assert "spark.cassandra.connection.port=9142" in command
    assert command[command.index("--jars") + 1].count(".jar") >= 1
    arguments = command[command.index(str(operator.application)) + 1 :]
    assert arguments[: arguments.index("--report")] == [
        "--target",
        "messages",
        "--keyspace",
        "james_prod",
        "--mode",
        "repair",
    ]
    for flag, value in (("--messages-per-second", "50"), ("--recheck-delay", "3"), ("--truth-consistency", "SERIAL")):
        assert arguments[arguments.index(flag) + 1] == value
    assert "--allow-destructive" not in arguments


def alert_context(tmp_path):
    return {
        "dag": SimpleNamespace(dag_id=DAG_ID),
        "run_id": "manual__alert-test",
        "ti": SimpleNamespace(task_id="check", run_id="manual__alert-test", try_number=1, log_url="http://x"),
        "exception": RuntimeError("job exit code 4: gate failed"),
    }


def test_the_alert_reaches_every_channel_even_when_one_fails(tmp_path, monkeypatch):
    from james_airflow.notifiers import AlertLog, ConsistencyAlert

    monkeypatch.setenv("JAMES_ALERT_LOG", str(tmp_path / "alerts.jsonl"))
    delivered = []

    class Broken:
        name = "broken-mail"

        def send(self, alert, context):
            raise ConnectionRefusedError("smtp down")

    class Chat:
        name = "chat"

        def send(self, alert, context):
            delivered.append(alert)

    ConsistencyAlert("message repair failed", channels=[Broken(), AlertLog(), Chat()]).notify(alert_context(tmp_path))

    logged = [json.loads(line) for line in (tmp_path / "alerts.jsonl").read_text().splitlines()]
    assert len(logged) == 1 and delivered == logged
    assert {k: logged[0][k] for k in ("title", "dag_id", "run_id", "task_id")} == {
        "title": "message repair failed",
        "dag_id": DAG_ID,
        "run_id": "manual__alert-test",
        "task_id": "check",
    }
    assert "gate failed" in logged[0]["reason"]


def test_the_default_channels_include_the_alert_log(tmp_path, monkeypatch):
    from james_airflow.notifiers import ConsistencyAlert

    monkeypatch.setenv("JAMES_ALERT_LOG", str(tmp_path / "alerts.jsonl"))
    ConsistencyAlert().notify(alert_context(tmp_path))

    assert len((tmp_path / "alerts.jsonl").read_text().splitlines()) == 1


@pytest.mark.end_to_end
def test_a_run_whose_window_ends_stops_well_and_the_next_run_goes_on(
    dagbag, airflow_against_test_node, cql, new_keyspace, monkeypatch
):
    keyspace = new_keyspace("dagwindow")
    create_schema(cql, keyspace, "3.9")
    found = break_every_kind(cql, keyspace, "3.9", platform(cql, keyspace, "3.9"))
    before = write_times(cql, keyspace)
    conf = {"keyspace": keyspace, "recheck_delay_seconds": 0, "max_destructive_share": 0.5}

    dag = dagbag.get_dag(DAG_ID)  # parsed with the tests' window (none: no Deadline alert in dag.test())
    tests_window = str(setting("JAMES_REPAIR_WINDOW_MINUTES"))
    monkeypatch.setenv("JAMES_REPAIR_WINDOW_MINUTES", "0.0001")  # read by the tasks: the window ends at once
    stopped = dag.test(run_conf=conf)

    assert str(stopped.state) == "success", "a window's end is not a failure"
    assert task_states(stopped) == {
        "check": "success",
        "anything_to_repair": "success",
        "repair": "skipped",
        "verify": "skipped",
        "report": "success",
    }
    assert report_summary(stopped)["check"]["windowEnded"] == "window ended, 16 ranges left"
    assert write_times(cql, keyspace) == before, "nothing written"
    assert airflow_against_test_node() == [], "no alert"

    monkeypatch.setenv("JAMES_REPAIR_WINDOW_MINUTES", tests_window)
    started = time.perf_counter()
    resumed = dagbag.get_dag(DAG_ID).test(run_conf=conf)
    print(f"dag.test() resumed repair run: {time.perf_counter() - started:.0f}s")

    assert str(resumed.state) == "success"
    assert task_states(resumed) == {
        "check": "success",
        "anything_to_repair": "success",
        "repair": "success",
        "verify": "success",
        "report": "success",
    }
    summary = report_summary(resumed)
    assert summary["check"]["ranges"]["resumed"] is True
    assert summary["check"]["inconsistencies"] == found, "the resumed check reports the whole scan's findings"
    assert summary["repair"]["reusedScan"]["runId"]
    assert {k: summary["repair"][k] for k in ("status", "addedMessageIdEntries", "removedMessageIdEntries")} == {
        "status": "COMPLETED",
        "addedMessageIdEntries": found["missing"],
        "removedMessageIdEntries": found["orphan"],
    }
    assert summary["verify"]["remainingInconsistencies"] == 0
    assert projection(cql, keyspace) == truth(cql, keyspace)
    assert airflow_against_test_node() == [], "no alert"
