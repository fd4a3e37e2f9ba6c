"""Whole runs of mailbox_offline_repair through dag.test() on the real node, Spark and Great Expectations, answered
through Airflow's real approval path: a real `airflow api-server` on this metadata database, a login of the simple
auth manager, and the PATCH .../hitlDetails endpoint the Required Actions page of the UI calls. The timeout is
resolved by the scheduler's own awaiting-input sweep.

Run with an Airflow home of its own when another session uses the shared one, e.g.
`AIRFLOW_HOME=/tmp/airflow-mailbox scripts/airflow-init.sh` then the same AIRFLOW_HOME for pytest.
"""

import time

import pytest
from james_consistency.cassandra.schema import create_schema
from james_consistency_kit.local_airflow import Api
from support import approvals
from support.mailboxes import break_every_mailbox_kind, mailbox_rows, paths, write_times

DAG_ID = "mailbox_offline_repair"
APPROVE_TASK = "approve"
APPROVER, APPROVER_PASSWORD = "anna", "anna-approves"
OUTSIDER, OUTSIDER_PASSWORD = "admin", "admin-is-no-approver"
OFFLINE = "ALL-SERVICES-ARE-OFFLINE"


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    """A real api-server on this Airflow home, with an approver and an admin who is not one."""
    users = {APPROVER: (APPROVER_PASSWORD, "op"), OUTSIDER: (OUTSIDER_PASSWORD, "admin")}
    with approvals.api_server(tmp_path_factory.mktemp("api"), users) as client:
        yield client


@pytest.fixture
def mailbox_dag(monkeypatch, api, airflow_against_test_node):
    """The DAG as deployed with `anna` as the only approver (parsed after the deployment settings are set)."""
    from airflow.dag_processing.dagbag import DagBag
    from james_airflow.bundle import DAGS_FOLDER

    monkeypatch.setenv("JAMES_MAILBOX_APPROVERS", APPROVER)
    monkeypatch.setenv("AIRFLOW__API__BASE_URL", api.base)

    def make(timeout_minutes: float = 30):
        monkeypatch.setenv("JAMES_MAILBOX_APPROVAL_TIMEOUT_MINUTES", str(timeout_minutes))
        return DagBag(str(DAGS_FOLDER)).get_dag(DAG_ID)

    return make


class Approver(approvals.Approver):
    """Waits for the approval request of the DAG run, reads it as the UI shows it, then answers it (or, with
    `answers` empty, lets it time out and runs the scheduler's awaiting-input sweep)."""

    def __init__(self, api: Api, keyspace: str, answers: list[tuple[str, str, dict]]):
        super().__init__(api, DAG_ID, f" {keyspace}:", (APPROVER, APPROVER_PASSWORD), answers, APPROVE_TASK)

    def unanswered(self):
        """Wait past the response deadline, then run what the scheduler runs on each loop for parked tasks."""
        from airflow.jobs.job import Job
        from airflow.jobs.scheduler_job_runner import SchedulerJobRunner
        from airflow.models.taskinstance import TaskInstance
        from airflow.utils.session import create_session
        from sqlalchemy import select

        with create_session() as session:
            deadline = session.scalar(
                select(TaskInstance.trigger_timeout).where(
                    TaskInstance.dag_id == DAG_ID, TaskInstance.task_id == APPROVE_TASK,
                    TaskInstance.run_id == self.request["task_instance"]["dag_run_id"],
                )
            )  # fmt: skip
        assert deadline is not None, "the parked approval has no response deadline"
        time.sleep(max(0.0, deadline.timestamp() - time.time()) + 1)
        SchedulerJobRunner(job=Job()).check_awaiting_input_timeouts()


def answer(option: str, confirmation: str) -> dict:
    return {"chosen_options": [option], "params_input": {"confirmation": confirmation}}


def run_with(dag, keyspace: str, approver: Approver):
    approver.start()
    started = time.perf_counter()
    run = dag.test(run_conf={"keyspace": keyspace})
    print(f"dag.test() {dag.dag_id}: {time.perf_counter() - started:.0f}s")
    approver.join(timeout=60)
    assert approver.error is None, approver.error
    return run


def states(run) -> dict[str, str]:
    return {ti.task_id: str(ti.state) for ti in run.get_task_instances()}


def report_summary(run) -> dict:
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        value = session.scalar(
            select(XComModel.value).where(
                XComModel.dag_id == DAG_ID,
                XComModel.run_id == run.run_id,
                XComModel.task_id == "report",
                XComModel.key == "return_value",
            )
        )
    return XComModel.deserialize_value(type("Row", (), {"value": value})())


@pytest.fixture
def broken_keyspace(cql, new_keyspace):
    keyspace = new_keyspace("mbxdag")
    create_schema(cql, keyspace, "3.9")
    ids = break_every_mailbox_kind(cql, keyspace, "3.9")
    return keyspace, ids


@pytest.mark.end_to_end
def test_approved_with_the_confirmation_the_mailboxes_are_repaired(
    mailbox_dag, api, cql, broken_keyspace, airflow_against_test_node
):
    keyspace, ids = broken_keyspace
    approver = Approver(api, keyspace, [(OUTSIDER, OUTSIDER_PASSWORD, answer("Approve", OFFLINE)),
                              (APPROVER, APPROVER_PASSWORD, answer("Approve", OFFLINE))])  # fmt: skip

    run = run_with(mailbox_dag(), keyspace, approver)

    assert approver.statuses == [403, 200], "only the assigned approver may answer"
    assert str(run.state) == "success"
    assert states(run) == {
        "check": "success",
        "anything_to_repair": "success",
        APPROVE_TASK: "success",
        "repair": "success",
        "verify": "success",
        "report": "success",
    }
    # What the approver was shown: the diagnosis, the conflicts with their merge, the orphan paths, the field.
    request = approver.request
    assert request["subject"] == f"Offline mailbox repair of {keyspace}: approve once James is stopped"
    assert request["options"] == ["Approve", "Reject"] and request["defaults"] == ["Reject"]
    assert request["assigned_users"] == [{"id": APPROVER, "name": APPROVER}]
    assert request["params"]["confirmation"]["value"] is None, "optional: Reject needs nothing typed"
    body = request["body"]
    for line in ("| orphan-mailbox | 1 |", "| two-ids-one-path | 1 |", "| mailbox-registered-elsewhere | 2 |",
                 "| orphan-path | 2 | re-create the mailbox row from the path (James 3.9.x) |",
                 "**Orphan paths** (policy `recreate`):", "orphan-path policy `recreate`",
                 f"`#private:alice:Archive` -> `{ids['archive']}`: 3 messages",
                 f"merge into `{ids['dave']}`", "ALL-SERVICES-ARE-OFFLINE"):  # fmt: skip
        assert line in body
    # The approver was notified with a link to the approval page.
    [notice] = [alert for alert in airflow_against_test_node() if alert.get("kind") == "approval-request"]
    assert notice["approvers"] == [APPROVER]
    assert notice["approval_url"].startswith(
        f"{api.base}/dags/{DAG_ID}/runs/{run.run_id}/tasks/{APPROVE_TASK}/required_actions"
    )
    # And the tables are repaired (conflicts reported, left as they were).
    rows, registered = mailbox_rows(cql, keyspace), paths(cql, keyspace, "3.9")
    assert registered["alice:Drafts"] == ids["orphan"] and rows[ids["archive"]] == "alice:Archive"
    assert rows[ids["old"]] == "alice:Old", "an empty orphan path keeps its folder by default"
    assert rows[ids["work"]] == "carol:Work-renamed" and "carol:Work" not in registered
    assert registered["erin:A"] == ids["loopb"] and rows[ids["loopb"]] == "erin:A"
    summary = report_summary(run)
    assert summary["decision"] == "approved" and summary["respondedBy"]["id"] == APPROVER
    assert summary["repair"]["fixedCount"] == 7 and summary["repair"]["conflictingEntries"] == 1
    assert summary["verify"]["remainingFixable"] == 0


@pytest.mark.parametrize(
    "response",
    [
        pytest.param(answer("Approve", "all services are offline"), id="wrong-confirmation"),
        pytest.param(None, id="timeout-defaults-to-reject", marks=pytest.mark.end_to_end),
    ],
)
def test_without_an_approval_nothing_is_written_and_the_run_succeeds(mailbox_dag, api, cql, broken_keyspace, response):
    keyspace, _ = broken_keyspace
    before = write_times(cql, keyspace, "3.9")
    answers = [] if response is None else [(APPROVER, APPROVER_PASSWORD, response)]
    approver = Approver(api, keyspace, answers)

    run = run_with(mailbox_dag(timeout_minutes=0.2 if response is None else 30), keyspace, approver)

    assert str(run.state) == "success"
    found = states(run)
    assert found["check"] == found["anything_to_repair"] == found[APPROVE_TASK] == "success"
    assert found["repair"] == found["verify"] == "skipped"
    assert found["report"] == "success"
    assert write_times(cql, keyspace, "3.9") == before, "nothing written"
    assert report_summary(run)["decision"] == "rejected"


def test_a_consistent_keyspace_ends_at_the_gate_without_asking_anyone(
    mailbox_dag, cql, new_keyspace, airflow_against_test_node
):
    from support.mailboxes import add_mailbox

    keyspace = new_keyspace("mbxdagok")
    create_schema(cql, keyspace, "3.9")
    add_mailbox(cql, keyspace, "3.9", __import__("uuid").uuid1(), "bob", "INBOX")

    run = mailbox_dag().test(run_conf={"keyspace": keyspace})

    assert str(run.state) == "success"
    found = states(run)
    assert found["check"] == found["anything_to_repair"] == found["report"] == "success"
    assert found[APPROVE_TASK] == found["repair"] == found["verify"] == "skipped"
    assert report_summary(run)["decision"] == "nothing-to-do"
    assert [alert for alert in airflow_against_test_node() if alert.get("kind") == "approval-request"] == []
