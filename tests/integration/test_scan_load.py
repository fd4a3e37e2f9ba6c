"""The scan's load on a real node: a limit in rows a second holds (measured by the run's own report), and the adaptive
mode reads at the limit while nobody but the night uses James's keyspace, and otherwise starts carefully and reads
slower while a canary read of James's keyspace is slower than its target (a target no read can meet, so that it
must)."""

import threading
from contextlib import contextmanager

from james_consistency.cassandra.cql import close, connect
from james_consistency.cassandra.schema import create_schema
from james_consistency.engine.load_limits import LoadLimits
from james_consistency.engine.run import RunOptions
from james_consistency.jobs.targets import run_target
from support.messages import platform, timeuuid

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


@contextmanager
def users_reading(settings, keyspace: str):
    """A James-like reader of the keyspace meanwhile: a mailbox's messageIdTable rows, one request after the other."""
    stop = threading.Event()

    def read() -> None:
        session = connect(settings)
        try:
            listing = session.prepare(f"SELECT uid FROM {keyspace}.messageidtable WHERE mailboxid = ? LIMIT 5")
            while not stop.wait(0.002):
                session.execute(listing, (timeuuid(1),))
        finally:
            close(session)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        yield
    finally:
        stop.set()
        reader.join(10)


def test_an_adaptive_scan_reads_at_its_limit_for_nobody_and_slows_down_for_james_s_users(
    cql, cassandra_settings, spark, new_keyspace
):
    keyspace = new_keyspace("adaptive")
    create_schema(cql, keyspace, "3.9")
    platform(cql, keyspace, "3.9", mailboxes=4, per_mailbox=50)
    limits = LoadLimits(rows_per_second=4000, adaptive=True, latency_target_ms=0.001, floor=600)

    alone = check_in_ranges(spark, cassandra_settings, keyspace, limits)["load"]
    with users_reading(cassandra_settings, keyspace):
        served = check_in_ranges(spark, cassandra_settings, keyspace, limits)["load"]

    assert [point["limitRowsPerSecond"] for point in alone["rate"]] == [4000] * 4, "the canary's latency is no one's"
    assert alone["jamesRequestsPerSecondBefore"] < 10 and alone["heldBackSeconds"] == 0
    assert served["jamesRequestsPerSecondBefore"] >= 10
    assert all(point["jamesRequestsPerSecond"] >= 10 for point in served["rate"])
    # A quarter of the limit first, then halved to the floor; a range per core a batch: 4 batches of each table.
    assert [point["limitRowsPerSecond"] for point in served["rate"]] == [1000] + [600] * 7
    assert all(point["canaryLatencyMs"] > 0.001 for point in served["rate"])
    assert (served["adaptive"], served["latencyTargetMs"], served["latencyTargetDerived"]) == (True, 0.001, False)
    assert served["heldBackSeconds"] == served["scanSeconds"]
