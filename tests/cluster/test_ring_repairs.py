"""The repairs through spark:// on the 3-node ring: messages (shipped code, a node lost mid-repair, two nodes lost and
the next night an Airflow DAG run whose Spark jobs go to the cluster), ACL and index repairs."""

import json
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from cassandra import ConsistencyLevel
from cassandra.query import SimpleStatement
from james_consistency.jobs.submit import job_log
from james_consistency.runtime.spark_env import LOCAL_WORKER_PYTHON, spark_submit_command
from james_consistency_kit.spark_cluster import CLUSTER_HOME
from support.ring import CONTACT, cli, cli_environment, restart

# `make test-end-to-end` runs the cluster layer with the stories, in their workers.
pytestmark = pytest.mark.end_to_end

SHIPPING_CONF = ("spark.files=", "spark.executorEnv.PYTHONPATH=")


def message_keys(session, keyspace: str, table: str) -> set[tuple]:
    statement = SimpleStatement(
        f"SELECT messageid, mailboxid, uid, modseq FROM {keyspace}.{table}",
        consistency_level=ConsistencyLevel.LOCAL_QUORUM,
        fetch_size=5000,
    )
    return {(row.messageid, row.mailboxid, row.uid, row.modseq) for row in session.execute(statement, timeout=60)}


def assert_projection_equals_truth(session, keyspace: str) -> None:
    truth = message_keys(session, keyspace, "imapuidtable")
    projection = message_keys(session, keyspace, "messageidtable")
    assert truth, "the seeded truth is empty"
    assert projection == truth, f"{len(truth - projection)} missing, {len(projection - truth)} extra"


def break_projection(ring, keyspace: str, rate: float, seed: int) -> int:
    broken = cli(ring, "break", "--keyspace", keyspace, "--kind", "projection-missing", "--rate", str(rate),
                 "--random-seed", str(seed))  # fmt: skip
    assert broken.returncode == 0, broken.stderr[-2000:]
    return json.loads(broken.stdout)["count"]


def repair_arguments(keyspace: str, report, *extra: str) -> list[str]:
    return ["repair", "messages", "--keyspace", keyspace, "--report", str(report), "--recheck-delay", "1", *extra]


def start_repair(ring, master: str, keyspace: str, report, log, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "james_consistency_kit.cli", *repair_arguments(keyspace, report, *extra)],
        env=cli_environment(ring, master),
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def read_log(log_path: Path) -> str:
    return log_path.read_text(errors="replace") if log_path.exists() else ""


def wait_for_line(log_path: Path, text: str, process: subprocess.Popen, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while text not in read_log(log_path):
        assert process.poll() is None, f"the repair ended before '{text}':\n{read_log(log_path)[-3000:]}"
        assert time.monotonic() < deadline, f"no '{text}' within {timeout}s"
        time.sleep(0.2)


def probe(ring, master: str, settings, ship: bool) -> subprocess.CompletedProcess:
    command = spark_submit_command(Path(__file__).with_name("ship_probe.py"), [], settings, master=master)
    if not ship:
        shipping = [index for index, part in enumerate(command) if part.startswith(SHIPPING_CONF)]
        assert len(shipping) == len(SHIPPING_CONF)
        for index in reversed(shipping):
            del command[index - 1 : index + 1]
    return subprocess.run(
        command, env=cli_environment(ring, master), capture_output=True, text=True, timeout=600, check=False
    )


def test_the_executors_run_the_shipped_zip_on_a_python_without_the_project(ring, spark_standalone, ring_settings):
    shipped = probe(ring, spark_standalone, ring_settings, ship=True)
    assert shipped.returncode == 0, shipped.stderr[-3000:]
    found = json.loads(next(line for line in shipped.stdout.splitlines() if line.startswith("PROBE "))[6:])
    assert found["names"] == ["ring_one", "ring_two"]
    for python, package in found["executors"]:
        assert python == str(LOCAL_WORKER_PYTHON)
        assert re.search(r"/james_consistency-[0-9a-f]+\.zip/james_consistency/", package), package
    # The kit's cluster keeps its executors to the quick compiler (spark_cluster.write_java_options).
    executor_logs = CLUSTER_HOME.glob(f"worker*/{found['application']}/*/stderr")
    launched = [path.read_text().splitlines()[0] for path in executor_logs]
    assert launched and all('"-XX:TieredStopAtLevel=1"' in command for command in launched), launched

    not_shipped = probe(ring, spark_standalone, ring_settings, ship=False)
    assert not_shipped.returncode != 0
    assert "No module named 'james_consistency'" in not_shipped.stdout + not_shipped.stderr


def test_nodes_lost_mid_repair_one_the_run_completes_two_it_fails_fast_and_the_next_night_through_airflow_converges(
    ring, spark_standalone, ring_cql, ring_keyspace, tmp_path, monkeypatch
):
    """One ring story, so that the ring is made whole once: node 3 lost in the middle of a repair (LOCAL_QUORUM is
    still reached, the run completes), then, node 3 still down, node 2 lost in the middle of the next repair (the run
    fails fast), then both back and the next night through Airflow."""
    try:
        one_node_lost_the_run_completes_at_local_quorum(ring, spark_standalone, ring_cql, ring_keyspace, tmp_path)
        figures, broken = two_nodes_lost_the_run_fails_fast(ring, spark_standalone, ring_keyspace, tmp_path)
    finally:
        restart(ring, ring_keyspace, 2, 3)

    # The next night: one message_consistency DAG run whose Spark jobs go to the cluster adds what the fixes left.
    from james_airflow.runs import read_report

    left = broken - figures["addedMessageIdEntries"]
    run, summary = night_through_airflow(ring, spark_standalone, ring_keyspace, monkeypatch)
    assert summary["repair"]["status"] == "COMPLETED"
    assert summary["repair"]["addedMessageIdEntries"] == left
    repair = read_report("message_consistency", run.run_id, "repair")
    assert repair.liveReads == "projection by partition, truth by direct join", "read by the executors, not the driver"
    assert summary["verify"]["remainingInconsistencies"] == 0
    assert_projection_equals_truth(ring_cql, ring_keyspace)


def one_node_lost_the_run_completes_at_local_quorum(ring, spark_standalone, ring_cql, ring_keyspace, tmp_path):
    """Node 3 stopped while a throttled repair writes its fixes; it stays down (the caller restarts it)."""
    broken = break_projection(ring, ring_keyspace, 0.05, 2)
    report, terminal = tmp_path / "one-lost.json", tmp_path / "one-lost.out"
    log_path = job_log(report)
    with open(terminal, "w") as log:
        # Throttled so that the fixes are still being written when the node goes.
        repair = start_repair(ring, spark_standalone, ring_keyspace, report, log, "--messages-per-second", "10")
        try:
            wait_for_line(log_path, "gate plan_safety: passed", repair)
            time.sleep(2)
            assert ring.stop(3) == [3]
            assert repair.wait(timeout=600) == 0, read_log(log_path)[-3000:]
        finally:
            repair.kill()
    figures = json.loads(report.read_text())
    assert figures["status"] == "COMPLETED"
    assert figures["addedMessageIdEntries"] == broken
    assert figures["failedCount"] == 0
    assert_projection_equals_truth(ring_cql, ring_keyspace)


def two_nodes_lost_the_run_fails_fast(ring, spark_standalone, ring_keyspace, tmp_path) -> tuple[dict, int]:
    """Node 2 stopped while a throttled repair writes its fixes, node 3 being down already: the run's report and
    what was broken. Both nodes stay down (the caller restarts them)."""
    broken = break_projection(ring, ring_keyspace, 0.05, 3)
    report, terminal = tmp_path / "two-lost.json", tmp_path / "two-lost.out"
    log_path = job_log(report)
    with open(terminal, "w") as log:
        repair = start_repair(ring, spark_standalone, ring_keyspace, report, log, "--messages-per-second", "10")
        try:
            wait_for_line(log_path, "gate plan_safety: passed", repair)
            time.sleep(2)
            assert ring.stop(2) == [2]
            lost = time.perf_counter()
            code = repair.wait(timeout=600)
            seconds_to_fail = time.perf_counter() - lost
        finally:
            repair.kill()
    output = read_log(log_path)
    print(f"two nodes lost: exit {code} {seconds_to_fail:.1f}s after the loss")
    assert code != 0, output[-3000:]
    assert seconds_to_fail < 60, output[-3000:]
    # Every fix is one row: written at LOCAL_QUORUM or reported failed, with the reason.
    figures = json.loads(report.read_text())
    assert figures["status"] == "PARTIAL"
    assert figures["liveReads"] == "per candidate", "a throttled run reads at its rate, candidate by candidate"
    assert figures["failedCount"] > 0
    found = {name: figures.get(name) for name in ("inconsistencies", "unreadableTruth", "outcomes")}
    assert figures["addedMessageIdEntries"] + figures["failedCount"] == broken, found
    # The first fixes fail on the coordinator's answer, naming the level it could not reach: the truth's re-read at
    # SERIAL (James writes messages with lightweight transactions by default) or the write at LOCAL_QUORUM; the job
    # then stops trying (not attempted: unreachable).
    reasons = [error["error"] for error in figures["errors"]]
    unreached = ("Cannot achieve consistency level", "consistency level SERIAL")
    assert any(any(said in reason for said in unreached) for reason in reasons), reasons[:3]
    named = ("LOCAL_QUORUM", "SERIAL", "Cassandra unreachable")
    assert all(any(said in reason for said in named) for reason in reasons), reasons[:3]
    return figures, broken


def night_through_airflow(ring, spark_standalone: str, keyspace: str, monkeypatch):
    """One message_consistency run through Airflow's dag.test(), its Spark jobs on the cluster: the run, and its
    report task's summary (every task asserted to have succeeded)."""
    from airflow.dag_processing.dagbag import DagBag
    from james_airflow.bundle import DAGS_FOLDER
    from support.dag_runs import report_summary, task_states

    host, port = spark_standalone.removeprefix("spark://").split(":")
    monkeypatch.setenv("AIRFLOW_CONN_CASSANDRA_DEFAULT", f"cassandra://{CONTACT}:{ring.native_port}")
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": f"spark://{host}", "port": int(port)})
    )
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
    dag = DagBag(str(DAGS_FOLDER)).get_dag("message_consistency")

    started = time.perf_counter()
    run = dag.test(run_conf={"keyspace": keyspace, "recheck_delay_seconds": 1, "max_destructive_share": 0.5})
    print(f"message_consistency DAG run on the cluster: {time.perf_counter() - started:.0f}s")

    assert str(run.state) == "success", task_states(run)
    assert task_states(run) == {
        "check": "success",
        "anything_to_repair": "success",
        "repair": "success",
        "verify": "success",
        "report": "success",
    }
    return run, report_summary(run)


def break_kind(ring, keyspace: str, kind: str, rate: float, seed: int) -> list[dict]:
    broken = cli(ring, "break", "--keyspace", keyspace, "--kind", kind, "--rate", str(rate),
                 "--random-seed", str(seed))  # fmt: skip
    assert broken.returncode == 0, broken.stderr[-2000:]
    rows = json.loads(Path(json.loads(broken.stdout)["path"]).read_text())["rows"]  # the manifest
    assert rows, f"{kind} broke nothing"
    return rows


def quorum_rows(session, query: str, *arguments) -> list:
    statement = SimpleStatement(query, consistency_level=ConsistencyLevel.LOCAL_QUORUM, fetch_size=5000)
    return list(session.execute(statement, arguments, timeout=60))


def test_the_acl_and_index_repairs_through_the_cluster_repair_the_ring(
    ring, spark_standalone, ring_cql, ring_keyspace, tmp_path
):
    lost_shares = break_kind(ring, ring_keyspace, "acl-user-missing", 0.5, 4)
    lost_deletions = break_kind(ring, ring_keyspace, "deleted-missing", 0.5, 5)

    for target, added_field, broken in (
        ("acl", "addedUserMailboxACLEntries", lost_shares),
        ("deleted", "addedEntries", lost_deletions),
    ):
        report = tmp_path / f"{target}.json"
        repaired = cli(ring, "repair", target, "--keyspace", ring_keyspace, "--report", str(report),
                       "--recheck-delay", "1", master=spark_standalone)  # fmt: skip
        assert repaired.returncode == 0, (repaired.stdout + repaired.stderr)[-3000:]
        figures = json.loads(report.read_text())
        assert figures["status"] == "COMPLETED", figures
        assert figures[added_field] == len(broken), (target, figures["inconsistencies"])

    for share in lost_shares:
        rights = quorum_rows(
            ring_cql,
            f"SELECT rights FROM {ring_keyspace}.usermailboxacl WHERE username = %s AND mailboxid = %s",
            share["userName"],
            uuid.UUID(share["mailboxId"]),
        )
        assert [row.rights for row in rights] == [share["before"]["rights"]], share
    deleted_truth = {
        (row.mailboxid, row.uid)
        for row in quorum_rows(ring_cql, f"SELECT mailboxid, uid, flagdeleted FROM {ring_keyspace}.imapuidtable")
        if row.flagdeleted
    }
    deleted_index = {
        (row.mailboxid, row.uid)
        for row in quorum_rows(ring_cql, f"SELECT mailboxid, uid FROM {ring_keyspace}.messagedeleted")
    }
    assert deleted_truth and deleted_index == deleted_truth
