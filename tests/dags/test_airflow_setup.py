"""scripts/airflow-init.sh gives a working Airflow (SQLite metadata DB, the two connections, the one-slot pool), and
the Cassandra connection becomes the job's environment with the password nowhere else."""

import json
import os
import subprocess
import sys
import time

import pytest
from james_consistency.runtime.paths import PROJECT_ROOT

INIT = PROJECT_ROOT / "scripts" / "airflow-init.sh"


def airflow_env(home) -> dict[str, str]:
    env = {**os.environ, "AIRFLOW_HOME": str(home)}
    for name in ("AIRFLOW_CONN_CASSANDRA_DEFAULT", "AIRFLOW_CONN_SPARK_DEFAULT", "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"):
        env.pop(name, None)
    return env


# One Python process per look at the metadata database (each `airflow` CLI call costs ~5 s of start-up).
PROBE = """
import json, sys
from airflow.models import Connection, Pool
from airflow.utils.session import create_session
from sqlalchemy import select

with create_session() as session:
    if sys.argv[1:] == ["tamper"]:
        session.scalar(select(Connection).filter_by(conn_id="cassandra_default")).host = "cassandra-9.example"
        session.scalar(select(Pool).filter_by(pool="cassandra_heavy")).slots = 4
    connections = [
        {"conn_id": c.conn_id, "conn_type": c.conn_type, "host": c.host, "port": c.port, "login": c.login,
         "password": c.password}
        for c in session.scalars(select(Connection))
    ]
    pools = {p.pool: p.slots for p in session.scalars(select(Pool))}
print(json.dumps({"connections": connections, "pools": pools}))
"""


def metadata(home, *arguments) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", PROBE, *arguments], capture_output=True, text=True, env=airflow_env(home), timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def init(home) -> tuple[float, str]:
    started = time.perf_counter()
    result = subprocess.run([str(INIT)], capture_output=True, text=True, env=airflow_env(home), timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return time.perf_counter() - started, result.stdout


def test_init_creates_connections_and_pool_can_run_again_and_keeps_an_operators_changes(tmp_path):
    home = tmp_path / "airflow"

    first, said = init(home)
    assert "Airflow ready" in said
    again, said_again = init(home)
    assert said_again == "" and again < 2, "quiet and immediate when already done"
    print(f"airflow-init: {first:.1f}s on a new home, {again:.2f}s when already done")

    assert (home / "airflow.db").exists()
    found = metadata(home)
    connections = {c["conn_id"]: c for c in found["connections"]}
    assert {k: connections["cassandra_default"][k] for k in ("conn_type", "host", "port", "login", "password")} == {
        "conn_type": "cassandra",
        "host": "127.0.0.1",
        "port": 9042,
        "login": None,
        "password": None,
    }, "the local node, and no credentials written by the set-up"
    assert (connections["spark_default"]["conn_type"], connections["spark_default"]["host"]) == ("spark", "local[*]")
    assert found["pools"]["cassandra_heavy"] == 1

    # An operator points the connection elsewhere and widens the pool; the set-up runs again in full.
    metadata(home, "tamper")
    (home / ".initialised").unlink()
    init(home)

    found = metadata(home)
    ids = [c["conn_id"] for c in found["connections"]]
    assert ids.count("cassandra_default") == ids.count("spark_default") == 1, "nothing duplicated"
    assert {c["conn_id"]: c["host"] for c in found["connections"]}["cassandra_default"] == "cassandra-9.example"
    assert found["pools"]["cassandra_heavy"] == 1, "the heavy pool always goes back to one slot"


def test_spark_default_gives_spark_submit_its_master(monkeypatch):
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[*]"}))
    assert SparkSubmitHook(conn_id="spark_default")._resolve_connection()["master"] == "local[*]"
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", "spark://spark-master:7077?deploy-mode=client")
    resolved = SparkSubmitHook(conn_id="spark_default")._resolve_connection()
    assert (resolved["master"], resolved["deploy_mode"]) == ("spark://spark-master:7077", "client")


def test_the_cassandra_connection_becomes_the_jobs_environment(monkeypatch):
    from james_airflow.connections import cassandra_environment
    from james_consistency.cassandra.cql import CassandraSettings

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
