"""What the bench measures while a phase runs: its wall time, the machine's processor time (all of it and the local
Cassandra nodes' share) and the driver's JVM heap."""

import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from james_consistency_kit.cassandra_node import CASSANDRA_MARKER
from james_consistency_kit.processes import runs

log = logging.getLogger("james_consistency")


@dataclass
class MemorySampler:
    """The JVM heap while a phase runs: its peak (sampled every 200 ms; in local mode the executors' tasks share the
    driver's heap, and garbage waits for the collector) and what stays after it (after a full collection: what the
    driver keeps)."""

    spark: object
    peak_heap_bytes: int = 0
    retained_heap_bytes: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)

    def _used(self) -> int:
        return self.spark._jvm.java.lang.management.ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed()

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak_heap_bytes = max(self.peak_heap_bytes, self._used())
            self._stop.wait(0.2)

    def __enter__(self):
        self.spark._jvm.java.lang.System.gc()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.spark._jvm.java.lang.System.gc()
        self.retained_heap_bytes = self._used()


@dataclass(frozen=True)
class CpuClock:
    """The machine's processor time so far (Linux /proc): all of it, and that of each local Cassandra JVM serving CQL
    on `port` (the benched cluster's nodes; another local cluster's, e.g. a test ring, are not its share)."""

    wall: float
    busy: float
    cassandra: dict[int, float]

    @staticmethod
    def now(port: int) -> "CpuClock":
        return CpuClock(time.perf_counter(), _machine_busy_seconds(), _cassandra_seconds(port))

    def since(self, start: "CpuClock") -> dict:
        """Between two readings: the processor seconds used, and how many cores that kept busy on average. A node
        started or stopped between the readings is left out of Cassandra's share: only part of its time is known."""
        wall = max(self.wall - start.wall, 1e-9)
        busy = self.busy - start.busy
        cassandra = sum(
            seconds - start.cassandra[pid] for pid, seconds in self.cassandra.items() if pid in start.cassandra
        )
        return {
            "cpuSeconds": round(busy, 1),
            "busyCores": round(busy / wall, 2),
            "cassandraCpuSeconds": round(cassandra, 1),
            "cassandraCores": round(cassandra / wall, 2),
            "cores": os.cpu_count(),
        }


def _machine_busy_seconds() -> float:
    try:
        fields = [int(value) for value in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except OSError:
        return 0.0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle and iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def local_cassandra_processes() -> list[Path]:
    """The /proc folders of the live processes whose command line runs CassandraDaemon (none where /proc is not)."""
    return [process for process in Path("/proc").glob("[0-9]*") if runs(int(process.name), CASSANDRA_MARKER)]


def _serves(process: Path, port: int) -> bool:
    try:
        connections = psutil.Process(int(process.name)).net_connections(kind="tcp")
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False
    return any(c.status == psutil.CONN_LISTEN and c.laddr.port == port for c in connections)


def _cassandra_seconds(port: int) -> dict[int, float]:
    """User and system time of each local Cassandra JVM listening on `port`, by pid."""
    seconds = {}
    for process in local_cassandra_processes():
        if not _serves(process, port):
            continue
        try:
            fields = (process / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # it ended since
            continue
        seconds[int(process.name)] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
    return seconds


@dataclass(frozen=True)
class Timed:
    """One timed phase: its wall time, the machine's processor figures (CpuClock.since), the driver's heap, and what
    the phase returned."""

    seconds: float
    cpu: dict
    peak_heap_mib: int
    retained_heap_mib: int
    result: object

    def per_second(self, rows: int) -> int | None:
        return round(rows / self.seconds) if self.seconds else None


def timed(name: str, spark, port: int, action) -> Timed:
    """Run `action()` as the phase `name`, measured (Cassandra's share: the local nodes serving CQL on `port`)."""
    with MemorySampler(spark) as memory:
        started = CpuClock.now(port)
        result = action()
        finished = CpuClock.now(port)
    seconds, cpu = finished.wall - started.wall, finished.since(started)
    log.info("bench %s: %.1fs, %.2f cores busy", name, seconds, cpu["busyCores"])
    return Timed(
        seconds=round(seconds, 3),
        cpu=cpu,
        peak_heap_mib=round(memory.peak_heap_bytes / 2**20),
        retained_heap_mib=round(memory.retained_heap_bytes / 2**20),
        result=result,
    )


def driver_memory(phases: dict[str, Timed]) -> dict:
    """The driver's JVM heap per timed phase: peak and retained."""
    return {
        "driverPeakJvmHeapMiB": {name: phase.peak_heap_mib for name, phase in phases.items()},
        "driverRetainedJvmHeapMiB": {name: phase.retained_heap_mib for name, phase in phases.items()},
    }
