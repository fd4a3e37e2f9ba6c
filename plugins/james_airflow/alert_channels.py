"""Where an alert goes besides the alert log: mail through an Airflow SMTP connection, and a Slack-compatible chat
webhook; and the text both carry (the validation summary of an alert built by `james_airflow.notifiers`).

Both are chosen when an alert is sent (never at DAG parse time), from the environment or Airflow:

- mail: recipients in JAMES_ALERT_EMAILS (environment, or the Airflow Variable of that name; comma or semicolon
  separated), sent through the SMTP connection JAMES_ALERT_SMTP_CONN_ID (default `smtp_default`, the smtp provider's
  `SmtpHook`: host, port, login/password, extra `from_email`, `disable_tls`, `disable_ssl`, `timeout`,
  `retry_limit`). No recipients: no mail.
- chat: JAMES_ALERT_WEBHOOK_URL (environment), or else the Airflow connection JAMES_ALERT_WEBHOOK_CONN_ID (default
  `james_alert_webhook`, type http) when it exists: its host (a full URL, or a host name with the scheme in
  `schema`), port, extra `endpoint` (a path), and password (the webhook's token, appended as the last path segment,
  so it is kept and masked as a secret). The body is Slack's incoming-webhook JSON: `text` and `blocks`.

Credentials never leave the channel: an SMTP password or a webhook URL (whose path is its token) is not logged, not
written to the alert log and not put in a message; a failed delivery raises `AlertDeliveryError` with a redacted
one-line reason, naming the webhook by scheme and host only.
"""

from __future__ import annotations

import html
import json
import logging
import urllib.error
import urllib.request
from collections.abc import Iterable
from urllib.parse import urlsplit

from james_consistency.settings import configured, parse_setting, setting

log = logging.getLogger(__name__)

SUBJECT_PREFIX = "[james-consistency]"
SAMPLE_ROWS_SHOWN = 5
WEBHOOK_TIMEOUT_SECONDS = 15


class AlertDeliveryError(Exception):
    """A channel could not deliver an alert; the message holds no credential."""


def redact(text: object, secrets: Iterable[str | None]) -> str:
    """`text` with every secret (and a URL's path, which may be a token) replaced by ***."""
    text = str(text)
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def alert_setting(name: str):
    """An alert setting of the catalogue (james_consistency.settings): the environment variable NAME, else the
    Airflow Variable NAME (read at alert time), else the catalogue's default."""
    if not configured(name):
        try:
            from airflow.sdk import Variable

            stored = Variable.get(name, default=None)
        except Exception:  # noqa: BLE001 (no Variable store reachable: the setting is absent)
            stored = None
        if stored:
            return parse_setting(name, stored)
    return setting(name)


# --- the text of an alert ---------------------------------------------------------------------------------------


def _sample_row(row: object, limit: int = 600) -> str:
    text = json.dumps(row, default=str)  # the engine puts the key columns first
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _count_text(failure: dict) -> str:
    count = failure.get("count")
    if failure.get("count_of") and count is not None:
        return f"{count} {failure['count_of']}"
    return f"observed {failure.get('observed')}"


def alert_facts(alert: dict) -> list[tuple[str, str]]:
    """(label, value) pairs: where it failed and what the job found."""
    report = alert.get("report") or {}
    facts = [
        ("DAG", alert.get("dag_id")),
        ("Task", alert.get("task_id")),
        ("Run", alert.get("run_id")),
        ("Try", alert.get("try_number")),
        ("Keyspace", report.get("keyspace")),
        ("Projection", report.get("target")),
        ("Mode", report.get("mode")),
        ("Status", report.get("status")),
    ]
    if report.get("truth_rows") is not None:
        facts.append(("Truth rows scanned", report["truth_rows"]))
    if report.get("inconsistencies") and report.get("diff_measured", True):
        facts.append(("Inconsistencies", ", ".join(f"{k} {v}" for k, v in report["inconsistencies"].items())))
    if report.get("remainingInconsistencies") is not None:
        facts.append(("Remaining after repair", report["remainingInconsistencies"]))
    if report.get("failedCount"):
        facts.append(("Rows that failed to repair", report["failedCount"]))
    if alert.get("reason"):
        facts.append(("Reason", alert["reason"]))
    return [(label, str(value)) for label, value in facts if value not in (None, "")]


def alert_links(alert: dict) -> list[tuple[str, str]]:
    links = [("Airflow run", alert.get("run_url")), ("Task log", alert.get("log_url"))]
    docs = {gate.get("data_docs_url") for gate in (alert.get("report") or {}).get("failed_gates", [])}
    docs.add(alert.get("data_docs_url"))
    links += [("Great Expectations Data Docs", url) for url in sorted(url for url in docs if url)]
    links += [(str(label), str(url)) for label, url in alert.get("links") or []]  # e.g. an approval's page
    return [(label, url) for label, url in links if url]


def alert_subject(alert: dict) -> str:
    report = alert.get("report") or {}
    gates = report.get("failed_gates") or []
    where = ".".join(str(part) for part in (alert.get("dag_id"), alert.get("task_id")) if part)
    if report.get("keyspace"):
        where += f" on {report['keyspace']}"
    if gates:
        names = ", ".join(str(f.get("target")) for gate in gates for f in gate.get("failed_expectations", []))
        detail = f"gate {gates[0]['gate']} failed ({names})"
    elif report.get("status") in ("FAILED", "PARTIAL"):
        detail = f"{report.get('target')} {report.get('mode')} {report['status']}"
    else:
        detail = alert.get("title") or "alert"
    subject = f"{SUBJECT_PREFIX} {where}: {detail}" if where else f"{SUBJECT_PREFIX} {detail}"
    return subject if len(subject) <= 200 else subject[:199] + "…"


def alert_text(alert: dict) -> str:
    """The plain-text summary (the chat message's fallback text, and readable in any log)."""
    lines = [alert.get("title") or "james-consistency alert"]
    if alert.get("message"):
        lines.append(str(alert["message"]))
    lines += [f"{label}: {value}" for label, value in alert_facts(alert)]
    for gate in (alert.get("report") or {}).get("failed_gates", []):
        failures = gate.get("failed_expectations", [])
        lines.append(f"Gate {gate['gate']} FAILED ({len(failures)} of {gate.get('evaluated', '?')} expectations):")
        lines += [f"  - {f.get('target')} ({f.get('expectation')}): {_count_text(f)}" for f in failures]
        rows = gate.get("sample_rows") or []
        if rows:
            lines.append(f"  Sample of offending rows ({len(rows)} shown):")
            lines += [f"    {_sample_row(row)}" for row in rows]
    lines += [f"{label}: {url}" for label, url in alert_links(alert)]
    return "\n".join(lines)


def alert_html(alert: dict) -> str:
    """The mail body."""
    e = html.escape
    parts = [f"<h2>{e(alert.get('title') or 'james-consistency alert')}</h2>"]
    if alert.get("message"):
        parts.append(f"<p>{e(str(alert['message']))}</p>")
    parts.append("<table>")
    parts += [f"<tr><th align='left'>{e(label)}</th><td>{e(value)}</td></tr>" for label, value in alert_facts(alert)]
    parts.append("</table>")
    for gate in (alert.get("report") or {}).get("failed_gates", []):
        failures = gate.get("failed_expectations", [])
        parts.append(
            f"<h3>Gate {e(gate['gate'])} failed: {len(failures)} of {e(str(gate.get('evaluated', '?')))} "
            "expectations</h3><ul>"
        )
        parts += [
            f"<li><code>{e(str(f.get('target')))}</code> ({e(str(f.get('expectation')))}): {e(_count_text(f))}</li>"
            for f in failures
        ]
        parts.append("</ul>")
        rows = gate.get("sample_rows") or []
        if rows:
            parts.append(f"<p>Sample of offending rows ({len(rows)} shown):</p><pre>")
            parts += [e(_sample_row(row)) for row in rows]
            parts.append("</pre>")
    links = alert_links(alert)
    if links:
        parts.append("<ul>")
        parts += [f"<li><a href='{e(url)}'>{e(label)}</a>: {e(url)}</li>" for label, url in links]
        parts.append("</ul>")
    return "\n".join(parts)


def _mrkdwn(text: object) -> str:
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def chat_payload(alert: dict) -> dict:
    """Slack's incoming-webhook JSON (also understood by Mattermost, Rocket.Chat and the like)."""
    blocks: list[dict] = [
        {"type": "header", "text": {"type": "plain_text", "text": _cut(alert.get("title") or "alert", 150)}},
        {"type": "section", "text": {"type": "mrkdwn", "text": _cut(_mrkdwn(alert_subject(alert)), 3000)}},
    ]
    facts = alert_facts(alert)
    if facts:
        blocks.append(
            {
                "type": "section",
                "fields": [
                    {"type": "mrkdwn", "text": _cut(f"*{label}*\n{_mrkdwn(value)}", 2000)}
                    for label, value in facts[:10]
                ],
            }
        )
    for gate in (alert.get("report") or {}).get("failed_gates", []):
        failures = gate.get("failed_expectations", [])
        lines = [f"*Gate `{_mrkdwn(gate['gate'])}` failed* ({len(failures)} of {gate.get('evaluated', '?')})"]
        lines += [
            f"• `{_mrkdwn(f.get('target'))}` {_mrkdwn(f.get('expectation'))}: {_mrkdwn(_count_text(f))}"
            for f in failures
        ]
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": _cut("\n".join(lines), 3000)}})
        rows = gate.get("sample_rows") or []
        if rows:
            sample = "\n".join(_sample_row(row, 600) for row in rows)
            text = f"Sample of offending rows ({len(rows)} shown):\n```{_mrkdwn(_cut(sample, 2800))}```"
            blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": text}})
    links = alert_links(alert)
    if links:
        text = " · ".join(f"<{url}|{_mrkdwn(label)}>" for label, url in links)
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": _cut(text, 3000)}]})
    return {"text": _cut(alert_text(alert), 3900), "blocks": blocks}


# --- the channels ---------------------------------------------------------------------------------------------


class EmailChannel:
    """Mail through an Airflow SMTP connection (the smtp provider's SmtpHook: TLS, SSL and login as configured)."""

    name = "email"

    def __init__(self, recipients: list[str], conn_id: str):
        self.recipients = recipients
        self.conn_id = conn_id

    def send(self, alert: dict, context=None) -> None:
        from airflow.providers.smtp.hooks.smtp import SmtpHook

        hook = SmtpHook(smtp_conn_id=self.conn_id)
        try:
            with hook:
                hook.send_email_smtp(
                    to=self.recipients,
                    subject=alert_subject(alert),
                    html_content=alert_html(alert),
                    from_email=hook.from_email or setting("JAMES_ALERT_FROM"),
                    custom_headers={"X-James-Consistency-Dag": str(alert.get("dag_id") or "")},
                )
        except Exception as error:  # noqa: BLE001 (reported, redacted, by the notifier)
            connection = hook.smtp_connection
            secrets = [connection.password, connection.login] if connection is not None else []
            reason = redact(f"{type(error).__name__}: {error}", secrets)
            raise AlertDeliveryError(f"mail through connection {self.conn_id} failed: {reason}") from None


class WebhookChannel:
    """A JSON POST of `chat_payload(alert)` to a Slack-compatible incoming webhook."""

    name = "webhook"

    def __init__(self, url: str, secrets: Iterable[str | None] = ()):
        self.url = url
        parts = urlsplit(url)
        self.secrets = [url, parts.path, parts.query, *secrets]
        self.where = f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"

    def send(self, alert: dict, context=None) -> None:
        body = json.dumps(chat_payload(alert), default=str).encode()
        request = urllib.request.Request(
            self.url, data=body, headers={"Content-Type": "application/json"}, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=WEBHOOK_TIMEOUT_SECONDS) as response:
                response.read()
        except urllib.error.HTTPError as error:
            raise AlertDeliveryError(f"webhook {self.where} answered HTTP {error.code}") from None
        except Exception as error:  # noqa: BLE001 (reported, redacted, by the notifier)
            reason = redact(f"{type(error).__name__}: {error}", self.secrets)
            raise AlertDeliveryError(f"webhook {self.where} failed: {reason}") from None


def webhook_url_from_connection(connection) -> str:
    """The webhook URL of an http connection: host (full URL, or host with the scheme in `schema`), port, extra
    `endpoint`, password as the last path segment (the token)."""
    host = (connection.host or "").strip()
    extra = connection.extra_dejson or {}
    schema = (connection.schema or "").strip()
    if "://" in host:
        url = host
        if connection.port and not urlsplit(host).port:
            parts = urlsplit(host)
            url = parts._replace(netloc=f"{parts.netloc}:{connection.port}").geturl()
    else:
        scheme = schema if schema in ("http", "https") else "https"
        url = f"{scheme}://{host}" + (f":{connection.port}" if connection.port else "")
        if schema and schema not in ("http", "https"):
            url += "/" + schema.strip("/")  # a URI-form connection keeps its path in `schema`
    for segment in (extra.get("endpoint"), connection.password):
        if segment:
            url = url.rstrip("/") + "/" + str(segment).strip("/")
    return url


def _connection(conn_id: str):
    from airflow.sdk import BaseHook
    from airflow.sdk.exceptions import AirflowNotFoundException

    try:
        return BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        return None


def webhook_channel() -> WebhookChannel | None:
    url = setting("JAMES_ALERT_WEBHOOK_URL")
    if url:
        return WebhookChannel(url)
    connection = _connection(alert_setting("JAMES_ALERT_WEBHOOK_CONN_ID"))
    if connection is None or not connection.host:
        return None
    return WebhookChannel(webhook_url_from_connection(connection), secrets=[connection.password])


def email_channel() -> EmailChannel | None:
    recipients = list(alert_setting("JAMES_ALERT_EMAILS"))
    if not recipients:
        return None
    return EmailChannel(recipients, alert_setting("JAMES_ALERT_SMTP_CONN_ID"))


def mail_and_chat_channels() -> list:
    """The mail and chat channels this deployment configured (none, one or both). A setting that cannot be read
    leaves its channel out (logged) and not the other one."""
    channels = []
    for name, factory in (("email", email_channel), ("webhook", webhook_channel)):
        try:
            channel = factory()
        except Exception as error:  # noqa: BLE001 (one unreadable setting must not silence the other channel)
            log.error("alert channel %s: cannot read its settings: %s", name, type(error).__name__)
            continue
        if channel is not None:
            channels.append(channel)
    return channels
