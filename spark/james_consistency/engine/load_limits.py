"""How hard a run's scan may read the ring, and the rule that adapts its rate to the ring's latency: pure values and
decisions, no I/O (engine/load.py measures and applies them). A light module: the command line, the job's argument
parsing and the Airflow operator check a run's limits through it before anything starts.

The limit is per cluster, in rows a second (both tables of a scan together); each Spark task reading at once gets
its share. The adaptive mode starts at the limit and, after each batch of token ranges, compares the latency a
canary read of James's keyspace had meanwhile with the target: above it, the rate is halved; at or below it, the
rate goes up again by a tenth of its ceiling (additive increase, multiplicative decrease: the rule TCP uses to share
a link, which settles near the highest rate the ring serves within the target), never below the floor.
"""

import math
from dataclasses import dataclass, field

from james_consistency.errors import OperatorError
from james_consistency.settings import DEFAULT_RATE_FLOOR_ROWS_PER_SECOND, setting

# A latency target given as this word (or 0 in the settings and the trigger form) is derived when the night starts.
DERIVED = "derived"
# The derived target: this many times the canary's p99 before the scan, at least MIN_DERIVED_TARGET_MS (below it, a
# driver's own timing noise would hold the night back on a ring that is not busy at all).
DERIVED_TARGET_MULTIPLE = 2.0
MIN_DERIVED_TARGET_MS = 2.0
# Multiplicative decrease, and the additive increase as a share of the ceiling.
DECREASE = 0.5
INCREASE_SHARE = 0.1


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
    return max(DERIVED_TARGET_MULTIPLE * baseline_p99_ms, MIN_DERIVED_TARGET_MS)


@dataclass
class AimdController:
    """The adaptive mode's rule: the rate in force (`rate`, rows a second across the cluster; 0 while unlimited)
    from the latency observed after each batch. Without a limit its ceiling is the fastest rate measured so far."""

    limit: float
    floor: float
    target_ms: float
    rate: float = field(init=False)
    fastest: float = field(default=0.0, init=False)

    def __post_init__(self):
        self.rate = self.limit

    @property
    def ceiling(self) -> float:
        return self.limit or self.fastest

    @property
    def held_back(self) -> bool:
        """Whether the rate in force is below what the night would read at without the adaptive mode."""
        return bool(self.rate) and (not self.limit or self.rate < self.limit)

    def observe(self, latency_ms: float | None, measured_rows_per_second: float) -> float:
        """The rate for the next batch, given the latency observed during the last one (None: no reading, the rate
        stays) and the rate it was read at."""
        self.fastest = max(self.fastest, measured_rows_per_second)
        if latency_ms is None:
            return self.rate
        if latency_ms > self.target_ms:
            current = self.rate or measured_rows_per_second or self.floor
            self.rate = max(self.floor, current * DECREASE)
        elif self.held_back:
            raised = self.rate + max(self.floor, self.ceiling * INCREASE_SHARE)
            self.rate = self.limit if raised >= self.ceiling else raised
        return self.rate
