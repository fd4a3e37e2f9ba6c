"""`james-consistency cassandra start|status|stop` on a node of its own (not the shared test node)."""

import os
import subprocess

NODE_PORTS = {"CASSANDRA_PORT": "29042", "JAMES_CASSANDRA_STORAGE_PORT": "27000", "JAMES_CASSANDRA_JMX_PORT": "27199"}


def run_node(action: str, home) -> subprocess.CompletedProcess:
    env = {**os.environ, **NODE_PORTS, "JAMES_CASSANDRA_HOME": str(home), "JAMES_CASSANDRA_HEAP": "512M"}
    return subprocess.run(
        ["james-consistency", "cassandra", action], capture_output=True, text=True, env=env, timeout=300
    )


def jvms_of(home) -> list[str]:
    listing = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in listing.splitlines() if "java" in line and str(home) in line]


def test_start_status_stop_leaves_no_jvm(tmp_path):
    home = tmp_path / "node"
    try:
        started = run_node("start", home)
        assert started.returncode == 0, started.stderr
        assert "Cassandra 5.0." in started.stdout and "ready on 127.0.0.1:29042" in started.stdout

        status = run_node("status", home)
        assert status.returncode == 0
        assert "ready on 127.0.0.1:29042" in status.stdout
        assert len(jvms_of(home)) == 1

        again = run_node("start", home)
        assert again.returncode == 0 and len(jvms_of(home)) == 1, "start is idempotent"

        assert run_node("stop", home).stdout.strip() == "Cassandra stopped"
        gone = run_node("status", home)
        assert gone.returncode == 3
        assert "Cassandra not running" in gone.stdout
        assert jvms_of(home) == []
        assert (home / "data" / "data").is_dir() and (home / "logs" / "system.log").is_file()
    finally:
        run_node("stop", home)
