"""undo_repair through dag.test() on the real node, Spark and Airflow: a night's message_consistency repair taken
back behind the approval (answered through a real api-server, as in the UI), and a work folder that is no undoable
run's refused before anything runs. The DAG's shape is checked on the parsed DAG."""

import time

import pytest
from james_consistency.cassandra.schema import create_schema
from support.approvals import Approver, api_server
from support.dag_runs import report_summary, task_states
from support.messages import break_every_kind, platform, projection, truth, write_times

DAG_ID = "undo_repair"
APPROVER, APPROVER_PASSWORD = "anna", "anna-approves"


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    with api_server(tmp_path_factory.mktemp("api"), {APPROVER: (APPROVER_PASSWORD, "op")}) as client:
        yield client


@pytest.fixture
def undo_dag(dagbag, monkeypatch):
    """The DAG as deployed with `anna` as the only approver (parsed after the setting is set)."""
    monkeypatch.setenv("JAMES_MAILBOX_APPROVERS", APPROVER)
    return lambda: dagbag.get_dag(DAG_ID)


def test_undo_repair_is_manual_dry_run_approval_undo_report(dagbag):
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    dag = dagbag.get_dag(DAG_ID)

    assert dag.schedule is None and dag.max_active_runs == 1, "triggered by hand only"
    assert [task.task_id for task in dag.topological_sort()] == [
        "check",
        "anything_to_repair",
        "approve",
        "repair",
        "report",
    ]
    assert [(task.task_id, task.mode, task.pool) for task in dag.tasks if isinstance(task, SparkSubmitOperator)] == [
        ("check", "check", "cassandra_heavy"),
        ("repair", "repair", "cassandra_heavy"),
    ]
    form = dag.params.get_param("run_dir").schema
    assert form["type"] == "string" and form["title"] == "Work folder of the repair to undo"
    assert "confirmation" in dag.get_task("approve").params


def test_a_folder_that_is_no_undoable_run_is_refused_before_anything_runs(
    undo_dag, airflow_against_test_node, tmp_path
):
    run = undo_dag().test(run_conf={"run_dir": str(tmp_path / "not-a-repair")})

    assert str(run.state) == "failed"
    assert task_states(run) == {
        "check": "failed",
        "anything_to_repair": "upstream_failed",
        "approve": "upstream_failed",
        "repair": "upstream_failed",
        "report": "upstream_failed",
    }
    [alert] = airflow_against_test_node()
    assert alert["title"] == "undo_repair: a step failed"
    assert f"{tmp_path / 'not-a-repair'} is not the work folder of a repair that can still be undone" in str(alert)


@pytest.mark.end_to_end
def test_a_night_repair_undone_from_airflow_leaves_messageidtable_as_before(
    dagbag, undo_dag, api, cql, new_keyspace, airflow_against_test_node
):
    from james_airflow.runs import read_report

    keyspace = new_keyspace("undodag")
    create_schema(cql, keyspace, "3.9")
    found = break_every_kind(cql, keyspace, "3.9", platform(cql, keyspace, "3.9"))
    broken = projection(cql, keyspace)
    night = dagbag.get_dag("message_consistency").test(
        run_conf={"keyspace": keyspace, "recheck_delay_seconds": 0, "max_destructive_share": 0.5}
    )
    assert str(night.state) == "success" and projection(cql, keyspace) == truth(cql, keyspace) != broken
    repair = read_report("message_consistency", night.run_id, "repair")
    fixed = sum(found.values())
    assert repair.beforeImages.records == fixed
    approves = (APPROVER, APPROVER_PASSWORD, {"chosen_options": ["Approve"]})
    approver = Approver(api, DAG_ID, repair.workDir, (APPROVER, APPROVER_PASSWORD), [approves])
    approver.start()

    started = time.perf_counter()
    run = undo_dag().test(run_conf={"run_dir": repair.workDir})
    print(f"dag.test() {DAG_ID}: {time.perf_counter() - started:.0f}s")
    approver.join(timeout=60)
    assert approver.error is None and approver.statuses == [200], approver.error
    request = approver.request

    assert str(run.state) == "success"
    assert set(task_states(run).values()) == {"success"}
    assert projection(cql, keyspace) == broken, "messageIdTable is as it was before the repair"
    # What the approver was shown: the run undone and the dry run's plan per table and action.
    assert request["subject"] == f"Undo of the repair in {repair.workDir}: approve to take it back"
    assert request["assigned_users"] == [{"id": APPROVER, "name": APPROVER}]
    assert f"**Undone run** `{repair.runId}`: messages on keyspace `{keyspace}`" in request["body"]
    assert "| table | restored | newer-kept | already-as-before | not-reversed | failed |" in request["body"]
    assert f"| messageidtable | {fixed} | 0 | 0 | 0 | 0 |" in request["body"]
    assert "No typed confirmation is needed for this run" in request["body"]
    [notice] = [alert for alert in airflow_against_test_node() if alert.get("kind") == "approval-request"]
    assert notice["title"] == "undo_repair: approval requested" and repair.runId in notice["message"]
    summary = report_summary(run)
    assert (summary["undoneRunId"], summary["decision"]) == (repair.runId, "approved")
    assert summary["plan"] == {"messageidtable": {"restored": fixed}}
    assert summary["undo"]["status"] == "COMPLETED" and summary["undo"]["restored"] == fixed
    # Taken back, the run is no longer offered.
    written = write_times(cql, keyspace)
    again = undo_dag().test(run_conf={"run_dir": repair.workDir})
    assert task_states(again)["check"] == "failed" and write_times(cql, keyspace) == written
