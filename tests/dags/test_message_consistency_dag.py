"""Whole runs of message_consistency through Airflow's dag.test() on the real node, Spark and Great Expectations."""

from james_consistency.schema import create_schema
from support.messages import break_every_kind, insert, message, platform, projection, truth, write_times


def task_states(run) -> dict[str, str]:
    return {ti.task_id: str(ti.state) for ti in run.get_task_instances()}


def test_a_broken_keyspace_is_repaired(dagbag, airflow_against_test_node, cql, new_keyspace):
    keyspace = new_keyspace("dag")
    create_schema(cql, keyspace, "3.9")
    break_every_kind(cql, keyspace, "3.9", platform(cql, keyspace, "3.9"))

    run = dagbag.get_dag("message_consistency").test(
        run_conf={"keyspace": keyspace, "recheck_delay_seconds": 0, "max_destructive_share": 0.5}
    )

    assert str(run.state) == "success"
    assert task_states(run) == {
        "check_before": "success",
        "anything_to_repair": "success",
        "repair": "success",
        "verify_after": "success",
        "report": "success",
    }
    assert projection(cql, keyspace) == truth(cql, keyspace)
    assert airflow_against_test_node() == []


def test_a_dry_run_stops_after_the_check_and_writes_nothing(dagbag, airflow_against_test_node, cql, new_keyspace):
    keyspace = new_keyspace("dagdry")
    create_schema(cql, keyspace, "3.9")
    break_every_kind(cql, keyspace, "3.9", platform(cql, keyspace, "3.9"))
    before = write_times(cql, keyspace)

    run = dagbag.get_dag("message_consistency").test(run_conf={"keyspace": keyspace, "dry_run": True})

    assert str(run.state) == "success"
    states = task_states(run)
    assert states["check_before"] == "success" and states["report"] == "success"
    assert states["repair"] == states["verify_after"] == "skipped"
    assert write_times(cql, keyspace) == before


def test_a_corrupt_truth_fails_at_the_gate_writes_nothing_and_alerts(
    dagbag, airflow_against_test_node, cql, new_keyspace
):
    keyspace = new_keyspace("dagbad")
    create_schema(cql, keyspace, "3.9")
    rows = platform(cql, keyspace, "3.9")
    cql.execute(f"DELETE FROM {keyspace}.messageidtable WHERE mailboxid = %s AND uid = 2", (rows[0]["mailboxid"],))
    insert(cql, keyspace, "imapuidtable", message("3.9", rows[0]["mailboxid"], 0, 4_242, modseq=None))
    before = projection(cql, keyspace)

    run = dagbag.get_dag("message_consistency").test(run_conf={"keyspace": keyspace})

    assert str(run.state) == "failed"
    states = task_states(run)
    assert states["check_before"] == "failed"
    assert states["repair"] in ("upstream_failed", "None")
    assert projection(cql, keyspace) == before
    alerts = airflow_against_test_node()
    assert len(alerts) == 1
    alert = alerts[0]
    assert alert["dag_id"] == "message_consistency" and alert["task_id"] == "check_before"
    assert alert["report"]["keyspace"] == keyspace
    gate = alert["report"]["failed_gates"][0]
    assert gate["gate"] == "messages_truth_health"
    assert {failure["target"] for failure in gate["failed_expectations"]} >= {"uid", "modseq"}
