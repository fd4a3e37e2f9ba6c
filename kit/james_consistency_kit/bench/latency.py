"""The impact bench's figures of the client's operations: latency percentiles per kind of operation over a period, and
the traffic's latency over time (the page's plot is drawn from it)."""

import math
from collections.abc import Iterable

from james_consistency_kit.bench.client import READS, WRITES, Record

ALL = "all"


def percentile(sorted_values: list[float], share: float) -> float | None:
    """The nearest-rank percentile (a latency some operation really had), None without values."""
    if not sorted_values:
        return None
    return sorted_values[max(0, math.ceil(share * len(sorted_values)) - 1)]


def summary(records: Iterable[Record]) -> dict:
    """Operations, p50, p99 and max latency (ms), errors and timeouts of `records`."""
    records = list(records)
    latencies = sorted(record.latency_ms for record in records)
    return {
        "operations": len(records),
        "p50Ms": percentile(latencies, 0.50),
        "p99Ms": percentile(latencies, 0.99),
        "maxMs": latencies[-1] if latencies else None,
        "errors": sum(record.outcome == "error" for record in records),
        "timeouts": sum(record.outcome == "timeout" for record in records),
    }


def per_kind(records: list[Record]) -> dict:
    """The summary of every operation, then of each kind that ran."""
    figures = {ALL: summary(records)}
    for kind in (*READS, *WRITES):
        of_kind = [record for record in records if record.kind == kind]
        if of_kind:
            figures[kind] = summary(of_kind)
    return figures


def between(records: list[Record], started: float, ended: float) -> list[Record]:
    """The operations due in [started, ended) (epoch seconds)."""
    return [record for record in records if started <= record.due < ended]


def ratio(during: dict, without: dict, figure: str = "p99Ms") -> float | None:
    """A figure of a period over the same figure without a night."""
    if not during.get(figure) or not without.get(figure):
        return None
    return round(during[figure] / without[figure], 2)


def over_time(records: list[Record], origin: float, bucket_seconds: float) -> list[list]:
    """From `origin` on, bucket by bucket: [the bucket's start (seconds since `origin`), operations, p50, p99, max
    (ms), failures] of the operations due in it."""
    buckets: dict[int, list[Record]] = {}
    for record in records:
        if record.due >= origin:
            buckets.setdefault(int((record.due - origin) // bucket_seconds), []).append(record)
    rows = []
    for bucket in sorted(buckets):
        latencies = sorted(record.latency_ms for record in buckets[bucket])
        failures = sum(record.outcome != "ok" for record in buckets[bucket])
        start = round(bucket * bucket_seconds, 1)
        rows.append(
            [start, len(latencies), percentile(latencies, 0.5), percentile(latencies, 0.99), latencies[-1], failures]
        )
    return rows
