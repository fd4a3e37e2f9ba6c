"""`bench messages` and `bench counters` against James 3.8.1's own tasks, at a tiny size: the figures a reader of
the bench relies on are there, James's report after our repair adds nothing, and the bench page renders them."""

import uuid

import pytest
from james_consistency.runtime.paths import LOCAL_DIR
from james_consistency_kit import james_harness
from james_consistency_kit.bench import bench_keyspace, bench_messages, bench_projection, write_figures
from james_consistency_kit.bench.report import write_report

pytestmark = [
    pytest.mark.end_to_end,
    pytest.mark.skipif(not james_harness.is_built("3.8.1"), reason="the James 3.8.1 harness is not built (make setup)"),
]


@pytest.fixture
def bench_prefix(cql):
    prefix = f"bench_t_{uuid.uuid4().hex[:8]}"
    yield prefix
    for messages in (400, 200):
        keyspace = bench_keyspace(messages, prefix)
        cql.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)
        (LOCAL_DIR / "bench" / f"{keyspace}.json").unlink(missing_ok=True)


def test_bench_messages_runs_james_unthrottled_and_at_its_default_rate(
    cassandra_settings, spark, bench_prefix, tmp_path
):
    figures = bench_messages(
        spark,
        cassandra_settings,
        messages=400,
        inconsistency_rate=0.05,
        reference_sample=100,
        seed=7,
        james_sample=200,
        keyspace_prefix=bench_prefix,
    )
    james = figures["jamesSolveMessageInconsistencies"]
    assert james["unthrottled"]["result"] == "COMPLETED"
    # The benched keyspace is larger than the sample: the default rate ran on the sample keyspace only.
    assert james["defaultRate"]["keyspace"] == bench_keyspace(200, bench_prefix)
    assert james["defaultRate"]["processedImapUidEntries"] > 150
    # Both passes are throttled at 100 messages/s: about 50 truth rows/s, never more than 100.
    assert 0 < james["defaultRate"]["truthRowsPerSecond"] <= 100
    assert james["jamesAfterOurRepair"] == {
        "addedMessageIdEntries": 0,
        "updatedMessageIdEntries": 0,
        "removedMessageIdEntries": 0,
        "addsNothing": True,
    }
    assert figures["ratios"]["repairOverJamesUnthrottledThroughput"] > 0
    assert figures["ratios"]["repairOverJamesDefaultRateThroughput"] > 0
    # The nightly run scans once and leaves nothing; the stopped dry run, resumed, finds what the uninterrupted one did.
    assert figures["bareScan"]["rowsScanned"] > figures["messages"], "both tables, every row"
    # Where it ran, for the model: the test node and the suite's local[2] session.
    assert figures["cluster"] == {
        "cassandraNodes": 1,
        "replicationFactor": 1,
        "sparkMaster": "local[2]",
        "executorCores": 2,
    }
    nightly = figures["nightlyRun"]
    # It faces what was broken for it, no more: what the reference left was repaired before.
    assert nightly["found"]["missing"] == nightly["broken"]["projection-missing"] > 0
    assert nightly["found"]["orphan"] == nightly["broken"]["projection-orphan"]
    assert nightly["remainingAfterVerify"] == 0
    assert nightly["verifiedCandidates"] == sum(nightly["found"].values())
    # Each fix of the repairs recorded its before-image first (what undo takes back).
    assert figures["repair"]["beforeImages"] == sum(figures["fixed"].values()) > 0
    assert nightly["beforeImages"] == sum(nightly["fixed"].values())
    resumed = figures["stoppedAndResumed"]
    assert (resumed["stoppedStatus"], resumed["resumedStatus"]) == ("WINDOW_ENDED", "COMPLETED")
    assert resumed["stoppedAfterRanges"] + resumed["resumedScannedRanges"] == figures["dryRunInRanges"]["ranges"]
    assert resumed["sameFindings"] is True
    # Each phase says how much of the machine it kept busy, and Cassandra's share, for the nightly run step by step.
    nightly_cpu = figures["machineCpu"]["nightlyRun"]
    assert 0 < nightly_cpu["busyCores"] <= nightly_cpu["cores"] + 0.1  # a clock tick between the readings
    assert 0 < nightly_cpu["cassandraCpuSeconds"] <= nightly_cpu["cpuSeconds"]
    assert set(nightly["stepsCpu"]) == {"check", "repair", "verify"}
    assert figures["ratios"]["nightlyRunCpuOverBareScanCpu"] > 0
    # The run's record, and the page made from its JSON file.
    assert figures["date"] and figures["machine"]["cores"] == nightly_cpu["cores"]
    page, figure = write_report([write_figures(figures, str(tmp_path / "messages.json"))], tmp_path / "benchmarks.md")
    latest = page.read_text().split("## Latest figures")[1]
    repair_row = next(line for line in latest.splitlines() if line.startswith("| repair |"))
    assert f"{figures['repair']['truthRowsPerSecond']:,} truth rows/s" in repair_row
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bench_counters_runs_james_recompute_mailbox_counters(cassandra_settings, spark, bench_prefix):
    figures = bench_projection(
        spark, cassandra_settings, "counters", messages=200, rate=0.3, seed=7, keyspace_prefix=bench_prefix
    )
    james = figures["jamesRecomputeMailboxCounters"]
    assert james["result"] == "COMPLETED"
    assert james["processedMailboxes"] == 10
    assert james["afterOurRepair"]["countersChangedByJames"] == 0
    assert figures["ratios"]["repairOverJamesThroughput"] > 0
