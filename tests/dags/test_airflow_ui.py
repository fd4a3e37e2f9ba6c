"""The real Airflow UI in headless Chromium (Debian's chromium and chromedriver), served by `airflow standalone`
(scheduler, triggerer, dag-processor, api-server) against the test node: an operator triggers a dry run from the form
with values changed and sees it succeed (the triggerer meanwhile alerts that it overran a 3-second night window, and
the run goes on); the approver sees the mailbox repair awaiting approval, with the diagnosis in the form, and rejects
it there (nothing is written).
Screenshots go to the test's temporary folder (their paths are printed)."""

import json
from urllib.parse import quote

import pytest
from james_consistency.cassandra.schema import create_schema
from james_consistency_kit.local_airflow import airflow_standalone
from support.browser import wait_for
from support.mailboxes import break_every_mailbox_kind, mailbox_rows, paths
from support.messages import platform, projection

pytestmark = pytest.mark.end_to_end

ADMIN, ADMIN_PASSWORD = "admin", "ui-test-admin"
APPROVER, APPROVER_PASSWORD = "approver", "ui-test-approver"
MESSAGES_DAG, MAILBOX_DAG = "message_consistency", "mailbox_offline_repair"
TRIGGER_DIALOG = "//*[@role='dialog'][contains(., 'Trigger Dag - ')]"


def test_an_operator_triggers_a_dry_run_and_the_approver_sees_the_mailbox_diagnosis(
    cassandra_node, cql, new_keyspace, tmp_path, browser, own_airflow_home
):
    messages_keyspace, mailboxes_keyspace = new_keyspace("ui_messages"), new_keyspace("ui_mailboxes")
    create_schema(cql, messages_keyspace, "3.9")
    platform(cql, messages_keyspace, "3.9")
    create_schema(cql, mailboxes_keyspace, "3.9")
    ids = break_every_mailbox_kind(cql, mailboxes_keyspace, "3.9")
    projection_before = projection(cql, messages_keyspace)
    mailboxes_before, paths_before = mailbox_rows(cql, mailboxes_keyspace), paths(cql, mailboxes_keyspace, "3.9")
    alerts = tmp_path / "alerts.jsonl"

    def alert_of(run_id: str):
        lines = alerts.read_text().splitlines() if alerts.exists() else []
        return next((alert for alert in map(json.loads, lines) if alert["run_id"] == run_id), None)

    logins = {ADMIN: ADMIN_PASSWORD, APPROVER: APPROVER_PASSWORD}
    passwords = tmp_path / "passwords.json"
    passwords.write_text(json.dumps(logins))

    with airflow_standalone(
        tmp_path / "standalone.log",
        logins,
        passwords,
        JAMES_MAILBOX_APPROVERS=APPROVER,
        JAMES_REPAIR_WINDOW_MINUTES="0.05",  # 3 s: any Spark job overruns it
        JAMES_ALERT_LOG=str(alerts),
        AIRFLOW_CONN_CASSANDRA_DEFAULT=f"cassandra://127.0.0.1:{cassandra_node.native_port}",
        **own_airflow_home,
    ) as api:
        for dag_id in (MESSAGES_DAG, MAILBOX_DAG):
            api.wait_for_dag(dag_id)
            api.set_paused(dag_id, False)
        try:
            ui = browser(api.base)
            ui.log_in(ADMIN, ADMIN_PASSWORD)

            # Three clicks: Trigger, the Dry run switch, Trigger; plus the keyspace typed in.
            ui.driver.get(f"{api.base}/dags/{MESSAGES_DAG}")
            ui.click("//button[@aria-label='Trigger Dag']")
            ui.driver.find_element("xpath", TRIGGER_DIALOG)
            keyspace_field = ui.element("input[name=element_keyspace]")
            assert keyspace_field.get_attribute("value") == "james_demo", "the form's default keyspace"
            keyspace_field.clear()
            keyspace_field.send_keys(messages_keyspace)
            assert not ui.element("input[name=element_dry_run]").is_selected()
            ui.click("//input[@name='element_dry_run']/ancestor::label")
            assert ui.element("input[name=element_dry_run]").is_selected()
            ui.shot("1-trigger-form")
            ui.click(f"{TRIGGER_DIALOG}//button[normalize-space()='Trigger']")

            def triggered_run():
                # Unpausing may also start the cron's latest run, whose conf names no keyspace.
                runs = api.runs(MESSAGES_DAG)
                return next((run for run in runs if (run["conf"] or {}).get("keyspace") == messages_keyspace), 0)

            run = wait_for("the run triggered from the UI", triggered_run, 60)
            assert run["conf"]["dry_run"] is True and run["run_type"] == "manual"
            run_id = run["dag_run_id"]
            # The mailbox repair meanwhile (the heavy pool runs the two Spark jobs one after the other).
            mailbox_run_id = api.trigger(MAILBOX_DAG, {"keyspace": mailboxes_keyspace})

            ui.driver.get(f"{api.base}/dags/{MESSAGES_DAG}/runs/{run_id}")
            wait_for("the run shown as a success", lambda: api.run_state(MESSAGES_DAG, run_id) in ("success", "failed"))
            ui.driver.refresh()
            wait_for("the success badge", lambda: "success" in ui.text().lower(), 60)
            ui.shot("2-dry-run-succeeded")
            assert api.run_state(MESSAGES_DAG, run_id) == "success", api.task_states(MESSAGES_DAG, run_id)
            overrun = wait_for("the overrun alert", lambda: alert_of(run_id), 120)

            # The approver's view: the request under Required Actions, the diagnosis in its form.
            wait_for(
                "the approval request",
                lambda: (
                    api.task_states(MAILBOX_DAG, mailbox_run_id).get("approve") in ("deferred", "awaiting_input")
                    or api.run_state(MAILBOX_DAG, mailbox_run_id) in ("success", "failed")
                ),
            )
            # An answer the trigger hands back before the scheduler has taken in the deferring worker's exit makes
            # Airflow fail the task ("state changed externally": apache/airflow#66374, #71580); a person answers
            # later than a browser does, so the approver here waits for the scheduler to have seen that exit.
            deferred_exit = (
                "Received executor event with state success for task instance "
                f"TaskInstanceKey(dag_id='{MAILBOX_DAG}', task_id='approve', run_id='{mailbox_run_id}'"
            )
            standalone_log = tmp_path / "standalone.log"
            wait_for(
                "the scheduler to see the approval task deferred",
                lambda: deferred_exit in standalone_log.read_text(),
                120,
            )
            ui.log_in(APPROVER, APPROVER_PASSWORD)
            ui.driver.get(f"{api.base}/required_actions?response_received=false")
            subject = f"Offline mailbox repair of {mailboxes_keyspace}: approve once James is stopped"
            ui.click(f"//a[normalize-space()='{subject}']")
            wait_for("the approval form", lambda: "ALL-SERVICES-ARE-OFFLINE" in ui.text(), 60)
            wait_for("the diagnosis in the form", lambda: str(ids["dave2"]) in ui.text(), 60)
            approval_form = " ".join(ui.text().split())
            ui.shot("3-approval-form")
            assert ui.button("Reject").is_enabled(), "Reject needs no typed confirmation"
            ui.click("//button[normalize-space()='Reject']")
            final_state = api.wait_for_run(MAILBOX_DAG, mailbox_run_id, seconds=120)
            mailbox_tasks = api.task_states(MAILBOX_DAG, mailbox_run_id)
            _, outcome = api.call(
                "GET",
                f"/api/v2/dags/{MAILBOX_DAG}/dagRuns/{mailbox_run_id}/taskInstances/report/xcomEntries/return_value"
                "?deserialize=true&stringify=false",
            )
            ui.driver.get(f"{api.base}/dags/{MAILBOX_DAG}/runs/{mailbox_run_id}")
            wait_for("the rejected run's page", lambda: "report" in ui.text(), 60)
            ui.shot("4-rejected-run")
        finally:
            for dag_id in (MESSAGES_DAG, MAILBOX_DAG):
                api.set_paused(dag_id, True)

    # The dry run: as triggered from the form, successful, nothing written; its window overran and was alerted.
    assert projection(cql, messages_keyspace) == projection_before
    assert overrun["title"] == f"{MESSAGES_DAG}: still running after its 0.05-minute window"
    assert overrun["run_url"].endswith(f"/dags/{MESSAGES_DAG}/runs/{quote(run_id, safe='')}")
    assert "JAMES_REPAIR_WINDOW_MINUTES" in overrun["reason"]
    # What the approver was shown: the run, the counts per kind with the planned actions, the conflict with both ids.
    assert f"Offline mailbox repair of {mailboxes_keyspace} Run manual__" in approval_form
    assert "register its path (IF NOT EXISTS)" in approval_form
    assert "keep the latest written path, realign the mailbox row" in approval_form
    assert str(ids["dave"]) in approval_form and str(ids["dave2"]) in approval_form
    assert "Type ALL-SERVICES-ARE-OFFLINE" in approval_form
    # Rejected in the UI: the run succeeds, the repair is skipped, nothing was written.
    assert final_state == "success"
    assert mailbox_tasks["approve"] == "success" and mailbox_tasks["repair"] == "skipped"
    assert outcome["value"]["decision"] == "rejected" and outcome["value"]["respondedBy"]["id"] == APPROVER
    assert mailbox_rows(cql, mailboxes_keyspace) == mailboxes_before
    assert paths(cql, mailboxes_keyspace, "3.9") == paths_before
