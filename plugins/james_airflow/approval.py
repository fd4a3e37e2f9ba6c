"""The offline mailbox repair's Airflow pieces: its Spark job operator, the diagnosis gate, the human approval
(Airflow's human-in-the-loop ApprovalOperator) and the notification that asks the approvers.

The approval form shows the diagnosis (counts per kind, conflicts, orphan paths, a sample) and asks the approver to
type ALL-SERVICES-ARE-OFFLINE, as James's webadmin header requires. Reject, a timeout (whose default is Reject) or
an Approve without that exact text all skip the repair: nothing is written. Only the assigned approvers can answer
(Airflow's auth manager checks it on the response endpoint the UI uses). The repair task checks the approval's
answer again before it passes the confirmation to the job, which refuses to write without it.
"""

import logging
from datetime import UTC, datetime, timedelta

from airflow.providers.standard.operators.hitl import ApprovalOperator, HITLOperator
from airflow.sdk import BaseNotifier, Param
from james_consistency.mailboxes import CONFIRMATION
from james_consistency.report.run_report import RunReport
from james_consistency.runtime.package_data import entry_point
from james_consistency.settings import setting

from james_airflow.notifiers import airflow_base_url, run_url, send_alert
from james_airflow.operators import ConsistencyJobOperator
from james_airflow.runs import read_report

log = logging.getLogger(__name__)

CHECK, APPROVE = "check", "approve"
CONFIRMATION_FIELD = "confirmation"
ANSWER = "answer"  # the XCom key of the approver's decision


def approved(answer: dict | None, confirmation_required: bool = True) -> bool:
    """An approval counts only with Approve chosen and, when required, the exact confirmation typed."""
    if not answer or answer.get("chosen_options") != [ApprovalOperator.APPROVE]:
        return False
    typed = str((answer.get("params_input") or {}).get(CONFIRMATION_FIELD) or "").strip()
    return typed == CONFIRMATION or not confirmation_required


def mailbox_job_arguments(mode: str, params: dict, report: str, answer: dict | None = None) -> list[str]:
    """the mailboxes entry point's arguments; a repair gets the confirmation only from an approval that has it. The
    check runs with the repair's orphan-path policy and merge choice, so that the actions it plans (on the approval
    form) are the ones the repair takes."""
    arguments = ["--keyspace", str(params["keyspace"]), "--mode", mode, "--report", report]
    if mode == "repair" and not approved(answer):
        raise RuntimeError(f"no approval with the typed confirmation {CONFIRMATION}: the repair does not run")
    if mode in ("check", "repair"):
        arguments += ["--orphan-paths", str(params["orphan_paths"])]
        if params.get("merge"):
            arguments.append("--merge")
    if mode == "repair":
        arguments += ["--confirm", CONFIRMATION, "--max-passes", str(params["max_passes"])]
    return arguments


class MailboxJobOperator(ConsistencyJobOperator):
    """spark-submit of the mailboxes entry point (check, repair or verify), with the connection handling of the other
    repair jobs (address from the Airflow connection, credentials by environment only)."""

    def __init__(self, *, mode: str, **kwargs):
        super().__init__(target="mailboxes", mode=mode, **kwargs)
        self.application = str(entry_point("mailboxes.py"))

    def arguments(self, context, report: str) -> list[str]:
        answer = context["ti"].xcom_pull(task_ids=APPROVE, key=ANSWER) if self.mode == "repair" else None
        return mailbox_job_arguments(self.mode, context["params"], report, answer)


def approval_needed(**context) -> bool:
    """The gate after the diagnosis: Great Expectations' `mailbox_nothing_to_do` (run in the job) passed means the
    run ends here, successfully; otherwise the summary for the approval form is pushed (XCom `approval_summary`)."""
    report = read_report(context["dag"].dag_id, context["run_id"], CHECK)
    if report is None:
        raise RuntimeError("the diagnosis wrote no report")
    log.info("diagnosis: %s", report.inconsistencies)
    if report.nothingToDo:
        log.info("Great Expectations: no mailbox inconsistency, nothing to approve")
        return False
    fixable = sum(count for kind, count in report.inconsistencies.items() if kind not in _conflict_kinds())
    from james_consistency.mailboxes.report import approval_summary  # Spark-side code: imported at run time only

    summary = approval_summary(report)
    context["ti"].xcom_push(key="approval_summary", value=summary)
    context["ti"].xcom_push(key="counts", value=report.inconsistencies)
    if not fixable and not context["params"].get("merge"):
        log.info("only conflicts, which the repair only reports: nothing to approve\n%s", summary)
        return False
    return True


def _conflict_kinds() -> tuple[str, ...]:
    from james_consistency.mailboxes.diagnosis import CONFLICTS

    return CONFLICTS


class ApprovalRequest(BaseNotifier):
    """Tells the approvers that a decision waits, with the link to the approval page of the Airflow UI, through the
    alert channels (alert log always; mail and chat when configured)."""

    def __init__(self, approvers: list[str]):
        super().__init__()
        self.approvers = approvers

    def message(self, report: RunReport | None, context) -> str:
        """What waits for the approvers (the check step's report, when it wrote one)."""
        return (
            f"The offline mailbox repair of keyspace {report.keyspace if report else None} waits for one of "
            f"{', '.join(self.approvers)}. Stop James's SMTP, IMAP and JMAP first, then approve by typing "
            f"{CONFIRMATION}; without an answer it is rejected."
        )

    def notify(self, context) -> None:
        ti = context["ti"]
        dag_id, run_id = context["dag"].dag_id, context["run_id"]
        link = HITLOperator.generate_link_to_ui_from_context(context=context, base_url=airflow_base_url())
        report = read_report(dag_id, run_id, CHECK)
        keyspace = report.keyspace if report else None
        alert = {
            "title": f"{dag_id}: approval requested",
            "kind": "approval-request",
            "message": self.message(report, context),
            "at": datetime.now(UTC).isoformat(),
            "dag_id": dag_id,
            "run_id": run_id,
            "task_id": ti.task_id,
            "approvers": self.approvers,
            "approval_url": link,
            "run_url": run_url(dag_id, run_id),
            "links": [("Approve or reject in Airflow", link)],
            "report": {
                "keyspace": keyspace,
                "target": report.target if report else None,
                "mode": "check",
                "status": report.status if report else None,
                "inconsistencies": report.inconsistencies if report else None,
            },
        }
        send_alert(alert, context)


class OfflineApprovalOperator(ApprovalOperator):
    """Approve / Reject, where Approve counts only with the typed confirmation: an Approve without it is handled as
    a Reject (the repair and what follows are skipped, nothing is written, the run succeeds)."""

    def confirmation_required(self, context) -> bool:
        """Whether this run's Approve needs the typed confirmation (always, for the offline mailbox repair)."""
        return True

    def execute_complete(self, context, event):
        required = self.confirmation_required(context)
        if "error" not in event and event.get("chosen_options") == [self.APPROVE] and not approved(event, required):
            typed = (event.get("params_input") or {}).get(CONFIRMATION_FIELD)
            log.warning("Approve without the confirmation %s (typed %r): handled as Reject", CONFIRMATION, typed)
            event = {**event, "chosen_options": [self.REJECT]}
        if "error" not in event:
            # The decision as the repair and the report read it (XCom `answer`; plain JSON).
            responded_at = event.get("responded_at")
            context["ti"].xcom_push(
                key=ANSWER,
                value={
                    "chosen_options": list(event.get("chosen_options") or []),
                    "params_input": dict(event.get("params_input") or {}),
                    "responded_by_user": event.get("responded_by_user"),
                    "responded_at": responded_at.isoformat() if hasattr(responded_at, "isoformat") else responded_at,
                },
            )
        return super().execute_complete(context, event)


def approval_step(
    *, subject: str, body: str, params: dict, operator=OfflineApprovalOperator, notifier=ApprovalRequest
) -> OfflineApprovalOperator:
    """The step `approve`: Approve or Reject (Reject by default, and when nobody answers within
    JAMES_MAILBOX_APPROVAL_TIMEOUT_MINUTES), answered only by the approvers of JAMES_MAILBOX_APPROVERS, who are
    notified with its link."""
    approvers = list(setting("JAMES_MAILBOX_APPROVERS"))
    return operator(
        task_id=APPROVE,
        subject=subject,
        body=body,
        params=params,
        defaults="Reject",
        response_timeout=timedelta(minutes=setting("JAMES_MAILBOX_APPROVAL_TIMEOUT_MINUTES")),
        assigned_users=[{"id": name, "name": name} for name in approvers],
        notifiers=[notifier(approvers)],
    )


OFFLINE_ONLY = (
    "The repair can cancel users' actions: approve only once James's SMTP, IMAP and JMAP are stopped, "
    f"and type `{CONFIRMATION}` here. Without it, Approve is handled as Reject."
)


def approval_params(description_md: str = OFFLINE_ONLY) -> dict[str, Param]:
    return {
        # Optional in the form (null allowed): a required field would keep Reject disabled until something is typed.
        CONFIRMATION_FIELD: Param(
            None,
            type=["null", "string"],
            title="Type ALL-SERVICES-ARE-OFFLINE",
            description_md=description_md,
        )
    }


APPROVAL_BODY = """\
## Offline mailbox repair of `{{ params.keyspace }}`

Run `{{ run_id }}` diagnosed the mailbox and path tables. **Approve only while James's SMTP, IMAP and JMAP services
are stopped**, and type `ALL-SERVICES-ARE-OFFLINE` below. Reject (or no answer) writes nothing.

{{ ti.xcom_pull(task_ids='anything_to_repair', key='approval_summary') }}

Options of this run: orphan-path policy `{{ params.orphan_paths }}`, merge `{{ params.merge }}`, at most
`{{ params.max_passes }}` passes.
"""


def decision(nothing_to_do: bool, answer: dict | None, acted: bool, confirmation_required: bool = True) -> str:
    """What the approval step decided, as a run's summary tells it."""
    if nothing_to_do:
        return "nothing-to-do"
    if answer is None:
        return "approved" if acted else "not-asked"
    return "approved" if approved(answer, confirmation_required) else "rejected"


def summarize_offline_repair(**context) -> dict:
    """The run's outcome in one XCom: what the diagnosis found, what the approver decided, what the repair did."""
    dag_id, run_id = context["dag"].dag_id, context["run_id"]
    diagnosis = read_report(dag_id, run_id, CHECK)
    repair = read_report(dag_id, run_id, "repair")
    verify = read_report(dag_id, run_id, "verify")
    answer = context["ti"].xcom_pull(task_ids=APPROVE, key=ANSWER)
    nothing_to_do = diagnosis is not None and bool(diagnosis.nothingToDo)
    summary = {
        "keyspace": diagnosis.keyspace if diagnosis else None,
        "decision": decision(nothing_to_do, answer, acted=repair is not None),
        "respondedBy": (answer or {}).get("responded_by_user"),
        "found": diagnosis.inconsistencies if diagnosis else None,
        "conflictingEntries": len(diagnosis.conflictingEntries or []) if diagnosis else 0,
    }
    if repair:
        summary["repair"] = {
            "status": repair.status,
            "fixedCount": repair.fixedCount,
            "failedCount": repair.failedCount,
            "remaining": repair.remaining,
            "conflictingEntries": len(repair.conflictingEntries or []),
        }
    if verify:
        summary["verify"] = {"status": verify.status, "remainingFixable": verify.remainingFixable}
    log.info("mailbox offline repair: %s", summary)
    return summary
