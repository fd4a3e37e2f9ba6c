"""The scan's load on a real node: a limit in rows a second holds (measured by the run's own report), and the adaptive
mode reads slower while a canary read of James's keyspace is slower than its target (a target no read can meet,
so that it must)."""

from james_consistency.cassandra.schema import create_schema
from james_consistency.engine.load_limits import LoadLimits
from james_consistency.engine.run import RunOptions
from james_consistency.jobs.targets import run_target
from support.messages import platform

RANGES = 8  # per table; 4 a batch on local[2]: 2 batches of each table, 4 in all


def check_in_ranges(spark, settings, keyspace: str, load: LoadLimits) -> dict:
    return run_target(
        spark, settings, RunOptions(target="messages", keyspace=keyspace, mode="check", ranges=RANGES, load=load)
    )


def test_a_ranged_scan_reads_no_faster_than_its_limit(cql, cassandra_settings, spark, new_keyspace):
    keyspace = new_keyspace("limited")
    create_schema(cql, keyspace, "3.9")
    platform(cql, keyspace, "3.9", mailboxes=4, per_mailbox=250)  # 1,000 rows a table
    limit = 500  # unthrottled, this scan reads over twice as fast on local[2]

    load = check_in_ranges(spark, cassandra_settings, keyspace, LoadLimits(rows_per_second=limit, floor=100))["load"]

    assert load["rowsRead"] == 2000
    assert load["scanSeconds"] >= 2000 / limit
    assert load["rowsPerSecond"] <= limit
    assert [point["limitRowsPerSecond"] for point in load["rate"]] == [limit] * 4
    assert all(point["rowsPerSecond"] <= limit for point in load["rate"])
    assert all(point["latencyMs"] > 0 for point in load["rate"]), "each batch timed its own page requests"
    assert (load["limitRowsPerSecond"], load["adaptive"], load["heldBackSeconds"]) == (limit, False, 0)


def test_an_adaptive_scan_slows_down_while_the_canary_is_above_its_target(cql, cassandra_settings, spark, new_keyspace):
    keyspace = new_keyspace("adaptive")
    create_schema(cql, keyspace, "3.9")
    platform(cql, keyspace, "3.9", mailboxes=4, per_mailbox=50)
    limits = LoadLimits(rows_per_second=4000, adaptive=True, latency_target_ms=0.001, floor=600)

    load = check_in_ranges(spark, cassandra_settings, keyspace, limits)["load"]

    assert [point["limitRowsPerSecond"] for point in load["rate"]] == [4000, 2000, 1000, 600], "halved, to the floor"
    assert all(point["canaryLatencyMs"] > 0.001 for point in load["rate"])
    assert (load["adaptive"], load["latencyTargetMs"], load["latencyTargetDerived"]) == (True, 0.001, False)
    assert load["heldBackSeconds"] > 0
    assert load["heldBackSeconds"] < load["scanSeconds"], "the first batch read at the limit"
