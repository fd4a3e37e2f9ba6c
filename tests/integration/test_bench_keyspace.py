"""The benched keyspace: each bench faces the rate it was asked for, even after a bench stopped mid-way."""

import uuid

import pytest
from james_consistency.paths import LOCAL_DIR
from james_consistency_kit.bench.jobs import run_job
from james_consistency_kit.bench.keyspace import bench_keyspace, prepare_keyspace


@pytest.fixture
def keyspace(cql):
    keyspace = bench_keyspace(300, f"bench_t_{uuid.uuid4().hex[:8]}")
    yield keyspace
    cql.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)
    (LOCAL_DIR / "bench" / f"{keyspace}.json").unlink(missing_ok=True)


def test_a_keyspace_a_stopped_bench_left_broken_is_repaired_before_it_is_broken_again(
    cassandra_settings, spark, keyspace
):
    # A bench seeds and breaks the keyspace, then stops before repairing it.
    prepare_keyspace(spark, cassandra_settings, keyspace, 300, 0.15, seed=3)

    def repair():
        return run_job(spark, cassandra_settings, "messages", keyspace, "repair", allow_destructive=True)

    broken = prepare_keyspace(spark, cassandra_settings, keyspace, 300, 0.15, seed=4, repair=repair)["broken"]

    found = run_job(spark, cassandra_settings, "messages", keyspace, "check")["inconsistencies"]
    assert found["missing"] == broken["projection-missing"] > 0
    assert found["orphan"] == broken["projection-orphan"] > 0
