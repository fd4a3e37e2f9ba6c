"""Airflow on this machine: `airflow standalone` (api-server, scheduler, dag-processor, triggerer; LocalExecutor on
the project's SQLite home) with the project's DAGs, and a small client of its REST API.

Used by `james-consistency ui` (the UI for an operator, e.g. to give the mailbox approval by hand), by the demo
(every DAG run through the real scheduler) and by tests. Logins are the simple auth manager's: `admin` (admin) and
`approver` (the mailbox repair's approver), with passwords generated once into .local/airflow/passwords.json (never
printed or logged; the file is the place to read them).
"""

import json
import os
import secrets
import socket
import subprocess
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from james_consistency.errors import OperatorError
from james_consistency.runtime.paths import LOCAL_DIR
from james_consistency.settings import configured, setting

from james_consistency_kit.processes import stop_group

ADMIN, APPROVER = "admin", "approver"
FINISHED = ("success", "failed")
DATABASE_ERROR_ATTEMPTS = 5
STOP_GRACE_SECONDS = 60


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def local_logins(path: Path | None = None) -> dict[str, str]:
    """The UI's users and passwords, generated on first use (0600)."""
    path = path or LOCAL_DIR / "airflow" / "passwords.json"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({name: secrets.token_urlsafe(12) for name in (ADMIN, APPROVER)}))
        path.chmod(0o600)
    return json.loads(path.read_text())


class Api:
    """The Airflow REST API of a running api-server, as a logged-in user."""

    def __init__(self, base: str):
        self.base = base
        self.token: str | None = None

    def call(self, method: str, path: str, body: dict | None = None, token: str | None = None) -> tuple[int, dict]:
        # On SQLite a write can lose the database lock to the scheduler ("Database error", HTTP 500): try again.
        for attempt in range(DATABASE_ERROR_ATTEMPTS):
            status, answer = self._call_once(method, path, body, token)
            if status != 500 or "Database error" not in json.dumps(answer):
                break
            time.sleep(1 + attempt)
        return status, answer

    def _call_once(self, method: str, path: str, body: dict | None, token: str | None) -> tuple[int, dict]:
        token = token or self.token
        request = urllib.request.Request(
            self.base + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"{}")

    def login(self, user: str, password: str) -> str:
        status, body = self.call("POST", "/auth/token", {"username": user, "password": password})
        if status not in (200, 201):
            raise OperatorError(f"Airflow refused the login of '{user}' (HTTP {status})")
        self.token = body["access_token"]
        return self.token

    def wait_healthy(self, process: subprocess.Popen, log: Path, seconds: float = 300) -> None:
        deadline = time.time() + seconds
        while True:
            try:
                status, health = self.call("GET", "/api/v2/monitor/health")
                parts = ("metadatabase", "scheduler", "triggerer", "dag_processor")
                if status == 200 and all(health.get(part, {}).get("status") == "healthy" for part in parts):
                    return
            except OSError:
                pass
            if process.poll() is not None or time.time() > deadline:
                stop_group(process, STOP_GRACE_SECONDS)
                raise OperatorError(f"Airflow did not become healthy within {seconds:.0f}s; its log: {log}")
            time.sleep(2)

    def wait_for_dag(self, dag_id: str, seconds: float = 300) -> None:
        deadline = time.time() + seconds
        while self.call("GET", f"/api/v2/dags/{dag_id}")[0] != 200:
            if time.time() > deadline:
                raise OperatorError(f"the dag-processor did not load {dag_id} within {seconds:.0f}s")
            time.sleep(2)

    def set_paused(self, dag_id: str, paused: bool) -> None:
        status, body = self.call("PATCH", f"/api/v2/dags/{dag_id}", {"is_paused": paused})
        if status != 200:
            raise OperatorError(f"could not {'pause' if paused else 'unpause'} {dag_id}: HTTP {status} {body}")

    def trigger(self, dag_id: str, conf: dict) -> str:
        status, run = self.call("POST", f"/api/v2/dags/{dag_id}/dagRuns", {"logical_date": None, "conf": conf})
        if status != 200:
            raise OperatorError(f"could not trigger {dag_id}: HTTP {status} {run}")
        return run["dag_run_id"]

    def run(self, dag_id: str, run_id: str) -> dict:
        return self.call("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}")[1]

    def run_state(self, dag_id: str, run_id: str) -> str | None:
        return self.run(dag_id, run_id).get("state")

    def task_states(self, dag_id: str, run_id: str) -> dict[str, str]:
        _, listing = self.call("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances")
        return {ti["task_id"]: ti["state"] for ti in listing.get("task_instances", [])}

    def wait_for_run(self, dag_id: str, run_id: str, seconds: float = 3600, until=FINISHED) -> str:
        deadline = time.time() + seconds
        while (state := self.run_state(dag_id, run_id)) not in until:
            if time.time() > deadline:
                raise OperatorError(f"{dag_id} run {run_id} still {state} after {seconds:.0f}s")
            time.sleep(3)
        return state

    def end_unfinished_runs(self, dag_id: str) -> int:
        """Marks the queued or running runs of a DAG failed (e.g. an approval nobody gave in an earlier session, which
        would hold the DAG's only active run); returns how many."""
        ended = 0
        for run in self.runs(dag_id):
            if run["state"] in ("queued", "running"):
                path = f"/api/v2/dags/{dag_id}/dagRuns/{run['dag_run_id']}"
                status, body = self.call("PATCH", path, {"state": "failed"})
                if status != 200:
                    raise OperatorError(f"could not end {dag_id} run {run['dag_run_id']}: HTTP {status} {body}")
                ended += 1
        return ended

    def runs(self, dag_id: str) -> list[dict]:
        return self.call("GET", f"/api/v2/dags/{dag_id}/dagRuns?order_by=-run_after&limit=20")[1].get("dag_runs", [])


def standalone_environment(port: int, logins: dict[str, str], passwords_file: Path, **env: str) -> dict[str, str]:
    names = list(logins)
    return {
        **os.environ,
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": ",".join(
            f"{name}:{'admin' if index == 0 else 'op'}" for index, name in enumerate(names)
        ),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords_file),
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{port}",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
        "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
        "JAMES_MAILBOX_APPROVERS": ",".join(setting("JAMES_MAILBOX_APPROVERS"))
        if configured("JAMES_MAILBOX_APPROVERS")
        else names[-1],
        **env,
    }


def start_standalone(log: Path, port: int, logins: dict[str, str], passwords_file: Path, **env: str):
    """`airflow standalone` in its own process group, its output in `log`; (process, Api) once healthy."""
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", port)) == 0:
            raise OperatorError(f"port {port} is taken: stop what listens there or choose another with --port")
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as output:
        process = subprocess.Popen(
            ["airflow", "standalone"],
            env=standalone_environment(port, logins, passwords_file, **env),
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    api = Api(f"http://127.0.0.1:{port}")
    api.wait_healthy(process, log)
    return process, api


@contextmanager
def airflow_standalone(log: Path, logins: dict[str, str], passwords_file: Path, port: int | None = None, **env):
    """Airflow running for the duration of the block, logged in as the first user; stopped after it."""
    if not passwords_file.exists():
        passwords_file.write_text(json.dumps(logins))
    process, api = start_standalone(log, port or free_port(), logins, passwords_file, **env)
    try:
        first = next(iter(logins))
        api.login(first, logins[first])
        yield api
    finally:
        stop_group(process, STOP_GRACE_SECONDS)


def serve_ui(port: int) -> int:
    """`james-consistency ui`: Airflow on 127.0.0.1:port against the local demo node until Ctrl-C."""
    from james_consistency_kit.cassandra_node import LocalNode

    passwords_file = LOCAL_DIR / "airflow" / "passwords.json"
    logins = local_logins(passwords_file)
    node = LocalNode.from_env()
    node.start()
    log = LOCAL_DIR / "airflow" / "ui-standalone.log"
    print(f"starting Airflow (log {log}) ...", flush=True)
    environment = {"AIRFLOW_CONN_CASSANDRA_DEFAULT": f"cassandra://127.0.0.1:{node.native_port}"}
    process, _ = start_standalone(log, port, logins, passwords_file, **environment)
    print(f"Airflow UI: http://127.0.0.1:{port}  users: {', '.join(logins)} (passwords in {passwords_file})")
    print(
        f"the mailbox repair's approver is '{APPROVER}': Browse > Required Actions. Ctrl-C stops Airflow.", flush=True
    )
    try:
        process.wait()
    except KeyboardInterrupt:
        pass
    finally:
        stop_group(process, STOP_GRACE_SECONDS)
    return 0
