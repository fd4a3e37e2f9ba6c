"""The undo_repair DAG's pieces: the undo job's operator (spark-submit of the undo entry point, a dry run or applied),
the decision after the dry run, the approval (the offline mailbox repair's, reused) and the run's summary.

Which run is undone: the trigger form takes the repair's work folder, the one `james-consistency history` lists under
"Undoable runs" (its report's workDir). Airflow renders the trigger form from the parsed DAG and a DAG file reads
nothing at parse time, so the form cannot offer the runs as a list; the `check` task lists them when it runs (the
kept reports of the retention period whose before-images are still there and not undone yet,
james_consistency.report.history.undoable_runs), logs them, and refuses any other folder, naming the undoable ones.

The approval needs the typed confirmation ALL-SERVICES-ARE-OFFLINE when the run undone is an offline mailbox repair
(its undo asks for it, as the repair did); for any other run, Approve is enough.
"""

import logging

from airflow.sdk.exceptions import AirflowFailException
from james_consistency.mailboxes import CONFIRMATION
from james_consistency.report.run_report import NEWER_KEPT, RESTORED, UNDO_ACTIONS, UNDO_TARGET, RunReport
from james_consistency.runtime.package_data import entry_point

from james_airflow.approval import (
    ANSWER,
    APPROVE,
    CHECK,
    ApprovalRequest,
    OfflineApprovalOperator,
    approved,
    decision,
)
from james_airflow.operators import ConsistencyJobOperator
from james_airflow.runs import read_report

log = logging.getLogger(__name__)

APPLY = "repair"  # the task that applies the undo (the engine's mode for a writing run)
DECIDE = "anything_to_repair"
RUN_DIR = "run_dir"  # the trigger form's field
MAILBOX_REPAIR = "mailboxes"  # the offline mailbox repair's target: its undo needs the typed confirmation
# What taking an image back would give, as the plan's columns show them; those that write.
PLAN_ACTIONS = UNDO_ACTIONS
WRITING_ACTIONS = (RESTORED, NEWER_KEPT)


def chosen_run(run_dir: str):
    """The undoable run whose work folder is `run_dir` (the kept reports read now); AirflowFailException naming the
    undoable runs when it is none of them."""
    from james_consistency.report.history import undoable_lines, undoable_runs
    from james_consistency.runtime.paths import REPORTS_DIR

    undoable = undoable_runs(REPORTS_DIR)
    log.info("undoable runs in %s:\n%s", REPORTS_DIR, "\n".join(undoable_lines(undoable)) or "(none)")
    wanted = run_dir.strip().rstrip("/")
    chosen = next((entry for entry in undoable if entry.undo.run_dir == wanted), None)
    if chosen is None:
        listed = "; ".join(entry.undo.run_dir for entry in undoable) or "none"
        raise AirflowFailException(
            f"{wanted} is not the work folder of a repair that can still be undone (undoable now: {listed})"
        )
    log.info("undoing %s %s on %s (%s)", chosen.target, chosen.run, chosen.keyspace, wanted)
    return chosen


def confirmation_required(dry_run: RunReport | None) -> bool:
    """Whether the undo takes back an offline mailbox repair (so it asks for the typed confirmation)."""
    return dry_run is not None and dry_run.undoneTarget == MAILBOX_REPAIR


def undo_job_arguments(run_dir: str, report: str, apply: bool = False, answer: dict | None = None,
                       confirmation_required: bool = False) -> list[str]:  # fmt: skip
    """The undo entry point's arguments; applied only after an approval (with the confirmation when required)."""
    arguments = ["--run-dir", run_dir, "--report", report]
    if not apply:
        return arguments
    if not approved(answer, confirmation_required):
        needed = f" with the typed confirmation {CONFIRMATION}" if confirmation_required else ""
        raise RuntimeError(f"no approval{needed}: the undo is not applied")
    arguments.append("--apply")
    if confirmation_required:
        arguments += ["--confirm", CONFIRMATION]
    return arguments


class UndoJobOperator(ConsistencyJobOperator):
    """spark-submit of the undo entry point on the form's work folder: the dry run (`check`, after checking the
    folder is an undoable run's) or the undo applied (`repair`, after the approval)."""

    def __init__(self, *, apply: bool, **kwargs):
        super().__init__(target=UNDO_TARGET, mode=APPLY if apply else CHECK, **kwargs)
        self.application = str(entry_point("undo.py"))

    def arguments(self, context, report: str) -> list[str]:
        run_dir = str(context["params"][RUN_DIR]).strip().rstrip("/")
        if self.mode == CHECK:
            chosen_run(run_dir)
            return undo_job_arguments(run_dir, report)
        dry_run = read_report(context["dag"].dag_id, context["run_id"], CHECK)
        answer = context["ti"].xcom_pull(task_ids=APPROVE, key=ANSWER)
        return undo_job_arguments(run_dir, report, True, answer, confirmation_required(dry_run))


def anything_to_write(dry_run: RunReport) -> bool:
    return any(
        count for actions in (dry_run.undoPlan or {}).values() for action, count in actions.items()
        if action in WRITING_ACTIONS
    )  # fmt: skip


def plan_table(dry_run: RunReport) -> str:
    """Markdown for the approval form: the run undone, and what its undo would do per table and action."""
    lines = [
        f"**Undone run** `{dry_run.undoneRunId}`: {dry_run.undoneTarget} on keyspace `{dry_run.keyspace}`, work "
        f"folder `{dry_run.undoneRunDir}`.",
        "",
        f"| table | {' | '.join(PLAN_ACTIONS)} |",
        f"|---|{'---:|' * len(PLAN_ACTIONS)}",
    ]
    for table, actions in sorted((dry_run.undoPlan or {}).items()):
        lines.append(f"| {table} | {' | '.join(str(actions.get(action, 0)) for action in PLAN_ACTIONS)} |")
    lines += [
        "",
        "*restored*: the row holds what the repair wrote, and gets back what it held before; *newer-kept*: the row "
        "changed since the repair: the repair's write is taken back, the later writes are kept; *already-as-before*: "
        "nothing to take back; *not-reversed*: left as it is (a uid or modseq handed out by a merge, a counter row "
        "the repair deleted or a later run recomputed).",
        "",
    ]
    if confirmation_required(dry_run):
        lines.append(
            f"This takes back an **offline mailbox repair**: approve only while James's SMTP, IMAP and JMAP are "
            f"stopped, and type `{CONFIRMATION}`."
        )
    else:
        lines.append("No typed confirmation is needed for this run: Approve is enough.")
    return "\n".join(lines)


def undo_needed(**context) -> bool:
    """After the dry run: nothing to take back ends the run successfully; otherwise the plan goes to the approval
    form (XCom `approval_summary`)."""
    dry_run = read_report(context["dag"].dag_id, context["run_id"], CHECK)
    if dry_run is None:
        raise RuntimeError("the dry run wrote no report")
    log.info("undo plan of %s: %s", dry_run.undoneRunId, dry_run.undoPlan)
    if not anything_to_write(dry_run):
        log.info("nothing to take back: every row is as before the repair, or cannot be reversed")
        return False
    context["ti"].xcom_push(key="approval_summary", value=plan_table(dry_run))
    return True


class UndoApprovalOperator(OfflineApprovalOperator):
    """The mailbox repair's approval; the typed confirmation is needed only to undo an offline mailbox repair."""

    def confirmation_required(self, context) -> bool:
        return confirmation_required(read_report(context["dag"].dag_id, context["run_id"], CHECK))


class UndoApprovalRequest(ApprovalRequest):
    def message(self, report: RunReport | None, context) -> str:
        what = f"run {report.undoneRunId} ({report.undoneTarget} on {report.keyspace})" if report else "a repair"
        how = (
            f"Stop James's SMTP, IMAP and JMAP first, then approve by typing {CONFIRMATION}"
            if confirmation_required(report)
            else "Approve to take it back"
        )
        who = ", ".join(self.approvers)
        return f"The undo of {what} waits for one of {who}. {how}; without an answer it is rejected."


APPROVAL_SUBJECT = "Undo of the repair in {{ params.run_dir }}: approve to take it back"
APPROVAL_BODY = """\
## Undo of a repair

Run `{{ run_id }}` dry-ran the undo: what taking the repair back would do, per table and action. Nothing is written
yet; Reject (or no answer) writes nothing.

{{ ti.xcom_pull(task_ids='anything_to_repair', key='approval_summary') }}
"""
CONFIRMATION_HELP = (
    f"Needed only to undo the offline mailbox repair: approve once James's SMTP, IMAP and JMAP are stopped, and "
    f"type `{CONFIRMATION}` here (without it, Approve is handled as Reject). Leave it empty for any other repair."
)


def summarize_undo(**context) -> dict:
    """The run's outcome in one XCom: the run undone, its plan, the decision, what the undo did."""
    dag_id, run_id = context["dag"].dag_id, context["run_id"]
    dry_run = read_report(dag_id, run_id, CHECK)
    applied = read_report(dag_id, run_id, APPLY)
    answer = context["ti"].xcom_pull(task_ids=APPROVE, key=ANSWER)
    nothing_to_do = dry_run is not None and not anything_to_write(dry_run)
    summary = {
        "runDir": context["params"][RUN_DIR],
        "undoneRunId": dry_run.undoneRunId if dry_run else None,
        "undoneTarget": dry_run.undoneTarget if dry_run else None,
        "keyspace": dry_run.keyspace if dry_run else None,
        "plan": dry_run.undoPlan if dry_run else None,
        "decision": decision(nothing_to_do, answer, applied is not None, confirmation_required(dry_run)),
        "respondedBy": (answer or {}).get("responded_by_user"),
    }
    if applied:
        summary["undo"] = {
            "status": applied.status,
            "restored": applied.restored,
            "newerKept": applied.newerKept,
            "alreadyAsBefore": applied.alreadyAsBefore,
            "notReversed": applied.notReversed,
            "failedCount": applied.failedCount,
            "undone": applied.undone,
        }
    log.info("undo: %s", summary)
    return summary
