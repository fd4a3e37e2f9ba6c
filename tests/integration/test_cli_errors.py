"""Wrong input gets one clear line on stderr and a non-zero exit, through the installed `james-consistency` command."""

import json
import subprocess

import pytest


def run_cli(*arguments: str, env: dict | None = None) -> subprocess.CompletedProcess:
    import os

    return subprocess.run(
        ["james-consistency", *arguments],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def error_lines(result: subprocess.CompletedProcess) -> list[str]:
    return [line for line in result.stderr.splitlines() if "error" in line.lower()]


def test_node_not_running_is_reported_within_seconds():
    result = run_cli("schema", "--keyspace", "anything", "--port", "29999")

    assert result.returncode == 5  # an infrastructure failure (retried by Airflow), not wrong input
    assert len(error_lines(result)) == 1
    assert "Cassandra node at 127.0.0.1:29999 is unreachable" in result.stderr


def test_unknown_keyspace_stops_the_job(cassandra_settings):
    result = run_cli("check", "messages", "--keyspace", "no_such_keyspace", "--port", str(cassandra_settings.port))

    assert result.returncode == 2
    assert "keyspace 'no_such_keyspace' does not exist" in result.stderr


def test_keyspace_without_james_tables_stops_the_job(cql, cassandra_settings, new_keyspace):
    keyspace = new_keyspace("empty")
    cql.execute(f"CREATE KEYSPACE {keyspace} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}")

    result = run_cli("check", "messages", "--keyspace", keyspace, "--port", str(cassandra_settings.port))

    assert result.returncode == 2
    assert f"keyspace '{keyspace}' has no James message tables" in result.stderr


def test_port_in_use_is_refused(cassandra_node, tmp_path):
    result = run_cli(
        "cassandra",
        "start",
        "--port",
        str(cassandra_node.native_port),
        env={"JAMES_CASSANDRA_HOME": str(tmp_path / "node")},
    )

    assert result.returncode == 2
    assert f"port {cassandra_node.native_port} (CQL) on 127.0.0.1 is already in use" in result.stderr


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--users", "-1", "--mailboxes-per-user", "1", "--messages-per-mailbox", "1"], "-1 is negative"),
        (["--users", "1", "--mailboxes-per-user", "x", "--messages-per-mailbox", "1"], "'x' is not a whole number"),
        (["--users", "1", "--mailboxes-per-user", "1", "--messages-per-mailbox", "-5"], "-5 is negative"),
    ],
)
def test_negative_or_malformed_sizes_are_refused(arguments, message):
    result = run_cli("seed", "--keyspace", "k", *arguments)

    assert result.returncode == 2
    assert message in result.stderr


def test_unknown_fault_kind_is_refused(cql, cassandra_settings, new_keyspace):
    keyspace = new_keyspace("faults")
    from james_consistency.cassandra.schema import create_schema

    create_schema(cql, keyspace, "3.9")

    result = run_cli("break", "--keyspace", keyspace, "--kind", "no-such-kind", "--port", str(cassandra_settings.port))

    assert result.returncode == 2
    assert "unknown fault kind 'no-such-kind'" in result.stderr


def test_missing_projection_table_stops_the_job_before_anything_is_written(cql, cassandra_settings, new_keyspace):
    from james_consistency.cassandra.schema import create_schema

    keyspace = new_keyspace("notable")
    create_schema(cql, keyspace, "3.9")
    cql.execute(f"DROP TABLE {keyspace}.messageidtable", timeout=60)

    result = run_cli("repair", "messages", "--keyspace", keyspace, "--port", str(cassandra_settings.port))

    assert result.returncode == 2
    assert f"keyspace '{keyspace}' has no table messageIdTable" in result.stderr


def test_a_run_that_fails_says_why_in_one_line_and_names_its_report_and_log_not_a_stack_trace(
    cql, cassandra_settings, new_keyspace, tmp_path
):
    """Every LOCAL_QUORUM read of a keyspace replicated three times on one node is unavailable: the same failure
    as a ring with two of its three nodes down, met by the re-check of the candidates."""
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement
    from james_consistency.cassandra.schema import create_schema
    from james_consistency.engine.project_keyspace import ensure_project_keyspace
    from support.messages import message, timeuuid

    # The project's own keyspace (before-images) as on a platform whose data is replicated as the node allows.
    ensure_project_keyspace(cql, "system_auth")
    keyspace = new_keyspace("unavailable")
    create_schema(cql, keyspace, "3.9", replication_factor=3)
    for uid in (1, 2):  # truth rows whose messageIdTable rows are missing, written by the one replica there is
        row = message("3.9", timeuuid(1), uid, uid)
        insert = f"INSERT INTO {keyspace}.imapuidtable ({', '.join(row)}) VALUES ({', '.join('%s' for _ in row)})"
        cql.execute(SimpleStatement(insert, consistency_level=ConsistencyLevel.ONE), list(row.values()))
    report = tmp_path / "messages-repair.json"

    result = run_cli(
        "repair", "messages", "--keyspace", keyspace, "--port", str(cassandra_settings.port), "--report", str(report),
        "--quiet",
    )  # fmt: skip

    terminal = result.stdout + result.stderr
    assert result.returncode == 3, terminal  # rows could not be repaired: listed in the report, a re-run converges
    assert "Traceback" not in terminal and "Caused by" not in terminal and "\tat " not in terminal
    summary = result.stdout.splitlines()[0]
    assert summary.startswith(f"messages repair on {keyspace}: PARTIAL;") and "errors 2" in summary
    assert f"report: {report}" in result.stdout
    assert result.stderr.splitlines()[-1].startswith(f"log: {report}.log (exit code 3:")
    assert "Unavailable" in json.loads(report.read_text())["errors"][0]["error"]


def test_the_bench_refuses_to_start_while_another_local_cassandra_would_count_as_benched(cql, cassandra_settings):
    import sys

    from james_consistency_kit.bench.measure import local_cassandra_processes

    # Any process whose command line runs CassandraDaemon is counted as a local Cassandra node (bench/measure.py).
    running = len(local_cassandra_processes())
    other_node = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)", "org.apache.cassandra.service.CassandraDaemon"]
    )
    try:
        result = run_cli("bench", "messages", "--messages", "100", "--port", str(cassandra_settings.port))
    finally:
        other_node.kill()
        other_node.wait()

    assert result.returncode == 2
    assert f"{running + 1} Cassandra JVMs run on this machine" in result.stderr
    assert str(other_node.pid) in result.stderr
    assert "has 1 node(s)" in result.stderr
    seeded = cql.execute("SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = 'bench_james_100'")
    assert seeded.one() is None
