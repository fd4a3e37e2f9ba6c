"""The model of a night: from two bench runs made with known costs, it finds those costs back, predicts both runs,
and bounds a night on separate machines by the slower side."""

import pytest
from james_consistency_kit.bench.model import Constants, Measured, Night, fitted, on_a_cluster

# A night's true costs: CPU seconds per row read and per candidate, on Cassandra and on Spark; seconds once.
CASSANDRA_ROW, SPARK_ROW, CASSANDRA_CANDIDATE, SPARK_CANDIDATE, FIXED = 2e-5, 5e-5, 1e-3, 4e-3, 12.0
CORES = 2


def bench_figures(messages: int, broken: int, sample: int) -> dict:
    """A messages bench's JSON as it would be for a night with the costs above on two shared cores."""
    rows = 2 * messages
    candidates = broken + broken + sample
    scan = (rows * CASSANDRA_ROW, rows * SPARK_ROW)
    recheck = (candidates * CASSANDRA_CANDIDATE, candidates * SPARK_CANDIDATE)
    seconds = FIXED + (sum(scan) + sum(recheck)) / CORES

    def step(cassandra: float, spark: float) -> dict:
        return {"cpuSeconds": cassandra + spark, "cassandraCpuSeconds": cassandra, "cores": CORES}

    return {
        "messages": messages,
        "bareScan": {"rowsScanned": rows},
        "nightlyRun": {
            "seconds": seconds,
            "found": {"missing": broken, "outdated": 0, "orphan": 0},
            "verifiedCandidates": broken,
            "verifiedSample": sample,
            "stepsCpu": {
                "check": step(*scan),
                "repair": step(recheck[0] / 2, recheck[1] / 2),
                "verify": step(recheck[0] / 2, recheck[1] / 2),
            },
        },
    }


RUNS = [
    Measured.from_bench(bench_figures(100_000, 1_000, 100)),
    Measured.from_bench(bench_figures(1_000_000, 10_000, 1_000)),
]


def test_two_bench_sizes_give_back_the_costs_per_row_per_candidate_and_once():
    constants = Constants.measured(RUNS)

    assert constants.cassandra_cpu_per_row == pytest.approx(CASSANDRA_ROW)
    assert constants.spark_cpu_per_row == pytest.approx(SPARK_ROW)
    assert constants.cassandra_cpu_per_candidate == pytest.approx(CASSANDRA_CANDIDATE)
    assert constants.spark_cpu_per_candidate == pytest.approx(SPARK_CANDIDATE)
    assert constants.fixed_seconds == pytest.approx(FIXED)


def test_the_model_predicts_the_runs_it_was_made_from():
    constants = Constants.measured(RUNS)

    for run in RUNS:
        night = Night(run.messages, run.candidates / run.messages, constants)
        assert night.shared(CORES)["seconds"] == pytest.approx(run.seconds)


def test_the_processor_time_a_night_spends_once_is_found_and_predicted_with_the_rest():
    from james_consistency_kit.bench.model import against_the_bench

    # 3 CPU-s of Cassandra and 9 of Spark in every night whatever its size (start-up, gates), in the check.
    runs = []
    for figures in (bench_figures(100_000, 1_000, 100), bench_figures(1_000_000, 10_000, 1_000)):
        check = figures["nightlyRun"]["stepsCpu"]["check"]
        check["cassandraCpuSeconds"] += 3.0
        check["cpuSeconds"] += 3.0 + 9.0
        runs.append(Measured.from_bench(figures))

    constants = Constants.measured(runs)

    assert (constants.fixed_cassandra_cpu, constants.fixed_spark_cpu) == (pytest.approx(3.0), pytest.approx(9.0))
    assert constants.spark_cpu_per_row == pytest.approx(SPARK_ROW) and constants.fixed_seconds == pytest.approx(FIXED)
    for checked in against_the_bench(constants, runs):
        assert (checked["off"], checked["cassandraCpuOff"], checked["sparkCpuOff"]) == ("+0%", "+0%", "+0%")
    small = Night(runs[0].messages, runs[0].candidates / runs[0].messages, constants)
    assert small.total_cpu()[1] == pytest.approx(runs[0].spark_scan_cpu + runs[0].spark_recheck_cpu)


def test_one_bench_size_cannot_see_the_fixed_part_of_a_night():
    run = RUNS[0]
    constants = Constants.measured([run])

    assert constants.fixed_seconds == 0 and constants.spark_cpu_per_row == pytest.approx(SPARK_ROW)
    night = Night(run.messages, run.candidates / run.messages, constants)
    assert night.shared(CORES)["seconds"] == pytest.approx(run.seconds - FIXED)


def measured_on(processor: str, messages: int, on_a_ring: bool = False) -> Measured:
    """A run of `messages` on the machine of `processor`, on one node or on a 3-node ring with a Spark cluster."""
    figures = bench_figures(messages, messages // 100, messages // 1000)
    if on_a_ring:
        figures["keyspace"] = f"bench_james_rf3_{messages}"
        figures["cluster"] = {
            "cassandraNodes": 3,
            "replicationFactor": 3,
            "sparkMaster": "spark://m:7077",
            "executorCores": 2,
        }
    figures["machine"] = {"processor": processor}
    return Measured.from_bench(figures)


def test_a_ring_is_checked_on_the_runs_of_the_machine_of_its_newest_run():
    oldest_first = [
        measured_on("an older machine", 300_000, on_a_ring=True),
        measured_on("this machine", 20_000, on_a_ring=True),
        measured_on("this machine", 100_000, on_a_ring=True),
    ]

    assert [run.messages for run in on_a_cluster(oldest_first)] == [20_000, 100_000]


def test_one_node_constants_come_from_the_runs_of_the_machine_of_its_newest_run():
    oldest_first = [
        measured_on("another machine", 100_000),
        measured_on("this machine", 20_000),
        measured_on("this machine", 1_000_000),
    ]

    assert [run.messages for run in fitted(oldest_first)[1]] == [20_000, 1_000_000]


def test_on_separate_machines_the_slower_side_bounds_the_night():
    constants = Constants.measured(RUNS)
    night = Night.broken(100_000_000, 0.01, constants)
    cassandra, spark = night.cpu()

    few_executors = night.separate(executor_cores=4, nodes=6, cores_per_node=8, cassandra_share=0.5)
    many_executors = night.separate(executor_cores=400, nodes=2, cores_per_node=2, cassandra_share=0.25)

    assert few_executors["boundBy"] == "spark"
    assert few_executors["seconds"] == pytest.approx(FIXED + spark / 4)
    assert many_executors["boundBy"] == "cassandra"
    assert many_executors["seconds"] == pytest.approx(FIXED + cassandra / (2 * 2 * 0.25))


def test_a_scan_rate_limit_makes_the_night_read_its_rows_at_that_rate_then_recheck():
    from james_consistency_kit.bench.model import night

    constants = Constants.measured(RUNS)
    shape = dict(messages=100_000_000, broken_share=0.01, executor_cores=40, nodes=6, cores_per_node=8)
    free = night(constants, **shape, cassandra_share=0.5, window_minutes=120)
    limited = night(constants, **shape, cassandra_share=0.5, window_minutes=120, scan_rows_per_second=20_000)
    modelled = Night.broken(100_000_000, 0.01, constants)
    rechecks = modelled.rechecks_alone(40, 6 * 8 * 0.5)

    assert free["boundBy"] != "rate limit" and free["scanRowsPerSecond"] == 0
    assert limited["boundBy"] == "rate limit"
    assert limited["seconds"] == round(FIXED + 200_000_000 / 20_000 + rechecks)
    assert (limited["rowsRead"], limited["scanRowsPerSecondPerNode"]) == (200_000_000, 3333)
    assert not limited["fitsInWindow"]
    # At the rate it names, the night takes its whole window.
    fit = limited["scanRowsPerSecondToFitWindow"]
    at_fit = night(constants, **shape, cassandra_share=0.5, window_minutes=120, scan_rows_per_second=fit)
    assert at_fit["seconds"] == pytest.approx(120 * 60, abs=1)
