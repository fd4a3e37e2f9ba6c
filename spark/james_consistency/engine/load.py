"""A scan's load on the ring, applied and measured: the rate each batch of token ranges reads at (the limit, or the
adaptive mode's rate: engine/load_limits.py decides it), the canary read of James's keyspace that tells how James's
users fare meanwhile, and what the report and the metrics say of it (`load`: the rate over time, how long the night
was held back).

The canary reads what James reads for an IMAP or JMAP user opening a mailbox: one mailbox's messageIdTable rows by
uid range and its counters, at LOCAL_QUORUM as James does (QUORUM by default, one data center here), every
CANARY_INTERVAL seconds from a thread of the driver while the executors scan. A canary that cannot read (a keyspace
without those tables, a node gone) gives no reading: the rate stays as it is and the run goes on; a failure of the
scan itself is the scan's to report.

Whether James serves anyone meanwhile is counted, not guessed: every node's count of the reads and writes of James's
keyspace it coordinated (Cassandra's virtual tables system_views.coordinator_read_latency and _write_latency, from
4.0), less the canary's own; the scan's range reads are counted apart by Cassandra and the night writes nothing there
while it scans. Where the counts cannot be read (Cassandra 3.11, a node down), the ring is taken as one James serves.
"""

import logging
import math
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from james_consistency.cassandra.cql import CassandraSettings, close, connect
from james_consistency.engine.load_limits import AimdController, LoadLimits, derived_target_ms, quiet

log = logging.getLogger("james_consistency")

CANARY_INTERVAL = 0.1  # seconds between two canary reads while a batch runs: 10 light reads a second
BASELINE_READS = 20  # canary reads before the scan, for a derived target
CANARY_ROWS = 20  # messageIdTable rows a canary read asks for: a screenful of a mailbox, as an IMAP client lists
# Cassandra's counts of the requests each node coordinated, per table (single-partition reads, writes).
REQUEST_COUNTS = ("system_views.coordinator_read_latency", "system_views.coordinator_write_latency")
# The paced reader's pages: about a second of a task's share, within these bounds (a page per second per task keeps
# the load even; the JVM reader's unpaced page is 5000 rows).
MIN_PACED_PAGE, MAX_PAGE = 100, 5000


def p99(values: list[float]) -> float | None:
    """The 99th percentile by nearest rank (the largest of fewer than 100 values); None for no value."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(0.99 * len(ordered)) - 1)]


def page_size(rows_per_second_per_task: float) -> int:
    """The page a paced task asks for: about one second of its rate."""
    if not rows_per_second_per_task:
        return MAX_PAGE
    return int(min(MAX_PAGE, max(MIN_PACED_PAGE, rows_per_second_per_task)))


class Canary:
    """James's read of one mailbox, timed: its messageIdTable rows by uid, then its counters."""

    def __init__(self, settings: CassandraSettings, keyspace: str):
        self.settings, self.keyspace = settings, keyspace
        self.session = None
        self.reads: list = []
        self.samples: list[tuple[float, float]] = []  # (when, milliseconds)
        self.statements = 0  # the canary's own requests on the keyspace so far
        self.counts: list = []  # the statements that read the nodes' request counts (none: not readable)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def open(self) -> bool:
        """Ready to read (True), or no canary on this keyspace (logged once)."""
        from cassandra import ConsistencyLevel

        try:
            self.session = connect(self.settings)
            first_mailbox = f"SELECT mailboxid FROM {self.keyspace}.messageidtable LIMIT 1"
            found = self.session.execute(first_mailbox).one()
            mailbox = found.mailboxid if found is not None else None
            listing = self.session.prepare(
                f"SELECT uid, messageid FROM {self.keyspace}.messageidtable WHERE mailboxid = ? AND uid >= ? "
                f"LIMIT {CANARY_ROWS}"
            )
            counters = self.session.prepare(
                f"SELECT count, unseen FROM {self.keyspace}.mailboxcounters WHERE mailboxid = ?"
            )
        except Exception as error:  # noqa: BLE001 - the canary never stops a run
            log.warning("no canary read on %s (%s): the adaptive mode keeps its rate", self.keyspace, error)
            self.close()
            return False
        for statement in (listing, counters):
            statement.consistency_level = ConsistencyLevel.LOCAL_QUORUM
        self.reads = [(listing, (mailbox, 1)), (counters, (mailbox,))] if mailbox else []
        if not self.reads:  # an empty keyspace: the read that finds a mailbox is the canary
            self.reads = [(self.session.prepare(first_mailbox), ())]
        try:
            self.counts = [
                self.session.prepare(f"SELECT count FROM {table} WHERE keyspace_name = ? ALLOW FILTERING")
                for table in REQUEST_COUNTS
            ]
        except Exception as error:  # noqa: BLE001 - a Cassandra without them: James's users are not counted
            log.info("James's requests cannot be counted on this ring (%s): the canary's latency decides", error)
        return True

    def read(self) -> float | None:
        """One canary read's latency in milliseconds (None when it failed)."""
        started = time.perf_counter()
        try:
            for statement, values in self.reads:
                self.statements += 1
                self.session.execute(statement, values, timeout=10)
        except Exception as error:  # noqa: BLE001 - a failed read is no reading
            log.debug("canary read failed: %s", error)
            return None
        milliseconds = (time.perf_counter() - started) * 1000
        self.samples.append((time.time(), milliseconds))
        return milliseconds

    def requests(self) -> int | None:
        """The reads and writes of the keyspace every node coordinated since it started; None when a count cannot be
        read (no such table, a node down)."""
        if not self.counts:
            return None
        total = 0
        try:
            for host in self.session.cluster.metadata.all_hosts():
                if not host.is_up:
                    return None  # its requests would be missing from the sum
                for statement in self.counts:
                    total += sum(row.count for row in self.session.execute(statement, (self.keyspace,), host=host))
        except Exception as error:  # noqa: BLE001 - no count is no reading
            log.debug("James's requests not counted: %s", error)
            return None
        return total

    def baseline(self, count: int = BASELINE_READS) -> float | None:
        """The canary's p99 over `count` reads, before the scan starts."""
        readings = []
        for _ in range(count):
            reading = self.read()
            if reading is not None:
                readings.append(reading)
            time.sleep(CANARY_INTERVAL / 2)
        return p99(readings)

    def since(self, moment: float) -> list[float]:
        return [milliseconds for when, milliseconds in list(self.samples) if when >= moment]

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="james-consistency-canary", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(CANARY_INTERVAL):
            self.read()
            if len(self.samples) > 10_000:  # a long night: only recent readings matter
                del self.samples[:5_000]

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=15)
        if self.session is not None:
            close(self.session)
            self.session = None


@dataclass
class ScanLoad:
    """The load of one run's scan: the rate each batch reads at, what each batch measured, and the report's `load`."""

    limits: LoadLimits
    settings: CassandraSettings
    keyspace: str
    points: list[dict] = field(default_factory=list)
    rows_read: int = 0
    scan_seconds: float = 0.0
    held_back_seconds: float = 0.0
    target_ms: float | None = None
    baseline_ms: float | None = None
    # Requests a second others than the night asked James's keyspace before the scan (None: not known).
    others_at_start: float | None = None
    controller: AimdController | None = None
    canary: Canary | None = None
    # When the requests were last counted: (epoch seconds, the nodes' count, the canary's own count).
    _counted: tuple[float, int | None, int] | None = None

    def start(self) -> None:
        """Before the first batch: the adaptive mode opens its canary, reads it a while (its baseline, and whether
        James serves anyone), derives its target if need be, and starts reading the canary in the background."""
        if not self.limits.adaptive or self.controller is not None:
            return
        self.canary = Canary(self.settings, self.keyspace)
        if self.canary.open():
            self._others()  # counting starts
            baseline = self.canary.baseline()
            self.others_at_start = self._others()
            self.baseline_ms = baseline
            self.canary.start()
        else:
            self.canary = None
        self.target_ms = self.limits.latency_target_ms or (
            derived_target_ms(self.baseline_ms) if self.baseline_ms is not None else None
        )
        self.controller = AimdController(
            self.limits.rows_per_second, self.limits.floor, self.target_ms or math.inf, self.others_at_start
        )
        log.info(
            "adaptive scan rate: from %s rows/s (limit %s, floor %g), canary target %s ms (baseline p99 %s ms), "
            "James's requests before the scan %s a second",
            f"{self.rate:g}" if self.rate else "unlimited",
            f"{self.limits.rows_per_second:g}" if self.limits.rows_per_second else "none",
            self.limits.floor,
            f"{self.target_ms:.2f}" if self.target_ms else "none",
            f"{self.baseline_ms:.2f}" if self.baseline_ms is not None else "none",
            f"{self.others_at_start:.1f}" if self.others_at_start is not None else "not counted",
        )

    def _others(self) -> float | None:
        """The requests a second others than the night asked James's keyspace since the last count (None: not
        known); counts again from now."""
        if self.canary is None:
            return None
        now, requests, own = time.time(), self.canary.requests(), self.canary.statements
        before, self._counted = self._counted, (now, requests, own)
        if before is None or requests is None or before[1] is None or requests < before[1]:
            return None  # not counted, or a node restarted meanwhile
        others = requests - before[1] - (own - before[2])
        return max(others, 0) / max(now - before[0], 1e-6)

    @property
    def rate(self) -> float:
        """Rows a second across the cluster the next batch reads at (0: unlimited)."""
        return self.controller.rate if self.controller is not None else self.limits.rows_per_second

    def batch_ranges(self, parallelism: int) -> int:
        """The token ranges of a table a batch reads: one per core while the adaptive mode feels its way on a ring
        James serves (a reading more often), two otherwise (fewer Spark jobs)."""
        careful = self.controller is not None and not quiet(self.others_at_start)
        return parallelism if careful else 2 * parallelism

    def per_task(self, tasks: int) -> float:
        """A task's share of the rate when `tasks` read at once."""
        return self.rate / max(tasks, 1) if self.rate else 0.0

    def observe(self, started: float, rows: int, own_latency_ms: float | None) -> None:
        """A batch read `rows` since `started` (epoch seconds); its own page requests took `own_latency_ms` on
        average. The adaptive mode sets the next batch's rate from the canary's p99 meanwhile and from whether James
        served anyone."""
        seconds = max(time.time() - started, 1e-6)
        measured = rows / seconds
        in_force = self.rate
        canary_ms = others = None
        if self.canary is not None:
            readings = self.canary.since(started)
            if not readings:  # a batch shorter than the canary's interval: read it once now
                reading = self.canary.read()
                readings = [reading] if reading is not None else []
            canary_ms = p99(readings)
            others = self._others()
        if self.controller is not None:
            if self.controller.held_back:
                self.held_back_seconds += seconds
            self.controller.observe(canary_ms, measured, others)
        self.rows_read += rows
        self.scan_seconds += seconds
        self.points.append(
            {
                "at": datetime.fromtimestamp(started, UTC).isoformat(),
                "rowsPerSecond": round(measured, 1),
                "limitRowsPerSecond": round(in_force, 1) if in_force else None,
                "rows": rows,
                "seconds": round(seconds, 3),
                "latencyMs": _rounded(own_latency_ms),
                "canaryLatencyMs": _rounded(canary_ms),
                "jamesRequestsPerSecond": _rounded(others),
            }
        )

    def stop(self) -> None:
        if self.canary is not None:
            self.canary.close()
            self.canary = None

    def as_report(self) -> dict:
        """The report's `load` section."""
        measured = self.rows_read / self.scan_seconds if self.scan_seconds else None
        return {
            "limitRowsPerSecond": self.limits.rows_per_second,
            "adaptive": self.limits.adaptive,
            "latencyTargetMs": _rounded(self.target_ms),
            "latencyTargetDerived": self.limits.adaptive and not self.limits.latency_target_ms,
            "canaryBaselineMs": _rounded(self.baseline_ms),
            "jamesRequestsPerSecondBefore": _rounded(self.others_at_start),
            "floorRowsPerSecond": self.limits.floor,
            "rowsRead": self.rows_read,
            "scanSeconds": round(self.scan_seconds, 3),
            "rowsPerSecond": round(measured, 1) if measured is not None else None,
            "heldBackSeconds": round(self.held_back_seconds, 3),
            "rate": self.points,
        }


def _rounded(value: float | None) -> float | None:
    return round(value, 3) if value is not None and math.isfinite(value) else None
