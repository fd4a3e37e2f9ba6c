"""The node goes away during a repair (its own node, stopped for real): during the re-check and fix the run ends
PARTIAL with what was done; after a restart a re-run converges. A node down at start is a clear error within
seconds. (A node lost during the scan ends the run FAILED at stage "scan", exit 5, before anything is written; it is
not in the suite: the in-process Spark session's stop then hung for minutes.)"""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from james_consistency.cassandra.cql import CassandraSettings, close, connect
from james_consistency.cassandra.schema import create_schema
from james_consistency.jobs.submit import job_log
from james_consistency.runtime.paths import LOCAL_DIR
from james_consistency.settings import setting
from james_consistency_kit.cassandra_node import LocalNode
from james_consistency_kit.cli import main as cli_main
from support.messages import platform, projection, truth

FAULT_NODE = LocalNode(
    home=LOCAL_DIR / "fault-cassandra",
    # Apart from the local ring's ports (29242, 29200, 29300+), which a cluster test may have left running, and below
    # Linux's ephemeral range (32768-60999), where any outgoing connection may hold a port the node must bind.
    native_port=setting("JAMES_FAULT_CASSANDRA_PORT"),
    storage_port=28000,
    jmx_port=28199,
    heap="768M",
    skip_sync=False,  # the node is stopped and restarted: what it acknowledged must survive
)
SETTINGS = CassandraSettings(host="127.0.0.1", port=FAULT_NODE.native_port)


@pytest.fixture(scope="module")
def broken_keyspace():
    FAULT_NODE.start()
    session = connect(SETTINGS)
    keyspace = "faults_ks"
    session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")
    create_schema(session, keyspace, "3.9")
    rows = platform(session, keyspace, "3.9", mailboxes=4, per_mailbox=60)
    for row in rows[::3]:  # a third of messageIdTable lost: 80 candidates
        session.execute(
            f"DELETE FROM {keyspace}.messageidtable WHERE mailboxid = %s AND uid = %s", (row["mailboxid"], row["uid"])
        )
    close(session)
    yield keyspace
    FAULT_NODE.stop()


def _tables(keyspace):
    session = connect(SETTINGS)
    try:
        return projection(session, keyspace), truth(session, keyspace)
    finally:
        close(session)


def test_node_down_at_start_is_a_clear_error_within_seconds(capsys):
    started = time.monotonic()
    code = cli_main(["check", "messages", "--keyspace", "any", "--port", "39999"])
    assert code == 5
    assert time.monotonic() - started < 20
    assert "Cassandra node at 127.0.0.1:39999 is unreachable" in capsys.readouterr().err


def _finished(job: subprocess.Popen, seconds: float = 600) -> str:
    """The job's output once it ended; a job still running after `seconds` is killed (no orphan left behind)."""
    try:
        return job.communicate(timeout=seconds)[0]
    except subprocess.TimeoutExpired:
        job.kill()
        job.communicate()
        raise


def _repair(keyspace, report, recheck_delay: int = 5, **popen):
    """The repair as an operator runs it; the re-check delay leaves the test time to stop the node after the scan."""
    command = [str(Path(sys.executable).with_name("james-consistency")), "repair", "messages", "--keyspace", keyspace]
    command += ["--port", str(FAULT_NODE.native_port), "--allow-destructive", "--report", str(report)]
    return subprocess.Popen([*command, "--recheck-delay", str(recheck_delay)], text=True, **popen)


@pytest.mark.end_to_end
def test_node_lost_during_the_fixes_ends_partial_and_a_rerun_converges(broken_keyspace, tmp_path):
    """As an operator runs it: spark-submit jobs, the node stopped once the scan is done (during the re-check delay)."""
    job = _repair(broken_keyspace, tmp_path / "lost.json", stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    log = job_log(tmp_path / "lost.json")
    deadline = time.monotonic() + 600
    while " scan: " not in (log.read_text() if log.exists() else "") and time.monotonic() < deadline:
        time.sleep(0.2)  # the job logs its scan figures, then waits before re-checking
    FAULT_NODE.stop()
    try:
        output = _finished(job)
    finally:
        FAULT_NODE.start()

    assert job.returncode == 3, output  # PARTIAL
    report = json.loads((tmp_path / "lost.json").read_text())
    assert report["status"] == "PARTIAL"
    assert report["failedCount"] == sum(report["inconsistencies"].values()) == 80
    assert report["addedMessageIdEntries"] == 0
    assert {error["error"].split(":")[0] for error in report["errors"]} <= {"NoHostAvailable", "not attempted"}
    # The live reads in the executors failed first, before anything was written; each candidate then said why.
    assert report["liveReads"].startswith(
        "per candidate: the reads in the executors failed (Cassandra became unreachable"
    )
    projection_rows, truth_rows = _tables(broken_keyspace)
    assert set(projection_rows) <= set(truth_rows), "nothing half-written contradicts the truth"

    rerun = _repair(broken_keyspace, tmp_path / "rerun.json", 0, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    output = _finished(rerun)

    assert rerun.returncode == 0, output[-3000:]
    rerun_report = json.loads((tmp_path / "rerun.json").read_text())
    assert rerun_report["addedMessageIdEntries"] == 80
    assert rerun_report["beforeImages"]["records"] == 80  # what the re-run wrote, it can take back
    assert rerun_report["liveReads"] == "projection by partition, truth by direct join"
    projection_rows, truth_rows = _tables(broken_keyspace)
    assert projection_rows == truth_rows
