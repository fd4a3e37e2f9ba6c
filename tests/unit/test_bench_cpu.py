"""The bench's processor figures: what a phase kept busy, and the share of the local Cassandra nodes in it."""

import subprocess
import sys
import time

from james_consistency_kit.bench import CpuClock


def _burn(seconds: float) -> None:
    code = f"import time\nend = time.process_time() + {seconds}\nwhile time.process_time() < end: pass"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_phase_that_computes_keeps_a_core_busy():
    started = CpuClock.now()
    _burn(0.6)
    figures = CpuClock.now().since(started)

    assert figures["cpuSeconds"] >= 0.5
    # At most every core, give or take a clock tick between the two readings of a short phase.
    assert 0.5 <= figures["busyCores"] <= figures["cores"] + 0.1


def test_the_time_of_a_cassandra_daemon_process_is_counted_as_cassandras():
    marker = "org.apache.cassandra.service.CassandraDaemon"
    code = (
        "import sys, time\n"
        "sys.stdin.readline()\n"
        "end = time.process_time() + 0.6\n"
        "while time.process_time() < end: pass\n"
        "print('done', flush=True)\n"
        "sys.stdin.readline()"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", code, marker], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        time.sleep(0.3)  # its start-up: before the first reading
        started = CpuClock.now()
        process.stdin.write("go\n")
        process.stdin.flush()
        assert process.stdout.readline().strip() == "done"
        figures = CpuClock.now().since(started)
    finally:
        process.kill()
        process.wait()

    assert figures["cassandraCpuSeconds"] >= 0.5
    assert figures["cassandraCores"] > 0
