"""The impact bench's figures (`bench impact`): latency percentiles of the client's operations per period, the traffic
over time, and the page's impact section with its targets, its history row and both figures."""

import json

from james_consistency_kit.bench.client import Record
from james_consistency_kit.bench.latency import between, over_time, per_kind, summary
from james_consistency_kit.bench.report import write_report


def test_the_p99_is_an_operation_s_own_latency_and_failures_are_counted_by_kind():
    records = [Record(1000.0 + i / 100, "readMessage", float(i + 1), "ok") for i in range(200)]
    records += [Record(1001.0, "add", 2500.0, "timeout"), Record(1001.5, "add", 30.0, "error")]
    figures = per_kind(records)
    # Nearest rank: of 200 reads taking 1..200 ms, the 99th percentile is the 198th.
    assert figures["readMessage"] == {
        "operations": 200,
        "p50Ms": 100.0,
        "p99Ms": 198.0,
        "maxMs": 200.0,
        "errors": 0,
        "timeouts": 0,
    }
    assert (figures["add"]["errors"], figures["add"]["timeouts"], figures["all"]["maxMs"]) == (1, 1, 2500.0)
    assert summary([])["p99Ms"] is None


def test_a_period_holds_the_operations_due_in_it_and_the_timeline_starts_at_the_first_period():
    timed = ((99.5, 0.5), (100.0, 1.0), (101.9, 2.5), (102.0, 3.0), (103.5, 4.5))
    records = [Record(due, "readCounters", latency, "timeout" if due == 103.5 else "ok") for due, latency in timed]
    assert [record.due for record in between(records, 100.0, 102.0)] == [100.0, 101.9]
    # Buckets of 2 s from the origin: the warm-up before it is left out.
    assert over_time(records, 100.0, 2.0) == [[0.0, 2, 1.0, 2.5, 2.5, 0], [2.0, 2, 3.0, 4.5, 4.5, 1]]


def impact_result(date: str = "2026-12-04T20:00Z") -> dict:
    """An impact bench's figures, in the bench's own keys, for a default night that met every target but the
    duration without traffic."""

    def latency(p99: float) -> dict:
        every = {"operations": 1000, "p50Ms": 3.0, "p99Ms": p99, "maxMs": p99 * 2, "errors": 0, "timeouts": 0}
        return {"all": every, "readMailbox": every, "add": every}

    def night(name: str, seconds: float, limit: float, adaptive: bool, start: float) -> dict:
        return {
            "name": name,
            "load": {
                "scanRowsPerSecond": limit,
                "adaptive": adaptive,
                "latencyTargetMs": 0.0,
                "rateFloorRowsPerSecond": 1000.0,
            },
            "seconds": seconds,
            "steps": {"check": seconds - 10, "repair": 6.0, "verify": 4.0},
            "stepTimes": {
                "check": [start, start + seconds - 10],
                "repair": [start + seconds - 10, start + seconds - 4],
                "verify": [start + seconds - 4, start + seconds],
            },
            "found": {"missing": 500, "outdated": 500, "orphan": 0},
            "remainingAfterVerify": 0,
            "loadReport": {
                "latencyTargetMs": 8.0,
                "heldBackSeconds": 12.0,
                "rowsPerSecond": 9000.0,
                "rate": [{"at": "2026-12-04T19:41:40+00:00", "rowsPerSecond": 9000.0}],
            },
        }

    def period(start: float, seconds: float, p99: float, night_figures: dict | None = None) -> dict:
        figures = {
            "startSecond": start,
            "seconds": seconds,
            "latency": latency(p99),
            "p99OverNoNight": p99 / 10,
            "machineCpu": {"busyCores": 1.5, "cassandraCores": 0.7, "cores": 2},
        }
        return {**figures, "night": night_figures} if night_figures else figures

    return {
        "target": "impact",
        "keyspace": "bench_impact_100000",
        "messages": 100_000,
        "inconsistencyRate": 0.01,
        "date": date,
        "traffic": {"opsPerSecond": 100.0, "operations": 30_000},
        "periods": {
            "noNight": period(0, 60, 10.0),
            "defaultNight": period(70, 40, 15.0, night("defaultNight", 40, 0.0, True, 70)),
            "unthrottledNight": period(120, 30, 42.0, night("unthrottledNight", 30, 0.0, False, 120)),
            "limit5000": period(160, 60, 12.0, night("limit5000", 60, 5000.0, False, 160)),
            "noNightAgain": period(230, 30, 11.0),
        },
        "tradeOff": [
            {
                "night": "defaultNight",
                "scanRowsPerSecond": None,
                "adaptive": True,
                "nightSeconds": 40,
                "p99OverNoNight": 1.5,
            },
            {
                "night": "unthrottledNight",
                "scanRowsPerSecond": None,
                "adaptive": False,
                "nightSeconds": 30,
                "p99OverNoNight": 4.2,
            },
            {
                "night": "limit5000",
                "scanRowsPerSecond": 5000.0,
                "adaptive": False,
                "nightSeconds": 60,
                "p99OverNoNight": 1.2,
                "p99OverNoNightDuringScan": 1.1,
            },
        ],
        "withoutTraffic": {"meanSeconds": {"default": 39.0, "unthrottled": 30.0}},
        "userWrites": {"logged": 9000, "undone": 0, "undoneSample": []},
        "timeline": {
            "origin": 1764877260.0,
            "bucketSeconds": 2.0,
            "buckets": [[0.0, 200, 3.0, 10.0, 20.0, 0], [70.0, 200, 3.0, 15.0, 30.0, 0]],
        },
        "ratios": {
            "defaultNightP99OverNoNight": 1.5,
            "unthrottledNightP99OverNoNight": 4.2,
            "defaultOverUnthrottledWithoutTraffic": 1.3,
            "defaultOverUnthrottledUnderTraffic": 1.33,
        },
        "targets": {
            "defaultNightP99WithinTwice": {"value": 1.5, "limit": 2.0, "met": True},
            "noFailureDuringDefaultNight": {"value": 0, "limit": 0, "met": True},
            "defaultNightWithoutTrafficWithin125": {"value": 1.3, "limit": 1.25, "met": False},
            "convergesUnderTraffic": {"value": 0, "limit": 0, "met": True},
            "noUserWriteUndone": {"value": 0, "limit": 0, "met": True},
        },
    }


def test_the_page_gives_the_impact_targets_periods_trade_off_and_both_figures(tmp_path):
    result = tmp_path / "impact-100000-20261204T2000Z.json"
    result.write_text(json.dumps(impact_result()))
    page, _ = write_report([result], tmp_path / "benchmarks.md")
    text = page.read_text()
    impact = text.split("## What a night costs James's users")[1].split("## History")[0]
    assert (
        "| a default night keeps the traffic's p99 within 2x its p99 without a night | 1.50x (unthrottled night: "
        "4.20x) | 2.00x | yes |" in impact
    )
    assert (
        "| without traffic, a default night takes at most 1.25x the unthrottled one | 1.30x (39.0 s / 30.0 s) "
        "| 1.25x | **no** |" in impact
    )
    assert "| night at 5,000 rows/s | 5,000 rows/s | 60.0 s | 1.20x | 1.10x |" in impact
    assert "| default night | none, adaptive | 40.0 s | 1.50x |" in impact
    assert "adaptive, canary target 8.0 ms, held back 12.0 s" in impact
    history = text.split("## History")[1]
    assert "impact at 100 ops/s: traffic p99 1.50x during a default night, 4.20x during an unthrottled one" in history
    for figure in ("impact-latency.png", "impact-trade-off.png"):
        assert (tmp_path / "benchmarks" / figure).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
