"""How hard a run's scan may read the ring, and the rule that adapts its rate to the ring's latency: pure values and
decisions, no I/O (engine/load.py measures and applies them). A light module: the command line, the job's argument
parsing and the Airflow operator check a run's limits through it before anything starts.

The limit is per cluster, in rows a second (both tables of a scan together); each Spark task reading at once gets
its share. The re-check of a night under these limits keeps to the rate its scan ended at, in re-checks a second
(`recheck_rate`).

The adaptive mode asks first whether James serves anyone: a ring on which nobody but the night reads or writes
James's keyspace (Cassandra's own request counts) is read at the limit, or at full speed without one, whatever the
canary says, since the night's latency slows no one down there. On a ring James serves, it starts carefully (a
quarter of the limit, or a few times the floor) and, after each batch of token ranges, compares the latency a
canary read of James's keyspace had meanwhile with the target: above it, the rate is halved; within it, the rate
doubles at first (slow start, until the canary first goes above the target), then goes up by a tenth of the fastest
rate read so far (additive increase, multiplicative decrease: the rule TCP uses to share a link, which settles near
the highest rate the ring serves within the target), never below the floor. A rate the scan did not come near is no
limit any more: the night reads at its own pace (the limit, or none).
"""

import math
from dataclasses import dataclass, field

from james_consistency.errors import OperatorError
from james_consistency.settings import DEFAULT_RATE_FLOOR_ROWS_PER_SECOND, setting

# A latency target given as this word (or 0 in the settings and the trigger form) is derived when the night starts.
DERIVED = "derived"
# The derived target: the canary's p99 before the scan plus this many milliseconds, or twice that p99 if more. A
# canary's few milliseconds double with any load at all (on 2 cores, at a twentieth of a full scan's speed) while
# an IMAP or JMAP user notices tens of milliseconds more, not a few.
DERIVED_TARGET_MARGIN_MS = 20.0
DERIVED_TARGET_MULTIPLE = 2.0
# Fewer requests a second than this on James's keyspace from others than the night: a ring nobody uses (a few IMAP
# clients ask more; the count of the night's own canary reads is taken off, give or take a couple).
QUIET_REQUESTS_PER_SECOND = 10.0
# The first rate on a ring James serves: this share of the limit, or without one this many times the floor.
START_SHARE = 0.25
START_FLOOR_MULTIPLE = 4.0
# Multiplicative decrease, and the additive increase as a share of the fastest rate read so far.
DECREASE = 0.5
INCREASE_SHARE = 0.1
# A batch that read slower than this share of the rate in force was not held back by it.
BOUND_SHARE = 2 / 3
# A re-check of one candidate costs the ring about what the scan pays for this many rows: a few single-partition
# reads (imapUidTable's at SERIAL, a Paxos round, when James writes it with lightweight transactions) against rows
# read thousands a page.
ROWS_PER_RECHECK = 40.0


def _number(text: str, what: str) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise OperatorError(f"{what} {text!r} is not a number") from None
    if not math.isfinite(value):
        raise OperatorError(f"{what} {text!r} is not a finite number")
    return value


def rows_per_second(text: str, what: str = "scan rows per second") -> float:
    """A rate in rows a second from the command line: a number, 0 or more."""
    value = _number(text, what)
    if value < 0:
        raise OperatorError(f"{what} {value:g} is negative: give 0 (no limit) or more")
    return value


def latency_target_ms(text: str) -> float:
    """A latency target from the command line: `derived` (0 inside: derived when the night starts) or a number of
    milliseconds above 0."""
    if str(text).strip().lower() == DERIVED:
        return 0.0
    value = _number(text, "latency target (ms)")
    if value <= 0:
        raise OperatorError(
            f"latency target {value:g} ms is no latency: give a number of milliseconds above 0, or '{DERIVED}'"
        )
    return value


@dataclass(frozen=True)
class LoadLimits:
    """A run's scan limits: `rows_per_second` across the cluster (0: none), `adaptive`, the canary's
    `latency_target_ms` (0: derived when the night starts), and the `floor` the adaptive mode never goes below."""

    rows_per_second: float = 0.0
    adaptive: bool = False
    latency_target_ms: float = 0.0
    floor: float = DEFAULT_RATE_FLOOR_ROWS_PER_SECOND

    @classmethod
    def from_settings(cls, adaptive: bool = False, **given) -> "LoadLimits":
        """The deployment's limits (JAMES_SCAN_ROWS_PER_SECOND, JAMES_LATENCY_TARGET_MS,
        JAMES_RATE_FLOOR_ROWS_PER_SECOND), with what is `given` (not None) instead."""
        values = {
            "rows_per_second": setting("JAMES_SCAN_ROWS_PER_SECOND"),
            "latency_target_ms": setting("JAMES_LATENCY_TARGET_MS"),
            "floor": setting("JAMES_RATE_FLOOR_ROWS_PER_SECOND"),
        }
        values.update({name: value for name, value in given.items() if value is not None})
        return cls(adaptive=adaptive, **values)

    def validate(self) -> "LoadLimits":
        """The limits themselves, or an OperatorError saying in one line which one makes no sense."""
        for name, value in (
            ("scan rows per second", self.rows_per_second),
            ("rate floor", self.floor),
            ("latency target (ms)", self.latency_target_ms),
        ):
            if not isinstance(value, int | float) or not math.isfinite(value):
                raise OperatorError(f"{name} {value!r} is not a number")
            if value < 0:
                raise OperatorError(f"{name} {value:g} is negative")
        if self.adaptive and self.floor <= 0:
            raise OperatorError("rate floor 0: the adaptive mode needs a floor above 0, so that a night progresses")
        if self.rows_per_second and self.rows_per_second < self.floor:
            raise OperatorError(
                f"scan rows per second {self.rows_per_second:g} is below the rate floor {self.floor:g}: "
                "raise the limit, or lower the floor"
            )
        return self

    @property
    def limited(self) -> bool:
        """Whether the scan's reads are paced at all (a limit, or the adaptive mode's own rate)."""
        return bool(self.rows_per_second) or self.adaptive

    def as_arguments(self) -> list[str]:
        """The job's command-line arguments for these limits (what the CLI and the DAG tasks hand spark-submit)."""
        target = f"{self.latency_target_ms:g}" if self.latency_target_ms else DERIVED
        return [
            *("--scan-rows-per-second", f"{self.rows_per_second:g}"),
            "--adaptive" if self.adaptive else "--no-adaptive",
            *("--latency-target-ms", target),
            *("--rate-floor", f"{self.floor:g}"),
        ]


def derived_target_ms(baseline_p99_ms: float) -> float:
    """The latency target a night derives from the canary's p99 before its scan."""
    return max(DERIVED_TARGET_MULTIPLE * baseline_p99_ms, baseline_p99_ms + DERIVED_TARGET_MARGIN_MS)


def quiet(others_per_second: float | None) -> bool:
    """Whether a ring on which others than the night asked James's keyspace `others_per_second` requests a second
    serves nobody (None: not known, so it may)."""
    return others_per_second is not None and others_per_second < QUIET_REQUESTS_PER_SECOND


def recheck_rate(messages_per_second: float, limits: LoadLimits, scan_rate: float | None) -> float:
    """Candidates a second a run's re-checks may take across the cluster (0: unthrottled): the rate given
    (--messages-per-second); else, under load limits (a night's), the rate its scan ended at (`scan_rate`: the
    adaptive mode's last rate, or the limit; 0: unlimited; None: not known, the limit) in re-checks; else none. A
    manual run without limits is not slowed down."""
    if messages_per_second:
        return messages_per_second
    if not limits.limited:
        return 0.0
    rate = limits.rows_per_second if scan_rate is None else scan_rate
    return rate / ROWS_PER_RECHECK if rate else 0.0


@dataclass
class AimdController:
    """The adaptive mode's rule: the rate in force (`rate`, rows a second across the cluster; 0 while unlimited)
    from what was observed after each batch. `others_at_start`: the requests a second others than the night asked
    James's keyspace before the scan (None: not known); a ring nobody uses starts at the limit, any other carefully."""

    limit: float
    floor: float
    target_ms: float
    others_at_start: float | None = None
    rate: float = field(init=False)
    fastest: float = field(default=0.0, init=False)
    # Doubling while within target, until the canary first goes above it.
    slow_start: bool = field(default=True, init=False)

    def __post_init__(self):
        self.rate = self.limit if quiet(self.others_at_start) else self.careful_start

    @property
    def careful_start(self) -> float:
        """The first rate on a ring James serves: a share of the limit, or a few times the floor without one."""
        start = self.limit * START_SHARE if self.limit else self.floor * START_FLOOR_MULTIPLE
        start = max(self.floor, start)
        return min(self.limit, start) if self.limit else start

    @property
    def held_back(self) -> bool:
        """Whether the rate in force is below what the night would read at without the adaptive mode."""
        return bool(self.rate) and (not self.limit or self.rate < self.limit)

    def observe(
        self, latency_ms: float | None, measured_rows_per_second: float, others_per_second: float | None = None
    ) -> float:
        """The rate for the next batch, given the canary's latency during the last one (None: no reading, the rate
        stays), the rate it was read at, and the requests a second others than the night asked James's keyspace
        meanwhile (None: not known)."""
        self.fastest = max(self.fastest, measured_rows_per_second)
        if quiet(others_per_second):  # nobody to slow down: the night's own latency is no one's
            self.rate = self.limit
            return self.rate
        if latency_ms is None:
            return self.rate
        if latency_ms > self.target_ms:
            current = self.rate or measured_rows_per_second or self.floor
            self.rate = max(self.floor, current * DECREASE)
            self.slow_start = False
        elif self.held_back:
            self.rate = self._raised(measured_rows_per_second)
        return self.rate

    def _raised(self, measured: float) -> float:
        if measured < self.rate * BOUND_SHARE:  # the rate did not hold the batch back: the ring's own pace did
            return self.limit
        if self.slow_start:
            raised = self.rate * 2
        else:
            raised = self.rate + max(self.floor, self.fastest * INCREASE_SHARE)
        return self.limit if self.limit and raised >= self.limit else raised
