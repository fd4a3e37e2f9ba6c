"""Wrong input gets one clear line on stderr and a non-zero exit, through the installed `james-consistency` command."""

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
    from james_consistency.schema import create_schema

    create_schema(cql, keyspace, "3.9")

    result = run_cli("break", "--keyspace", keyspace, "--kind", "no-such-kind", "--port", str(cassandra_settings.port))

    assert result.returncode == 2
    assert "unknown fault kind 'no-such-kind'" in result.stderr


def test_missing_projection_table_stops_the_job_before_anything_is_written(cql, cassandra_settings, new_keyspace):
    from james_consistency.schema import create_schema

    keyspace = new_keyspace("notable")
    create_schema(cql, keyspace, "3.9")
    cql.execute(f"DROP TABLE {keyspace}.messageidtable", timeout=60)

    result = run_cli("repair", "messages", "--keyspace", keyspace, "--port", str(cassandra_settings.port))

    assert result.returncode == 2
    assert f"keyspace '{keyspace}' has no table messageIdTable" in result.stderr
