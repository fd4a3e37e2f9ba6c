"""scripts/airflow-init.sh gives a working Airflow: SQLite metadata DB, the two connections, the one-slot pool."""

import json
import os
import subprocess

from james_consistency.paths import PROJECT_ROOT


def airflow(home, *arguments) -> str:
    env = {**os.environ, "AIRFLOW_HOME": str(home)}
    env.pop("AIRFLOW_CONN_CASSANDRA_DEFAULT", None)
    result = subprocess.run(["airflow", *arguments], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def test_init_creates_connections_and_pool_and_can_run_again(tmp_path):
    home = tmp_path / "airflow"
    env = {**os.environ, "AIRFLOW_HOME": str(home)}
    init = PROJECT_ROOT / "scripts" / "airflow-init.sh"

    subprocess.run([str(init)], check=True, env=env, timeout=600)
    (home / ".initialised").unlink()  # force the full set-up a second time: nothing duplicated, nothing broken
    subprocess.run([str(init)], check=True, env=env, timeout=600)

    assert (home / "airflow.db").exists()
    cassandra = json.loads(airflow(home, "connections", "get", "cassandra_default", "-o", "json"))[0]
    assert (cassandra["conn_type"], cassandra["host"], cassandra["port"]) == ("cassandra", "127.0.0.1", "9042")
    assert cassandra["password"] in (None, "", "None"), "no credentials written by the set-up"
    spark = json.loads(airflow(home, "connections", "get", "spark_default", "-o", "json"))[0]
    assert (spark["conn_type"], spark["host"]) == ("spark", "local[*]")
    pools = json.loads(airflow(home, "pools", "list", "-o", "json"))
    assert {pool["pool"]: int(pool["slots"]) for pool in pools}["cassandra_heavy"] == 1
    listed = json.loads(airflow(home, "connections", "list", "-o", "json"))
    assert sorted(c["conn_id"] for c in listed if c["conn_id"] in ("cassandra_default", "spark_default")) == [
        "cassandra_default",
        "spark_default",
    ]
