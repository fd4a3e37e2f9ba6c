"""Alerts for failed gates, failed jobs and approval requests.

Every alert is a small JSON document (what failed, where, the gate's failed expectations with counts and a sample,
links to the run and to the Data Docs) delivered to each configured channel. The alert log
(`.local/alerts/alerts.jsonl`, or JAMES_ALERT_LOG) always receives it, first; mail and chat channels plug in the
same way: a channel is any object with `name` and `send(alert, context)`, e.g. a wrapper around the smtp provider's
`SmtpNotifier` or the Slack provider's notifier, added to `configured_channels()` (chosen from the environment at
alert time, never at DAG parse time). A channel that fails is logged and does not stop the others.
"""

import json
import logging
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from airflow.sdk import BaseNotifier
from james_consistency.paths import LOCAL_DIR

from james_airflow.runs import read_report

log = logging.getLogger(__name__)


def alert_log_path() -> Path:
    return Path(os.environ.get("JAMES_ALERT_LOG", LOCAL_DIR / "alerts" / "alerts.jsonl"))


def build_alert(context, title: str) -> dict:
    """The alert's content from an Airflow callback context (task failure or DAG failure)."""
    ti = context.get("ti") or context.get("task_instance")
    dag_id = context["dag"].dag_id
    run_id = context.get("run_id") or (ti.run_id if ti else "")
    report = read_report(dag_id, run_id, ti.task_id) if ti else None
    alert = {
        "title": title,
        "at": datetime.now(UTC).isoformat(),
        "dag_id": dag_id,
        "run_id": run_id,
        "task_id": ti.task_id if ti else None,
        "try_number": getattr(ti, "try_number", None),
        "reason": str(context.get("exception") or context.get("reason") or "")[:500],
        "log_url": getattr(ti, "log_url", None),
    }
    if report:
        failed_gates = [gate for gate in report.get("gates", []) if not gate["success"]]
        alert["report"] = {
            "keyspace": report.get("keyspace"),
            "target": report.get("target"),
            "mode": report.get("mode"),
            "status": report.get("status"),
            "inconsistencies": report.get("inconsistencies"),
            "errors": report.get("errors", [])[:5],
            "failed_gates": [
                {
                    "gate": gate["name"],
                    "failed_expectations": gate["failed_expectations"],
                    "data_docs": gate["data_docs"],
                }
                for gate in failed_gates
            ],
        }
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
    """The channels of this deployment. Mail and chat channels are added here, from the environment."""
    return [AlertLog()]


class ConsistencyAlert(BaseNotifier):
    """on_failure_callback of every consistency task: logs the alert and delivers it to every channel."""

    template_fields = ("title",)

    def __init__(
        self, title: str = "james-consistency: a check or repair failed", channels: list[AlertChannel] | None = None
    ):
        super().__init__()
        self.title = title
        self.channels = channels

    def notify(self, context) -> None:
        alert = build_alert(context, self.title)
        log.error("ALERT %s", json.dumps(alert, default=str))
        failed = []
        for channel in self.channels if self.channels is not None else configured_channels():
            try:
                channel.send(alert, context)
            except Exception:  # noqa: BLE001 (one broken channel must not silence the others)
                log.exception("alert channel %s failed", getattr(channel, "name", channel))
                failed.append(getattr(channel, "name", str(channel)))
        if failed:
            log.error("alert not delivered to: %s", ", ".join(failed))
