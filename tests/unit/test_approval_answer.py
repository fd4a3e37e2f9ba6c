"""Which approval answers let the offline mailbox repair write: only Approve with the exact typed confirmation."""

import pytest
from james_airflow.approval import approved, mailbox_job_arguments

PARAMS = {"keyspace": "james_prod", "orphan_paths": "recreate", "merge": False, "max_passes": 5}


def answer(option: str, confirmation: str | None) -> dict:
    return {"chosen_options": [option], "params_input": {"confirmation": confirmation}}


@pytest.mark.parametrize(
    "response",
    [
        pytest.param(None, id="no answer (timeout)"),
        pytest.param(answer("Reject", "ALL-SERVICES-ARE-OFFLINE"), id="rejected even with the text"),
        pytest.param(answer("Approve", None), id="approved with the field left empty"),
        pytest.param(answer("Approve", ""), id="approved with an empty text"),
        pytest.param(answer("Approve", "all-services-are-offline"), id="approved with the wrong case"),
        pytest.param({"chosen_options": ["Approve"]}, id="approved without the form's values"),
    ],
)
def test_without_approve_and_the_exact_confirmation_the_repair_gets_no_confirmation(response):
    assert not approved(response)
    with pytest.raises(RuntimeError, match="no approval with the typed confirmation ALL-SERVICES-ARE-OFFLINE"):
        mailbox_job_arguments("repair", PARAMS, "/tmp/report.json", response)


def test_approve_with_the_confirmation_passes_it_to_the_job_even_with_spaces_around():
    response = answer("Approve", "  ALL-SERVICES-ARE-OFFLINE \n")
    assert approved(response)
    arguments = mailbox_job_arguments("repair", PARAMS, "/tmp/report.json", response)
    assert arguments[arguments.index("--confirm") + 1] == "ALL-SERVICES-ARE-OFFLINE"


def test_the_check_plans_with_the_orphan_path_policy_and_merge_the_repair_will_run_with():
    params = {**PARAMS, "orphan_paths": "delete", "merge": True}

    arguments = mailbox_job_arguments("check", params, "/tmp/report.json")

    assert arguments == [
        "--keyspace", "james_prod", "--mode", "check", "--report", "/tmp/report.json", "--orphan-paths", "delete",
        "--merge",
    ]  # fmt: skip
    assert "--confirm" not in arguments, "a check never gets the confirmation"
