"""Answering a DAG's human-in-the-loop approval as an approver does in the UI: a real `airflow api-server` on the
test session's Airflow home, a login of the simple auth manager, and the PATCH .../hitlDetails endpoint the
Required Actions page calls."""

import json
import os
import subprocess
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from james_consistency_kit.local_airflow import Api, free_port


@contextmanager
def api_server(folder: Path, users: dict[str, tuple[str, str]]):
    """A real api-server with `users` (name -> (password, role)); yields its client."""
    passwords = folder / "passwords.json"
    passwords.write_text(json.dumps({name: password for name, (password, _) in users.items()}))
    port = free_port()
    environment = {
        **os.environ,
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": ",".join(f"{name}:{role}" for name, (_, role) in users.items()),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
        "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{port}",
    }
    log_path = folder / "api-server.log"
    with log_path.open("w") as log:
        server = subprocess.Popen(
            ["airflow", "api-server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        client = Api(f"http://127.0.0.1:{port}")
        try:
            _wait_until_up(client, server, log_path)
            yield client
        finally:
            server.terminate()
            server.wait(timeout=60)


def _wait_until_up(client: Api, server: subprocess.Popen, log: Path, seconds: float = 180) -> None:
    deadline = time.time() + seconds
    while True:
        try:
            if client.call("GET", "/api/v2/monitor/health")[0] == 200:
                return
        except OSError:
            pass
        if server.poll() is not None or time.time() > deadline:
            server.kill()
            raise RuntimeError(f"airflow api-server did not start: {log.read_text()[-3000:]}")
        time.sleep(1)


class Approver(threading.Thread):
    """Waits for the approval request of a run of `dag_id` whose subject contains `subject_part` (looking as
    `viewer`), keeps it as the UI shows it (`request`), then gives each of `answers` (user, password, chosen options
    and form values) and keeps the HTTP statuses; with `answers` empty it calls `unanswered()` instead."""

    def __init__(self, api: Api, dag_id: str, subject_part: str, viewer: tuple[str, str],
                 answers: list[tuple[str, str, dict]], task_id: str = "approve"):  # fmt: skip
        super().__init__(daemon=True)
        self.api, self.dag_id, self.subject_part, self.viewer = api, dag_id, subject_part, viewer
        self.answers, self.task_id = answers, task_id
        self.request: dict | None = None
        self.statuses: list[int] = []
        self.error: BaseException | None = None

    def run(self):
        try:
            token = self.api.login(*self.viewer)
            deadline = time.time() + 900
            while self.request is None:
                _, listing = self.api.call("GET", f"/api/v2/dags/{self.dag_id}/dagRuns/~/hitlDetails", token=token)
                waiting = [
                    detail
                    for detail in listing.get("hitl_details", [])
                    if detail["task_instance"]["state"] == "awaiting_input"
                    and not detail["response_received"]
                    and self.subject_part in detail["subject"]
                ]
                if waiting:
                    self.request = waiting[0]
                elif time.time() > deadline:
                    raise TimeoutError("no approval request appeared")
                else:
                    time.sleep(2)
            run_id = self.request["task_instance"]["dag_run_id"]
            path = f"/api/v2/dags/{self.dag_id}/dagRuns/{run_id}/taskInstances/{self.task_id}/-1/hitlDetails"
            if not self.answers:
                self.unanswered()
            for user, password, answer in self.answers:
                status, _ = self.api.call("PATCH", path, answer, token=self.api.login(user, password))
                self.statuses.append(status)
        except BaseException as error:  # noqa: BLE001 - reported by the test, which waits for the run
            self.error = error

    def unanswered(self) -> None:
        """What happens to a request nobody answers (a subclass lets it time out)."""
