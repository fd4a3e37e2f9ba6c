"""The night's window through the real scheduler and triggerer (`airflow standalone`): a repair still running past
JAMES_REPAIR_WINDOW_MINUTES after it was queued sends the overrun alert, and the run itself goes on."""

import json
import time
from urllib.parse import quote

from james_consistency.local_airflow import airflow_standalone
from james_consistency.schema import create_schema
from support.messages import platform

DAG_ID = "message_consistency"
ADMIN, ADMIN_PASSWORD = "admin", "window-test-admin"


def wait_for(what: str, probe, seconds: float = 300, every: float = 2):
    deadline = time.time() + seconds
    while (found := probe()) is None:
        if time.time() > deadline:
            raise TimeoutError(f"waited {seconds:.0f}s for {what}")
        time.sleep(every)
    return found


def test_a_run_past_its_window_is_alerted_by_the_triggerer_and_goes_on(cassandra_node, cql, new_keyspace, tmp_path):
    keyspace = new_keyspace("window")
    create_schema(cql, keyspace, "3.9")
    platform(cql, keyspace, "3.9")
    alerts = tmp_path / "alerts.jsonl"

    def alert_of(run_id: str):
        lines = alerts.read_text().splitlines() if alerts.exists() else []
        return next((alert for alert in map(json.loads, lines) if alert["run_id"] == run_id), None)

    with airflow_standalone(
        tmp_path / "standalone.log",
        {ADMIN: ADMIN_PASSWORD},
        tmp_path / "passwords.json",
        JAMES_REPAIR_WINDOW_MINUTES="0.05",  # 3 s: any Spark job overruns it
        JAMES_ALERT_LOG=str(alerts),
        AIRFLOW_CONN_CASSANDRA_DEFAULT=f"cassandra://127.0.0.1:{cassandra_node.native_port}",
    ) as api:
        api.wait_for_dag(DAG_ID)
        api.set_paused(DAG_ID, False)
        try:
            run_id = api.trigger(DAG_ID, {"keyspace": keyspace, "dry_run": True})
            started = time.perf_counter()
            alert = wait_for("the overrun alert", lambda: alert_of(run_id))
            print(f"overrun alert {time.perf_counter() - started:.0f}s after the trigger")

            final_state = api.wait_for_run(DAG_ID, run_id, seconds=600)
        finally:
            api.set_paused(DAG_ID, True)

    assert alert["title"] == f"{DAG_ID}: still running after its 0.05-minute window"
    assert alert["dag_id"] == DAG_ID and alert["run_url"].endswith(f"/dags/{DAG_ID}/runs/{quote(run_id, safe='')}")
    assert "JAMES_REPAIR_WINDOW_MINUTES" in alert["reason"]
    assert final_state == "success", "the window alerts; it does not stop the repair"
