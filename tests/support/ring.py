"""The local ring as the cluster layer's tests reach it (tests/cluster): its contact point and the kit's command line
pointed at it. Here rather than in tests/cluster/conftest.py: a test module importing `conftest` gets whichever
conftest module pytest imported last (tests/dags' in a worker that collected it after)."""

import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from cassandra import ConsistencyLevel
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
from cassandra.policies import WhiteListRoundRobinPolicy
from cassandra.query import SimpleStatement
from james_consistency_kit.cassandra_node import LocalRing

RING = LocalRing(size=3)
# Node 1 is the clients' contact point (cql.connect takes one host); the tests stop nodes 2 and 3.
CONTACT = "127.0.0.1"


def cli_environment(ring: LocalRing, master: str | None = None) -> dict[str, str]:
    environment = {**os.environ, "CASSANDRA_HOST": CONTACT, "CASSANDRA_PORT": str(ring.native_port)}
    if master:
        environment.update(SPARK_MASTER=master, SPARK_LOCAL_IP="127.0.0.1")
    else:
        environment.pop("SPARK_MASTER", None)
    return environment


def cli(ring: LocalRing, *arguments: str, master: str | None = None, timeout: float = 600):
    return subprocess.run(
        [sys.executable, "-m", "james_consistency_kit.cli", *arguments],
        env=cli_environment(ring, master),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def restart(ring: LocalRing, keyspace: str, *numbers: int) -> None:
    """Start stopped members of the ring together (they rejoin: no bootstrap to order), then wait until the ring is
    whole again (`settle`)."""
    with ThreadPoolExecutor(len(numbers)) as pool:
        list(pool.map(lambda number: ring.node(number).start(), numbers))
    settle(ring, keyspace)


def settle(ring: LocalRing, keyspace: str, timeout: float = 300) -> None:
    """Wait until every node coordinates a read at ALL of each of the keyspace's tables.

    A restarted node answers CQL before its peers mark it up, and the writes it missed reach it later (hints). Until
    then a read can time out on a replica its coordinator has not reconnected to (the check then reports a range of
    the truth unreadable), and a read at ONE can find the stale replica. Reads at ALL succeed only once every node
    answers every other, and they read-repair what a replica missed: the next step of a story finds the ring as the
    last one left it."""
    tables = None
    deadline = time.monotonic() + timeout
    for node in ring.nodes():
        profile = ExecutionProfile(
            load_balancing_policy=WhiteListRoundRobinPolicy([node.address]),
            consistency_level=ConsistencyLevel.ALL,
            request_timeout=45,
        )
        cluster = Cluster([node.address], port=ring.native_port, execution_profiles={EXEC_PROFILE_DEFAULT: profile},
                          protocol_version=4, schema_metadata_enabled=False)  # fmt: skip
        try:
            session = cluster.connect()
            if tables is None:
                query = "SELECT table_name FROM system_schema.tables WHERE keyspace_name = %s"
                tables = [row.table_name for row in session.execute(query, (keyspace,))]
            for table in tables:
                statement = SimpleStatement(f"SELECT * FROM {keyspace}.{table}", fetch_size=5000)
                while True:
                    try:
                        for _ in session.execute(statement):
                            pass
                        break
                    except Exception as error:  # noqa: BLE001 - Unavailable, timeouts: the ring is not whole yet
                        if time.monotonic() > deadline:
                            raise AssertionError(f"the ring did not settle within {timeout:.0f}s: {error}") from error
                        time.sleep(2)
        finally:
            cluster.shutdown()
