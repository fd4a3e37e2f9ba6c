"""Alerts on a failed gate, as an operator receives them: a real SMTP server on loopback (aiosmtpd) and a real HTTP
receiver stand in for the mail relay and the chat webhook; the failure comes from a real dag.test() run of
message_consistency on a corrupt truth (real node, Spark and Great Expectations), the same run that shows the gate
stopping it before anything is written."""

import email
import email.policy
import json
import logging
import socket
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from urllib.parse import quote

import pytest
from james_consistency.cassandra.schema import create_schema
from support.dag_runs import announcements, task_states
from support.messages import insert, message, platform, projection, write_times

DAG_ID = "message_consistency"
AIRFLOW_URL = "https://airflow.example.org"
WEBHOOK_PATH = "/services/T0ALERTS/B0JAMES/"
WEBHOOK_TOKEN = "xoxb-Webhook-T0ken-4242"
SMTP_PASSWORD = "Smtp-Pa55word-Never-Shown"
RECIPIENTS = ["mail-ops@example.org", "oncall@example.org"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class SmtpServer:
    """aiosmtpd on loopback, keeping every mail it accepts (and every AUTH it was offered)."""

    def __init__(self, password: str | None = None):
        from aiosmtpd.controller import Controller
        from aiosmtpd.smtp import AuthResult

        self.mails: list[dict] = []
        self.logins: list[tuple[str, str]] = []
        server = self

        class Inbox:
            async def handle_DATA(self, smtp, session, envelope):
                raw = envelope.original_content or envelope.content
                server.mails.append(
                    {
                        "from": envelope.mail_from,
                        "to": list(envelope.rcpt_tos),
                        "raw": raw.decode(errors="replace"),
                        "message": email.message_from_bytes(raw, policy=email.policy.default),
                    }
                )
                return "250 OK"

        def authenticator(smtp, session, envelope, mechanism, auth_data):
            server.logins.append((auth_data.login.decode(), auth_data.password.decode()))
            # handled=False: aiosmtpd answers the client itself (235 or 535)
            return AuthResult(success=auth_data.password.decode() == password, handled=False)

        extra = {"authenticator": authenticator, "auth_require_tls": False} if password is not None else {}
        self.port = free_port()
        self.controller = Controller(Inbox(), hostname="127.0.0.1", port=self.port, **extra)
        self.controller.start()

    def connection(self, **fields) -> str:
        """AIRFLOW_CONN_* JSON of an SMTP connection to this server (plain SMTP on loopback)."""
        extra = {
            "disable_tls": True,
            "disable_ssl": True,
            "from_email": "airflow@example.org",
            "retry_limit": 0,
            "timeout": 10,
        }
        return json.dumps({"conn_type": "smtp", "host": "127.0.0.1", "port": self.port, "extra": extra, **fields})

    def stop(self):
        self.controller.stop()


class WebhookReceiver:
    """An HTTP server on loopback answering `status` to every POST and keeping what was posted."""

    def __init__(self, status: int = 200):
        self.posts: list[dict] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.posts.append(
                    {"path": self.path, "content_type": self.headers["Content-Type"], "body": json.loads(body)}
                )
                self.send_response(status)
                self.end_headers()
                self.wfile.write(b"ok" if status == 200 else b"no")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def html_body(mail: dict) -> str:
    return mail["message"].get_body(("html",)).get_content()


def mrkdwn_texts(payload: dict) -> str:
    """Every text of a Slack payload's blocks, joined."""
    texts = []
    for block in payload["blocks"]:
        if "text" in block:
            texts.append(block["text"]["text"])
        texts += [field["text"] for field in block.get("fields", [])]
        texts += [element["text"] for element in block.get("elements", [])]
    return "\n".join(texts)


@pytest.fixture(scope="module")
def failed_gate_run(dagbag, cassandra_node, cql, tmp_path_factory):
    """One real run of message_consistency on a corrupt truth (a uid 0, a null modseq) beside a projection row
    missing, with mail and chat configured as a deployment would: the gate stops it, the notifier alerts."""
    keyspace = f"dagalert_{uuid.uuid4().hex[:8]}"
    create_schema(cql, keyspace, "3.9")
    rows = platform(cql, keyspace, "3.9")
    cql.execute(f"DELETE FROM {keyspace}.messageidtable WHERE mailboxid = %s AND uid = 2", (rows[0]["mailboxid"],))
    bad = message("3.9", rows[0]["mailboxid"], 0, 4_242, modseq=None)
    insert(cql, keyspace, "imapuidtable", bad)
    projection_before, written_before = projection(cql, keyspace), write_times(cql, keyspace)
    smtp, webhook = SmtpServer(), WebhookReceiver()
    alert_log = tmp_path_factory.mktemp("alerts") / "alerts.jsonl"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("AIRFLOW_CONN_CASSANDRA_DEFAULT", f"cassandra://127.0.0.1:{cassandra_node.native_port}")
        env.setenv("JAMES_ALERT_LOG", str(alert_log))
        env.setenv("AIRFLOW_CONN_SMTP_DEFAULT", smtp.connection())
        env.setenv("AIRFLOW_VAR_JAMES_ALERT_EMAILS", ", ".join(RECIPIENTS))
        env.setenv("JAMES_ALERT_WEBHOOK_URL", webhook.url + WEBHOOK_PATH + WEBHOOK_TOKEN)
        env.setenv("AIRFLOW__API__BASE_URL", AIRFLOW_URL)
        started = time.perf_counter()
        run = dagbag.get_dag(DAG_ID).test(run_conf={"keyspace": keyspace})
        print(f"dag.test() corrupt-truth run with alerts: {time.perf_counter() - started:.0f}s")
    smtp.stop()
    webhook.stop()
    yield SimpleNamespace(
        run=run,
        keyspace=keyspace,
        bad_row=bad,
        projection_before=projection_before,
        written_before=written_before,
        mails=smtp.mails,
        posts=webhook.posts,
        alerts=[json.loads(line) for line in alert_log.read_text().splitlines()] if alert_log.exists() else [],
    )
    cql.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)


def test_a_corrupt_truth_fails_at_the_gate_and_writes_nothing(failed_gate_run, cql):
    run, keyspace = failed_gate_run.run, failed_gate_run.keyspace

    assert str(run.state) == "failed"
    states = task_states(run)
    assert states["check"] == "failed"
    assert states["repair"] in ("upstream_failed", "None")
    assert states["report"] in ("upstream_failed", "None")
    assert announcements(keyspace) == [], "a failed night: counters_recompute is not scheduled"
    check = next(ti for ti in run.get_task_instances() if ti.task_id == "check")
    assert (check.try_number, check.max_tries) == (1, 2), "a failed gate is not transient: no retry"
    assert projection(cql, keyspace) == failed_gate_run.projection_before, "the missing row is not added"
    assert write_times(cql, keyspace) == failed_gate_run.written_before
    assert len(failed_gate_run.alerts) == 1
    alert = failed_gate_run.alerts[0]
    assert alert["dag_id"] == DAG_ID and alert["task_id"] == "check" and alert["run_id"] == run.run_id
    assert alert["report"]["keyspace"] == keyspace
    gate = alert["report"]["failed_gates"][0]
    assert gate["gate"] == "messages_truth_health"
    assert {failure["target"] for failure in gate["failed_expectations"]} == {"uid_below_1", "null_modseq"}


def test_a_failed_gate_is_mailed_with_its_validation_summary(failed_gate_run):
    run, keyspace = failed_gate_run.run, failed_gate_run.keyspace
    assert str(run.state) == "failed"
    assert len(failed_gate_run.mails) == 1
    mail = failed_gate_run.mails[0]
    assert mail["to"] == RECIPIENTS and mail["from"] == "airflow@example.org"
    subject = mail["message"]["Subject"]
    assert subject == (
        f"[james-consistency] {DAG_ID}.check on {keyspace}: "
        "gate messages_truth_health failed (uid_below_1, null_modseq)"
    )
    body = html_body(mail)
    run_link = f"{AIRFLOW_URL}/dags/{DAG_ID}/runs/{quote(run.run_id, safe='')}"
    for expected in (
        "message_consistency: a check or repair failed",
        f"<th align='left'>Run</th><td>{run.run_id}</td>",
        "<th align='left'>Task</th><td>check</td>",
        "the Spark job exited with code 4: a Great Expectations gate failed",
        "Gate messages_truth_health failed: 2 of 7 expectations",
        "<code>uid_below_1</code> (expect_column_values_to_be_between): 1 truth rows",
        "<code>null_modseq</code> (expect_column_values_to_be_between): 1 truth rows",
        "Truth rows scanned</th><td>31</td>",
        f"&quot;mailboxid&quot;: &quot;{failed_gate_run.bad_row['mailboxid']}&quot;",
        "&quot;uid&quot;: 0",
        f"<a href='{run_link}'>Airflow run</a>",
        f"<a href='{AIRFLOW_URL}/dags/{DAG_ID}/runs/",
        "/gx/gx/uncommitted/data_docs/local_site/index.html'>Great Expectations Data Docs</a>",
    ):
        assert expected in body
    assert "spark-submit" not in body, "the job's command line is noise in a mail"


def test_a_failed_gate_is_posted_to_the_chat_webhook(failed_gate_run):
    run = failed_gate_run.run
    assert len(failed_gate_run.posts) == 1
    post = failed_gate_run.posts[0]
    assert post["path"] == WEBHOOK_PATH + WEBHOOK_TOKEN
    assert post["content_type"] == "application/json"
    payload = post["body"]
    assert payload["text"].startswith("message_consistency: a check or repair failed\n")
    assert "uid_below_1" in payload["text"] and "null_modseq" in payload["text"]
    header, subject = payload["blocks"][0], payload["blocks"][1]
    assert header == {
        "type": "header",
        "text": {"type": "plain_text", "text": "message_consistency: a check or repair failed"},
    }
    assert "gate messages_truth_health failed (uid_below_1, null_modseq)" in subject["text"]["text"]
    texts = mrkdwn_texts(payload)
    assert "*Gate `messages_truth_health` failed* (2 of 7)" in texts
    assert "• `uid_below_1` expect_column_values_to_be_between: 1 truth rows" in texts
    assert f'"mailboxid": "{failed_gate_run.bad_row["mailboxid"]}"' in texts and '"uid": 0' in texts
    assert f"<{AIRFLOW_URL}/dags/{DAG_ID}/runs/{quote(run.run_id, safe='')}|Airflow run>" in texts
    assert "/data_docs/local_site/index.html|Great Expectations Data Docs>" in texts
    fields = {field["text"] for block in payload["blocks"] for field in block.get("fields", [])}
    assert {"*Task*\ncheck", f"*Keyspace*\n{failed_gate_run.keyspace}", "*Status*\nFAILED"} <= fields


def test_the_alert_log_keeps_the_same_summary_and_no_webhook_token(failed_gate_run):
    assert len(failed_gate_run.alerts) == 1
    alert = failed_gate_run.alerts[0]
    assert alert["run_url"] == f"{AIRFLOW_URL}/dags/{DAG_ID}/runs/{quote(failed_gate_run.run.run_id, safe='')}"
    assert alert["log_url"].startswith(f"{AIRFLOW_URL}/dags/{DAG_ID}/runs/") and "/tasks/check" in alert["log_url"]
    gate = alert["report"]["failed_gates"][0]
    assert [(f["target"], f["count"]) for f in gate["failed_expectations"]] == [("uid_below_1", 1), ("null_modseq", 1)]
    assert gate["sample_rows"][0]["uid"] == 0 and gate["sample_rows"][0]["modseq"] is None
    assert WEBHOOK_TOKEN not in json.dumps(alert)


def replay_context(dagbag, run_id: str) -> dict:
    """The context Airflow gives a failure callback of check in that run (its report is on disk)."""
    ti = SimpleNamespace(
        task_id="check",
        run_id=run_id,
        try_number=1,
        log_url=f"{AIRFLOW_URL}/dags/{DAG_ID}/runs/{quote(run_id, safe='')}/tasks/check?try_number=1",
    )
    failure = RuntimeError(
        "Cannot execute: spark-submit --master local[*] --name james-messages-check spark/jobs/reconcile.py. "
        "Error code is: 4."
    )
    return {"dag": dagbag.get_dag(DAG_ID), "run_id": run_id, "ti": ti, "task_instance": ti, "exception": failure}


@pytest.fixture
def channels_env(monkeypatch, tmp_path):
    """A clean alert configuration: the alert log in tmp_path, nothing else configured."""
    for name in ("JAMES_ALERT_WEBHOOK_URL", "AIRFLOW_VAR_JAMES_ALERT_EMAILS", "JAMES_ALERT_EMAILS"):
        monkeypatch.delenv(name, raising=False)
    alert_log = tmp_path / "alerts.jsonl"
    monkeypatch.setenv("JAMES_ALERT_LOG", str(alert_log))
    monkeypatch.setenv("AIRFLOW__API__BASE_URL", AIRFLOW_URL)
    return alert_log


def test_an_smtp_password_is_used_but_never_shown(dagbag, failed_gate_run, channels_env, monkeypatch, caplog, capfd):
    from james_airflow.notifiers import ConsistencyAlert

    smtp, webhook = SmtpServer(password=SMTP_PASSWORD), WebhookReceiver()
    try:
        monkeypatch.setenv("AIRFLOW_CONN_SMTP_DEFAULT", smtp.connection(login="alerts", password=SMTP_PASSWORD))
        monkeypatch.setenv("JAMES_ALERT_EMAILS", "mail-ops@example.org")
        monkeypatch.setenv("JAMES_ALERT_WEBHOOK_URL", webhook.url + WEBHOOK_PATH + WEBHOOK_TOKEN)
        with caplog.at_level(logging.INFO):
            ConsistencyAlert("{{ dag.dag_id }}: the truth is corrupt")(
                replay_context(dagbag, failed_gate_run.run.run_id)
            )
    finally:
        smtp.stop()
        webhook.stop()

    assert smtp.logins == [("alerts", SMTP_PASSWORD)], "the connection's credentials reached the server"
    assert len(smtp.mails) == 1 and len(webhook.posts) == 1
    assert smtp.mails[0]["message"]["Subject"].endswith("gate messages_truth_health failed (uid_below_1, null_modseq)")
    assert "<h2>message_consistency: the truth is corrupt</h2>" in html_body(smtp.mails[0])
    printed = caplog.text + "".join(capfd.readouterr())
    assert "alert delivered to email" in printed and "alert delivered to webhook" in printed
    for place in (smtp.mails[0]["raw"], json.dumps(webhook.posts[0]["body"]), channels_env.read_text(), printed):
        assert SMTP_PASSWORD not in place and WEBHOOK_TOKEN not in place


def test_a_rejected_smtp_login_is_logged_without_the_password_and_the_chat_still_gets_it(
    dagbag, failed_gate_run, channels_env, monkeypatch, caplog, capfd
):
    from james_airflow.notifiers import ConsistencyAlert

    smtp, webhook = SmtpServer(password="the-relay-expects-another"), WebhookReceiver()
    try:
        monkeypatch.setenv("AIRFLOW_CONN_SMTP_DEFAULT", smtp.connection(login="alerts", password=SMTP_PASSWORD))
        monkeypatch.setenv("JAMES_ALERT_EMAILS", "mail-ops@example.org")
        monkeypatch.setenv("JAMES_ALERT_WEBHOOK_URL", webhook.url + WEBHOOK_PATH + WEBHOOK_TOKEN)
        with caplog.at_level(logging.INFO):
            ConsistencyAlert("message repair failed")(replay_context(dagbag, failed_gate_run.run.run_id))
    finally:
        smtp.stop()
        webhook.stop()

    assert set(smtp.logins) == {("alerts", SMTP_PASSWORD)} and smtp.mails == []  # smtplib tries PLAIN, then LOGIN
    assert len(webhook.posts) == 1 and "uid_below_1" in webhook.posts[0]["body"]["text"]
    assert len(channels_env.read_text().splitlines()) == 1
    printed = caplog.text + "".join(capfd.readouterr())
    assert "alert channel email failed: mail through connection smtp_default failed: SMTPAuthenticationError" in printed
    assert "alert not delivered to: email" in printed
    assert SMTP_PASSWORD not in printed and SMTP_PASSWORD not in channels_env.read_text()


def test_a_failing_webhook_connection_is_logged_without_its_token_and_the_mail_still_goes(
    dagbag, failed_gate_run, channels_env, monkeypatch, caplog, capfd
):
    from james_airflow.notifiers import ConsistencyAlert

    smtp, webhook = SmtpServer(), WebhookReceiver(status=500)
    try:
        monkeypatch.setenv("AIRFLOW_CONN_SMTP_DEFAULT", smtp.connection())
        monkeypatch.setenv("JAMES_ALERT_EMAILS", "mail-ops@example.org")
        monkeypatch.setenv(
            "AIRFLOW_CONN_JAMES_ALERT_WEBHOOK",
            json.dumps({"conn_type": "http", "host": webhook.url + WEBHOOK_PATH, "password": WEBHOOK_TOKEN}),
        )
        with caplog.at_level(logging.INFO):
            ConsistencyAlert("message repair failed")(replay_context(dagbag, failed_gate_run.run.run_id))
    finally:
        smtp.stop()
        webhook.stop()

    assert [post["path"] for post in webhook.posts] == [WEBHOOK_PATH + WEBHOOK_TOKEN], "the token was used"
    assert len(smtp.mails) == 1 and "uid_below_1" in html_body(smtp.mails[0])
    printed = caplog.text + "".join(capfd.readouterr())
    assert f"alert channel webhook failed: webhook {webhook.url} answered HTTP 500" in printed
    assert WEBHOOK_TOKEN not in printed and WEBHOOK_TOKEN not in channels_env.read_text()


def test_other_code_can_send_its_own_alert_through_the_same_channels(dagbag, channels_env, monkeypatch):
    """What an approval request's notifier calls: build_alert(context, title, message=...) then send_alert."""
    from james_airflow.notifiers import build_alert, send_alert

    smtp, webhook = SmtpServer(), WebhookReceiver()
    try:
        monkeypatch.setenv("AIRFLOW_CONN_SMTP_DEFAULT", smtp.connection())
        monkeypatch.setenv("JAMES_ALERT_EMAILS", "mail-ops@example.org")
        monkeypatch.setenv("JAMES_ALERT_WEBHOOK_URL", webhook.url + WEBHOOK_PATH + WEBHOOK_TOKEN)
        ti = SimpleNamespace(task_id="approve", run_id="manual__approval", try_number=1, log_url=None)
        context = {"dag": dagbag.get_dag(DAG_ID), "run_id": "manual__approval", "ti": ti}
        alert = build_alert(context, "mailbox repair: approval needed", message="3 mailboxes would be merged")
        alert["links"] = [["Required actions", f"{AIRFLOW_URL}/required_actions"]]
        failed = send_alert(alert, context)
    finally:
        smtp.stop()
        webhook.stop()

    assert failed == []
    mail = smtp.mails[0]
    assert mail["message"]["Subject"] == f"[james-consistency] {DAG_ID}.approve: mailbox repair: approval needed"
    body = html_body(mail)
    assert "<p>3 mailboxes would be merged</p>" in body
    assert f"<a href='{AIRFLOW_URL}/required_actions'>Required actions</a>" in body
    assert f"<{AIRFLOW_URL}/dags/{DAG_ID}/runs/manual__approval|Airflow run>" in mrkdwn_texts(webhook.posts[0]["body"])
    assert len(channels_env.read_text().splitlines()) == 1
