"""`bench impact` at its smallest: the client's traffic is measured per period (no night, a default night, an
unthrottled one, a night at a fixed scan limit), every night under traffic converges, no write of the client is
undone, the targets are judged from those figures, and the bench page shows them with both figures."""

import uuid

import pytest
from james_consistency.runtime.paths import LOCAL_DIR
from james_consistency_kit.bench import bench_keyspace, write_figures
from james_consistency_kit.bench.impact import bench_impact
from james_consistency_kit.bench.report import write_report

pytestmark = pytest.mark.end_to_end

MESSAGES = 300
LIMIT = 1500


@pytest.fixture
def prefix(cql):
    prefix = f"bench_i_{uuid.uuid4().hex[:8]}"
    yield prefix
    keyspace = bench_keyspace(MESSAGES, prefix)
    cql.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)
    (LOCAL_DIR / "bench" / f"{keyspace}.json").unlink(missing_ok=True)


def test_bench_impact_measures_the_traffic_per_night_and_undoes_no_user_write(
    cassandra_settings, spark, prefix, tmp_path
):
    figures = bench_impact(
        spark,
        cassandra_settings,
        messages=MESSAGES,
        inconsistency_rate=0.05,
        ops_per_second=40,
        quiet_seconds=4,
        settle_seconds=0.5,
        scan_limits=(LIMIT,),
        repeats_without_traffic=1,
        keyspace_prefix=prefix,
        recheck_delay_seconds=0,
        warm_up_seconds=2,
    )
    periods = figures["periods"]
    assert list(periods) == ["noNight", "defaultNight", "unthrottledNight", f"limit{LIMIT}", "noNightAgain"]
    for name, period in periods.items():
        every = period["latency"]["all"]
        # Open loop at 40 a second: each period holds the operations due in it, reads and writes alike.
        assert every["operations"] >= 0.7 * 40 * period["seconds"], name
        assert {"readMailbox", "readMessage", "readCounters", "add", "flags"} <= set(period["latency"]), name
        assert 0 < every["p50Ms"] <= every["p99Ms"] <= every["maxMs"], name
    # A scheduled night's defaults: its scan adapts, the others read at their fixed limit or none.
    loads = {name: period["night"]["load"] for name, period in periods.items() if "night" in period}
    assert loads["defaultNight"]["adaptive"] is True
    assert (loads["unthrottledNight"]["adaptive"], loads["unthrottledNight"]["scanRowsPerSecond"]) == (False, 0)
    assert loads[f"limit{LIMIT}"]["scanRowsPerSecond"] == LIMIT
    assert periods["defaultNight"]["night"]["loadReport"]["adaptive"] is True
    for name in loads:
        night = periods[name]["night"]
        # Each night faced what was broken before it and left nothing, the traffic writing all along.
        assert "failedGate" not in night, (name, night["failedGate"])
        assert sum(night["found"].values()) > 0, name
        assert night["remainingAfterVerify"] == 0, (name, night.get("remainingSample"))
        assert list(night["stepTimes"]) == ["check", "repair", "verify"]
        # The traffic while the scan itself read, inside the check, is measured apart (what the limit governs).
        check_started, check_ended = night["stepTimes"]["check"]
        assert check_started - 0.1 <= night["scanTimes"][0] < night["scanTimes"][1] <= check_ended + 0.1, name
        assert periods[name]["duringScan"]["operations"] > 0, name
    assert [point["night"] for point in figures["tradeOff"]] == list(loads)
    assert all(point["p99OverNoNightDuringScan"] for point in figures["tradeOff"])
    quiet_p99 = periods["noNight"]["latency"]["all"]["p99Ms"]
    default_p99 = periods["defaultNight"]["latency"]["all"]["p99Ms"]
    assert figures["ratios"]["defaultNightP99OverNoNight"] == round(default_p99 / quiet_p99, 2)
    alone = figures["withoutTraffic"]["meanSeconds"]
    assert figures["ratios"]["defaultOverUnthrottledWithoutTraffic"] == round(
        alone["default"] / alone["unthrottled"], 2
    )
    # Every write the client made was read back against the tables: none was undone by a night.
    assert figures["userWrites"]["logged"] > 20
    assert figures["userWrites"]["undone"] == 0, figures["userWrites"]["undoneSample"]
    assert figures["targets"]["convergesUnderTraffic"]["met"] is True
    assert figures["targets"]["noUserWriteUndone"]["met"] is True

    page, _ = write_report([write_figures(figures, str(tmp_path / "impact.json"))], tmp_path / "benchmarks.md")
    impact = page.read_text().split("## What a night costs James's users")[1]
    assert f"| {figures['periods']['noNight']['latency']['all']['p99Ms']:,.1f} ms |" in impact
    assert "| no user write is undone | 0 of" in impact
    for figure in ("impact-latency.png", "impact-trade-off.png"):
        assert (tmp_path / "benchmarks" / figure).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
