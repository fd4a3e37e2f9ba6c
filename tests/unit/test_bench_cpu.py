"""The bench's processor figures: what a phase kept busy, and the share of the benched Cassandra nodes in it."""

import socket
import subprocess
import sys

import pytest
from james_consistency_kit.bench import CpuClock

MARKER = "org.apache.cassandra.service.CassandraDaemon"

# A stand-in for a node: its command line names CassandraDaemon, it listens on the port it is given, and it computes
# for 0.6 s of processor time when told to ("go"), then waits to be told again.
NODE = (
    "import socket, sys, time\n"
    "server = socket.socket()\n"
    "server.bind(('127.0.0.1', int(sys.argv[1])))\n"
    "server.listen()\n"
    "print('listening', flush=True)\n"
    "while sys.stdin.readline():\n"
    "    end = time.process_time() + 0.6\n"
    "    while time.process_time() < end: pass\n"
    "    print('done', flush=True)\n"
)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Node:
    def __init__(self, port: int):
        self.process = subprocess.Popen(
            [sys.executable, "-c", NODE, str(port), MARKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout.readline().strip() == "listening"

    def compute(self) -> None:
        self.process.stdin.write("go\n")
        self.process.stdin.flush()
        assert self.process.stdout.readline().strip() == "done"

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


@pytest.fixture
def nodes():
    started = []

    def start(port: int) -> Node:
        started.append(Node(port))
        return started[-1]

    yield start
    for node in started:
        node.stop()


def _burn(seconds: float) -> None:
    code = f"import time\nend = time.process_time() + {seconds}\nwhile time.process_time() < end: pass"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_phase_that_computes_keeps_a_core_busy():
    port = _free_port()
    started = CpuClock.now(port)
    _burn(0.6)
    figures = CpuClock.now(port).since(started)

    assert figures["cpuSeconds"] >= 0.5
    # At most every core, give or take a clock tick between the two readings of a short phase.
    assert 0.5 <= figures["busyCores"] <= figures["cores"] + 0.1
    assert figures["cassandraCpuSeconds"] == 0


def test_the_time_of_a_node_serving_the_benched_port_is_counted_as_cassandras(nodes):
    port = _free_port()
    node = nodes(port)
    started = CpuClock.now(port)
    node.compute()
    figures = CpuClock.now(port).since(started)

    assert figures["cassandraCpuSeconds"] >= 0.5
    assert figures["cassandraCores"] > 0


def test_another_clusters_nodes_count_neither_while_they_run_nor_when_they_stop(nodes):
    benched = _free_port()
    node = nodes(benched)
    other, stopping = nodes(_free_port()), nodes(_free_port())
    stopping.compute()  # processor time it takes away with it when it stops during the phase
    stopping.compute()
    started = CpuClock.now(benched)
    other.compute()
    stopping.stop()
    node.compute()
    figures = CpuClock.now(benched).since(started)

    assert 0.5 <= figures["cassandraCpuSeconds"] < 1.0


def test_a_benched_node_stopped_during_the_phase_leaves_no_negative_share(nodes):
    port = _free_port()
    node = nodes(port)
    node.compute()
    started = CpuClock.now(port)
    node.stop()
    figures = CpuClock.now(port).since(started)

    assert figures["cassandraCpuSeconds"] == 0
