"""DAG tests run in the real Airflow (SQLite home set up by scripts/airflow-init.sh) against the test node."""

import json

import pytest


@pytest.fixture
def airflow_against_test_node(cassandra_node, monkeypatch, tmp_path):
    """Point the DAGs' cassandra_default at the test node and the alert log at a temporary file."""
    monkeypatch.setenv("AIRFLOW_CONN_CASSANDRA_DEFAULT", f"cassandra://127.0.0.1:{cassandra_node.native_port}")
    alerts = tmp_path / "alerts.jsonl"
    monkeypatch.setenv("JAMES_ALERT_LOG", str(alerts))

    def received_alerts() -> list[dict]:
        return [json.loads(line) for line in alerts.read_text().splitlines()] if alerts.exists() else []

    return received_alerts


@pytest.fixture(scope="session")
def dagbag():
    from airflow.dag_processing.dagbag import DagBag
    from james_consistency.paths import PROJECT_ROOT

    return DagBag(str(PROJECT_ROOT / "dags"))
