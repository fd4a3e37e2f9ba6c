"""The cluster layer: a local 3-node Cassandra ring (.local/ring, CQL port 29242 on 127.0.0.1..3) and a local Spark
standalone cluster (spark://127.0.0.1:7077, workers on .local/worker-venv's Python, without this project).

Both are started by the same code as `james-consistency cassandra start --nodes 3` / `spark start`, and stopped
after the layer's module unless they were already running (or CLUSTER_TEST_KEEP=1): `make test-end-to-end` runs it in
a worker beside the end-to-end stories, one of which uses the same Spark cluster in turn (ONE_AT_A_TIME). The test
nodes are not touched.
"""

import os
import time
import uuid
from pathlib import Path

import pytest
from james_consistency.cassandra.cql import CassandraSettings, close, connect
from james_consistency_kit.cassandra_node import RING_DATACENTER
from support.ring import CONTACT, RING, cli


@pytest.fixture(scope="module")
def ring():
    started_here = not RING.running()
    RING.start()
    yield RING
    if started_here and os.environ.get("CLUSTER_TEST_KEEP") != "1":
        RING.stop()


@pytest.fixture(scope="module")
def ring_settings(ring) -> CassandraSettings:
    return CassandraSettings(host=CONTACT, port=ring.native_port)


@pytest.fixture(scope="module")
def ring_cql(ring_settings):
    session = connect(ring_settings)
    yield session
    close(session)


@pytest.fixture(scope="module")
def ring_keyspace(ring, ring_cql, request):
    """One platform seeded on the ring (RF 3, NetworkTopologyStrategy), dropped after the module."""
    keyspace = f"c_{request.module.__name__[-12:]}_{uuid.uuid4().hex[:8]}".lower()
    started = time.perf_counter()
    seeded = cli(
        ring,
        "seed", "--keyspace", keyspace, "--users", "5", "--mailboxes-per-user", "4", "--messages-per-mailbox", "100",
        "--replication-factor", "3", "--datacenter", RING_DATACENTER,
    )  # fmt: skip
    assert seeded.returncode == 0, seeded.stderr[-2000:]
    print(f"seeded {keyspace} on the ring in {time.perf_counter() - started:.0f}s")
    yield keyspace
    ring_cql.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)


def report_path(tmp_path: Path, name: str) -> Path:
    return tmp_path / f"{name}.json"
