"""attachment_integrity: its shape, and a whole run through Airflow's dag.test() on a keyspace written by James 3.8.1
(real node, Spark, Great Expectations), damaged with plain CQL."""

import hashlib
import uuid

import pytest
from james_consistency.settings import setting
from james_consistency_kit import james_harness
from support.dag_runs import task_states

DAG_ID = "attachment_integrity"


def test_weekly_off_peak_with_its_own_cron_variable(dagbag):
    from airflow.timetables.trigger import CronTriggerTimetable

    dag = dagbag.get_dag(DAG_ID)
    assert isinstance(dag.timetable, CronTriggerTimetable)
    assert dag.timetable._expression == setting("JAMES_ATTACHMENT_CHECK_CRON")
    assert {task.task_id for task in dag.tasks} == {
        "check",
        "anything_to_repair",
        "repair",
        "verify",
        "report",
    }
    assert {dag.get_task(step).target for step in ("check", "repair", "verify")} == {"attachments"}
    # A check that found lost attachments fails (and alerts), and the fixable references are still repaired.
    assert dag.get_task("anything_to_repair").trigger_rule == "all_done"
    assert dag.max_active_runs == 1 and dag.catchup is False


def as_uuid(attachment_id: str) -> uuid.UUID:
    return uuid.UUID(bytes=hashlib.md5(attachment_id.encode()).digest(), version=3)


@pytest.mark.end_to_end
@pytest.mark.skipif(not james_harness.is_built("3.8.1"), reason="the James 3.8.1 harness is not built")
def test_a_lost_attachment_alerts_and_the_derivable_references_are_still_repaired(
    dagbag, airflow_against_test_node, cql, cassandra_settings, new_keyspace
):
    keyspace = new_keyspace("attachdag")
    james_harness.run(
        "3.8.1",
        "seed",
        ["--keyspace", keyspace, "--users", "2", "--mailboxes-per-user", "2", "--messages-per-mailbox", "6"],
        cassandra_settings,
    )
    referenced = sorted(
        (str(row.messageid), attachment.id)
        for row in cql.execute(f"SELECT messageid, attachments FROM {keyspace}.messagev3")
        for attachment in row.attachments or []
    )
    (fixable_message, fixable), (lost_message, lost) = referenced[:2]
    cql.execute(f"DELETE message_id FROM {keyspace}.attachmentv2 WHERE idasuuid = {as_uuid(fixable)}")
    cql.execute(f"DELETE FROM {keyspace}.attachmentv2 WHERE idasuuid = {as_uuid(lost)}")

    run = dagbag.get_dag(DAG_ID).test(run_conf={"keyspace": keyspace, "recheck_delay_seconds": 0})

    assert str(run.state) == "failed"
    states = task_states(run)
    assert states["check"] == "failed" and states["anything_to_repair"] == "success"
    assert states["repair"] == "failed", "PARTIAL: one attachment cannot be fixed"
    row = cql.execute(f"SELECT message_id FROM {keyspace}.attachmentv2 WHERE idasuuid = {as_uuid(fixable)}").one()
    assert str(row.message_id) == fixable_message
    alerts = airflow_against_test_node()
    assert sorted(alert["task_id"] for alert in alerts) == ["check", "repair"]
    for alert in alerts:
        assert alert["dag_id"] == DAG_ID and alert["report"]["keyspace"] == keyspace
        assert alert["report"]["status"] == "PARTIAL"
    assert not list(cql.execute(f"SELECT * FROM {keyspace}.attachmentv2 WHERE idasuuid = {as_uuid(lost)}"))
    assert lost_message in {str(row.messageid) for row in cql.execute(f"SELECT messageid FROM {keyspace}.messagev3")}
