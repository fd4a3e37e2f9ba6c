"""When undo_repair applies an undo: only after Approve, and, to undo the offline mailbox repair, only with the typed
confirmation (which the job then gets); and what its approval form says."""

import pytest
from james_airflow.undo import plan_table, undo_job_arguments
from james_consistency.report.run_report import RunReport, parse_report

RUN_DIR, REPORT = "hdfs://namenode:8020/james/airflow/message_consistency/night/messages", "/tmp/repair.json"
OFFLINE = "ALL-SERVICES-ARE-OFFLINE"


def answer(option: str, confirmation: str | None = None) -> dict:
    return {"chosen_options": [option], "params_input": {"confirmation": confirmation}}


def dry_run(undone_target: str) -> RunReport:
    return parse_report(
        {
            "type": "undo-repair",
            "target": "undo",
            "mode": "check",
            "dryRun": False,
            "keyspace": "james",
            "runId": "20261126T211800-aaaaaa",
            "status": "COMPLETED",
            "result": "COMPLETED",
            "undoneRunId": "20261126T023000-bbbbbb",
            "undoneTarget": undone_target,
            "undoneRunDir": RUN_DIR,
            "undoPlan": {"mailbox": {"restored": 3, "not-reversed": 1}, "mailboxpathv3": {"newer-kept": 2}},
        }
    )


def test_the_dry_run_gets_the_folder_and_never_applies():
    assert undo_job_arguments(RUN_DIR, REPORT) == ["--run-dir", RUN_DIR, "--report", REPORT]


def test_a_projection_repair_is_undone_on_approve_alone():
    arguments = undo_job_arguments(RUN_DIR, REPORT, True, answer("Approve"), confirmation_required=False)

    assert arguments == ["--run-dir", RUN_DIR, "--report", REPORT, "--apply"]


@pytest.mark.parametrize(
    ("response", "required"),
    [
        pytest.param(None, False, id="no answer (timeout)"),
        pytest.param(answer("Reject"), False, id="rejected"),
        pytest.param(answer("Approve"), True, id="mailbox repair approved without the confirmation"),
        pytest.param(answer("Approve", "all services are offline"), True, id="mailbox repair, wrong confirmation"),
    ],
)
def test_without_the_approval_it_needs_the_undo_is_not_applied(response, required):
    with pytest.raises(RuntimeError, match="the undo is not applied"):
        undo_job_arguments(RUN_DIR, REPORT, True, response, confirmation_required=required)


def test_the_undo_of_a_mailbox_repair_passes_the_typed_confirmation_on():
    arguments = undo_job_arguments(RUN_DIR, REPORT, True, answer("Approve", f" {OFFLINE} "), True)

    assert arguments[-3:] == ["--apply", "--confirm", OFFLINE]


def test_the_form_shows_the_plan_per_table_and_action_and_asks_for_the_confirmation_of_a_mailbox_undo():
    shown = plan_table(dry_run("mailboxes")).splitlines()

    assert shown[0] == (
        f"**Undone run** `20261126T023000-bbbbbb`: mailboxes on keyspace `james`, work folder `{RUN_DIR}`."
    )
    assert shown[2:6] == [
        "| table | restored | newer-kept | already-as-before | not-reversed | failed |",
        "|---|---:|---:|---:|---:|---:|",
        "| mailbox | 3 | 0 | 0 | 1 | 0 |",
        "| mailboxpathv3 | 0 | 2 | 0 | 0 | 0 |",
    ]
    assert f"type `{OFFLINE}`" in shown[-1]
    assert plan_table(dry_run("messages")).splitlines()[-1] == (
        "No typed confirmation is needed for this run: Approve is enough."
    )
