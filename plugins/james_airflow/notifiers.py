"""Alerts for failed gates, failed jobs and approval requests.

Every alert is a small JSON document (what failed, where, the gate's failed expectations with counts and a sample
of the offending rows, links to the Airflow run and to the Great Expectations Data Docs) delivered to each configured
channel. The alert log (`.local/alerts/alerts.jsonl`, or JAMES_ALERT_LOG) always receives it, first; then mail
(an Airflow SMTP connection, recipients in JAMES_ALERT_EMAILS) and a Slack-compatible chat webhook
(JAMES_ALERT_WEBHOOK_URL or the http connection `james_alert_webhook`) when configured: see
`james_airflow.alert_channels`. Channels are chosen when the alert is sent, never at DAG parse time. A channel is any
object with `name` and `send(alert, context)`; one that fails is logged (without credentials) and does not stop the
others.

From other code (e.g. an approval request's notifier):

    from james_airflow.notifiers import build_alert, send_alert

    send_alert(build_alert(context, "mailbox repair: approval needed", message="12 mailboxes ..."), context)
"""

import asyncio
import json
import logging
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol
from urllib.parse import quote

from airflow.sdk import BaseNotifier
from james_consistency.report.exit_codes import EXIT_CODE_MEANINGS
from james_consistency.report.run_report import GateVerdict, RunReport
from james_consistency.runtime.paths import LOCAL_DIR
from james_consistency.settings import setting

from james_airflow.alert_channels import AlertDeliveryError, mail_and_chat_channels, redact
from james_airflow.runs import read_report

log = logging.getLogger(__name__)

SAMPLE_ROWS_IN_ALERT = 5


def alert_log_path() -> Path:
    return Path(setting("JAMES_ALERT_LOG") or LOCAL_DIR / "alerts" / "alerts.jsonl")


def airflow_base_url() -> str:
    """The Airflow UI's address: [api] base_url (AIRFLOW__API__BASE_URL), as Airflow's own task log links use it."""
    try:
        from airflow.sdk.configuration import conf

        base = conf.get("api", "base_url", fallback=None)
    except Exception:  # noqa: BLE001 (no configuration: the local default)
        base = None
    return (base or "http://localhost:8080").rstrip("/")


def run_url(dag_id: str, run_id: str) -> str:
    return f"{airflow_base_url()}/dags/{quote(dag_id, safe='')}/runs/{quote(run_id, safe='')}"


def data_docs_url(path: str | None) -> str | None:
    """A link to the Data Docs page: under JAMES_DATA_DOCS_URL when the site is served (the URL of the folder
    `local_site`), else the local file."""
    if not path:
        return None
    served = setting("JAMES_DATA_DOCS_URL")
    if served and "local_site/" in path:
        return served.rstrip("/") + "/" + path.split("local_site/", 1)[1]
    return Path(path).as_uri() if Path(path).is_absolute() else path


def _reason(context) -> tuple[str, int | None]:
    """The failure in one line, and the job's exit code when a spark-submit failed (whose message is the whole
    command line: left out)."""
    text = str(context.get("exception") or context.get("reason") or "")
    found = re.search(r"Error code is: (\d+)", text)
    if found and "spark-submit" in text:
        code = int(found.group(1))
        return f"the Spark job exited with code {code}: {EXIT_CODE_MEANINGS.get(code, 'failed')}", code
    return text[:500], None


def _expectation_count(gate: GateVerdict, failure: dict, report: RunReport) -> tuple[object, str | None]:
    """How many rows an expectation objects to, and of what (the gate judged figures measured on the tables)."""
    target = failure.get("target")
    health = report.truthHealth or {}
    if gate.name.endswith("_truth_health") and isinstance(target, str) and target in health:
        return health[target], "truth rows"
    if gate.name == "projection_matches_truth":
        remaining = report.remainingInconsistencies
        return (failure.get("observed") if remaining is None else remaining), "remaining inconsistencies"
    if gate.name == "plan_safety" and report.plan is not None:
        plan = report.plan
        return (
            round(plan.destructiveShare, 4),
            f"of the projection to delete or rewrite (at most {plan.maxDestructiveShare} allowed; "
            f"{plan.toRewrite} rewrites, {plan.toDelete} deletes)",
        )
    return failure.get("observed"), None


def _failed_gate(gate: GateVerdict, report: RunReport) -> dict:
    rows = gate.sample_rows
    if not rows and gate.name == "projection_matches_truth":
        rows = report.remainingSample or []
    failures = []
    for failure in gate.failed_expectations:
        failure = failure if isinstance(failure, dict) else {"expectation": failure}
        count, count_of = _expectation_count(gate, failure, report)
        failures.append({**failure, "count": count, "count_of": count_of})
    return {
        "gate": gate.name,
        "evaluated": gate.evaluated,
        "failed_expectations": failures,
        "sample_rows": rows[:SAMPLE_ROWS_IN_ALERT],
        "data_docs": gate.data_docs,
        "data_docs_url": data_docs_url(gate.data_docs),
    }


def build_alert(context, title: str, message: str | None = None) -> dict:
    """The alert's content from an Airflow callback context (task failure, DAG failure, or any task's context)."""
    ti = context.get("ti") or context.get("task_instance")
    dag_id = context["dag"].dag_id
    run_id = context.get("run_id") or (ti.run_id if ti else "")
    report = read_report(dag_id, run_id, ti.task_id) if ti else None
    reason, exit_code = _reason(context)
    alert = {
        "title": title,
        "at": datetime.now(UTC).isoformat(),
        "dag_id": dag_id,
        "run_id": run_id,
        "task_id": ti.task_id if ti else None,
        "try_number": getattr(ti, "try_number", None),
        "reason": reason,
        "exit_code": exit_code,
        "run_url": run_url(dag_id, run_id) if run_id else None,
        "log_url": getattr(ti, "log_url", None),
    }
    if message:
        alert["message"] = message
    if report:
        failed_gates = [_failed_gate(gate, report) for gate in report.gates if not gate.success]
        alert["report"] = {
            "keyspace": report.keyspace,
            "target": report.target,
            "mode": report.mode,
            "status": report.status,
            "truth_rows": (report.truthHealth or {}).get("truth_rows"),
            "inconsistencies": report.inconsistencies,
            "diff_measured": report.expectedProjectionRows is not None,
            "remainingInconsistencies": report.remainingInconsistencies,
            "failedCount": report.failedCount,
            "error": report.error,
            "errors": report.errors[:5],
            "failed_gates": failed_gates,
        }
        if failed_gates:
            alert["data_docs_url"] = failed_gates[0]["data_docs_url"]
    return alert


def write_alert_log(alert: dict) -> None:
    path = alert_log_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as stream:
        stream.write(json.dumps(alert, default=str) + "\n")


class AlertChannel(Protocol):
    """Somewhere an alert goes (the alert log, mail, chat)."""

    name: str

    def send(self, alert: dict, context) -> None: ...


class AlertLog:
    """The JSON-lines alert log: always written, what tests and operators' tooling read."""

    name = "alert_log"

    def send(self, alert: dict, context) -> None:
        write_alert_log(alert)


def configured_channels() -> list[AlertChannel]:
    """The channels of this deployment: the alert log, then mail and chat when configured (read now)."""
    return [AlertLog(), *mail_and_chat_channels()]


def send_alert(alert: dict, context=None, channels: list[AlertChannel] | None = None) -> list[str]:
    """Deliver an alert to every channel (the configured ones unless given); returns the names of the channels
    that failed, each already logged without credentials. Never raises for a channel's failure."""
    log.error("ALERT %s", json.dumps(alert, default=str))
    failed = []
    for channel in channels if channels is not None else configured_channels():
        name = getattr(channel, "name", type(channel).__name__)
        try:
            channel.send(alert, context)
        except AlertDeliveryError as error:
            log.error("alert channel %s failed: %s", name, error)
            failed.append(name)
        except Exception as error:  # noqa: BLE001 (one broken channel must not silence the others)
            reason = redact(f"{type(error).__name__}: {error}", getattr(channel, "secrets", ()))
            log.error("alert channel %s failed: %s", name, reason)
            failed.append(name)
        else:
            log.info("alert delivered to %s", name)
    if failed:
        log.error("alert not delivered to: %s", ", ".join(failed))
    return failed


class ConsistencyAlert(BaseNotifier):
    """on_failure_callback of every consistency task: builds the alert and delivers it to every channel."""

    template_fields = ("title",)

    def __init__(
        self, title: str = "james-consistency: a check or repair failed", channels: list[AlertChannel] | None = None
    ):
        super().__init__()
        self.title = title
        self.channels = channels

    def notify(self, context) -> None:
        send_alert(build_alert(context, self.title), context, self.channels)


async def repair_window_overrun(context: dict, window_minutes: float) -> None:
    """The Deadline callback of the scheduled repairs, run by the triggerer when a run is still going
    `window_minutes` after it was queued: the night's off-peak window is over and James's traffic is coming back."""
    run = context["dag_run"]  # the REST API's DAG run: dag_run_id, queued_at, ...
    dag_id, run_id = run["dag_id"], run["dag_run_id"]
    alert = {
        "title": f"{dag_id}: still running after its {window_minutes:g}-minute window",
        "at": datetime.now(UTC).isoformat(),
        "dag_id": dag_id,
        "run_id": run_id,
        "task_id": None,
        "reason": (
            f"the run queued at {run.get('queued_at')} passed its deadline {context['deadline']['deadline_time']} "
            "(JAMES_REPAIR_WINDOW_MINUTES); it goes on, in the off-peak pool, until it ends or is stopped"
        ),
        "run_url": run_url(dag_id, run_id),
    }
    await asyncio.to_thread(send_alert, alert)
