"""The local ring as the cluster layer's tests reach it (tests/cluster): its contact point and the kit's command line
pointed at it. Here rather than in tests/cluster/conftest.py: a test module importing `conftest` gets whichever
conftest module pytest imported last (tests/dags' in a worker that collected it after)."""

import os
import subprocess
import sys

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
