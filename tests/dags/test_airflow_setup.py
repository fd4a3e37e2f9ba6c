"""scripts/airflow-init.sh gives a working Airflow (SQLite metadata DB, the two connections, the one-slot pool), and
the Cassandra connection becomes the job's environment with the password nowhere else."""

import json
import os
import subprocess
import time

import pytest
from james_consistency.paths import PROJECT_ROOT

INIT = PROJECT_ROOT / "scripts" / "airflow-init.sh"


def airflow_env(home) -> dict[str, str]:
    env = {**os.environ, "AIRFLOW_HOME": str(home)}
    for name in ("AIRFLOW_CONN_CASSANDRA_DEFAULT", "AIRFLOW_CONN_SPARK_DEFAULT", "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"):
        env.pop(name, None)
    return env


def airflow(home, *arguments) -> str:
    result = subprocess.run(["airflow", *arguments], capture_output=True, text=True, env=airflow_env(home), timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def init(home) -> tuple[float, str]:
    started = time.perf_counter()
    result = subprocess.run([str(INIT)], capture_output=True, text=True, env=airflow_env(home), timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return time.perf_counter() - started, result.stdout


def test_init_creates_connections_and_pool_and_can_run_again(tmp_path):
    home = tmp_path / "airflow"

    first, said = init(home)
    assert "Airflow ready" in said
    again, said_again = init(home)
    assert said_again == "" and again < 2, "quiet and immediate when already done"
    (home / ".initialised").unlink()  # force the full set-up a second time: nothing duplicated, nothing broken
    init(home)

    assert (home / "airflow.db").exists()
    cassandra = json.loads(airflow(home, "connections", "get", "cassandra_default", "-o", "json"))[0]
    assert (cassandra["conn_type"], cassandra["host"], cassandra["port"]) == ("cassandra", "127.0.0.1", "9042")
    assert cassandra["login"] in (None, "", "None") and cassandra["password"] in (None, "", "None"), "no credentials"
    spark = json.loads(airflow(home, "connections", "get", "spark_default", "-o", "json"))[0]
    assert (spark["conn_type"], spark["host"]) == ("spark", "local[*]")
    pools = json.loads(airflow(home, "pools", "list", "-o", "json"))
    assert {pool["pool"]: int(pool["slots"]) for pool in pools}["cassandra_heavy"] == 1
    listed = json.loads(airflow(home, "connections", "list", "-o", "json"))
    assert sorted(c["conn_id"] for c in listed if c["conn_id"] in ("cassandra_default", "spark_default")) == [
        "cassandra_default",
        "spark_default",
    ]
    print(f"airflow-init: {first:.1f}s on a new home, {again:.2f}s when already done")


def test_an_operators_connection_is_kept_and_the_pool_goes_back_to_one_slot(tmp_path):
    home = tmp_path / "airflow"
    init(home)
    airflow(home, "connections", "delete", "cassandra_default")
    airflow(home, "connections", "add", "cassandra_default", "--conn-uri", "cassandra://cassandra-9.example:9142")
    airflow(home, "pools", "set", "cassandra_heavy", "4", "widened by hand")
    (home / ".initialised").unlink()

    init(home)

    cassandra = json.loads(airflow(home, "connections", "get", "cassandra_default", "-o", "json"))[0]
    assert (cassandra["host"], cassandra["port"]) == ("cassandra-9.example", "9142")
    pools = json.loads(airflow(home, "pools", "list", "-o", "json"))
    assert {pool["pool"]: int(pool["slots"]) for pool in pools}["cassandra_heavy"] == 1


def test_spark_default_gives_spark_submit_its_master(monkeypatch):
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[*]"}))
    assert SparkSubmitHook(conn_id="spark_default")._resolve_connection()["master"] == "local[*]"
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", "spark://spark-master:7077?deploy-mode=client")
    resolved = SparkSubmitHook(conn_id="spark_default")._resolve_connection()
    assert (resolved["master"], resolved["deploy_mode"]) == ("spark://spark-master:7077", "client")


def test_the_cassandra_connection_becomes_the_jobs_environment(monkeypatch):
    from james_airflow.connections import cassandra_environment
    from james_consistency.cql import CassandraSettings

    monkeypatch.setenv(
        "AIRFLOW_CONN_CASSANDRA_DEFAULT", "cassandra://james:s3cr%40t-pass@cassandra-1,cassandra-2:9142?local_dc=dc1"
    )
    conf, env = cassandra_environment("cassandra_default")

    assert conf == {
        "spark.cassandra.connection.host": "cassandra-1",
        "spark.cassandra.connection.port": "9142",
        "spark.cassandra.connection.localDC": "dc1",
        "spark.cassandra.auth.username": "james",
    }
    assert "s3cr@t-pass" not in json.dumps(conf), "the password never goes to --conf"
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert CassandraSettings.from_env() == CassandraSettings(
        host="cassandra-1", port=9142, username="james", password="s3cr@t-pass", local_dc="dc1"
    )


@pytest.mark.parametrize(
    "extra, local_dc",
    [
        ({}, None),
        ({"local_dc": "dc2"}, "dc2"),
        (
            {"load_balancing_policy": "DCAwareRoundRobinPolicy", "load_balancing_policy_args": {"local_dc": "dc3"}},
            "dc3",
        ),
    ],
)
def test_local_datacenter_from_either_extra_spelling(monkeypatch, extra, local_dc):
    from james_airflow.connections import cassandra_access

    connection = {"conn_type": "cassandra", "host": "127.0.0.1", "extra": extra}
    monkeypatch.setenv("AIRFLOW_CONN_CASSANDRA_DEFAULT", json.dumps(connection))
    access = cassandra_access()

    assert (access.host, access.port, access.local_dc, access.username) == ("127.0.0.1", 9042, local_dc, None)
    assert access.environment() == {
        "CASSANDRA_HOST": "127.0.0.1",
        "CASSANDRA_PORT": "9042",
        **({"CASSANDRA_LOCAL_DC": local_dc} if local_dc else {}),
    }
