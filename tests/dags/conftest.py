"""DAG tests run in the real Airflow (SQLite home set up by scripts/airflow-init.sh) against the test node."""

import json
import os

import pytest
from support.browser import browser  # noqa: F401 - the fixture of the UI stories


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
    """The DAG files parsed once for inspection; get_dag() parses them again on every call, so each dag.test() runs
    a DAG object of its own. Airflow's task runner resolves a run's conf into the task's Param objects in place, so a
    second dag.test() of the same object would start from the first run's form values (a dry run would stay a dry
    run). Deployed tasks do not share objects: each runs in a fresh process."""
    from airflow.dag_processing.dagbag import DagBag
    from james_airflow.bundle import DAGS_FOLDER

    class FreshDagBag(DagBag):
        def get_dag(self, dag_id, *args, **kwargs):
            return DagBag(str(DAGS_FOLDER)).get_dag(dag_id)

    return FreshDagBag(str(DAGS_FOLDER))


@pytest.fixture
def own_airflow_home(tmp_path) -> dict[str, str]:
    """A metadata database of its own for a test that runs `airflow standalone`: no run left queued or awaiting
    approval in the shared home (e.g. by an interrupted session) can hold the one-slot pool or the DAG's only active
    run. Returns the environment that points Airflow at it."""
    import subprocess

    from james_consistency.runtime.paths import PROJECT_ROOT

    home = tmp_path / "airflow-home"
    environment = {**os.environ, "AIRFLOW_HOME": str(home)}
    subprocess.run([str(PROJECT_ROOT / "scripts" / "airflow-init.sh")], env=environment, check=True)
    return {"AIRFLOW_HOME": str(home)}
