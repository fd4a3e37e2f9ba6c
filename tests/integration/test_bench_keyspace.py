"""The benched keyspace: each bench faces the rate it was asked for, even after a bench stopped mid-way."""

import json
import uuid

import pytest
from james_consistency.runtime.paths import LOCAL_DIR
from james_consistency_kit.bench.jobs import run_job
from james_consistency_kit.bench.keyspace import MESSAGES_DELETED, RESEED_BELOW, bench_keyspace, prepare_keyspace


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


@pytest.mark.parametrize("marker_counts", [True, False], ids=["counted-by-its-marker", "counted-in-imapuidtable"])
def test_a_keyspace_its_orphans_shrank_is_seeded_afresh_when_the_next_bench_starts(
    cassandra_settings, spark, keyspace, marker_counts
):
    # An orphan is broken by deleting the message from imapUidTable: a bench's breaks shrink the keyspace for good.
    # At 30 % broken, a tenth of the messages become orphans: far more than the 2 % a keyspace may lose.
    first = prepare_keyspace(spark, cassandra_settings, keyspace, 300, 0.3, seed=3)["broken"]
    assert first["projection-orphan"] > 300 * (1 - RESEED_BELOW)
    if not marker_counts:  # a keyspace seeded before the marker counted them
        marker = LOCAL_DIR / "bench" / f"{keyspace}.json"
        marker.write_text(
            json.dumps({k: v for k, v in json.loads(marker.read_text()).items() if k != MESSAGES_DELETED})
        )

    repairs = []

    def repair():
        repairs.append(run_job(spark, cassandra_settings, "messages", keyspace, "repair", allow_destructive=True))

    second = prepare_keyspace(
        spark, cassandra_settings, keyspace, 300, 0.15, seed=4, repair=repair, reseed_below=RESEED_BELOW
    )["broken"]

    # The keyspace seeded afresh is still repaired (untimed) before it is broken: it had nothing to fix.
    assert [entry["inconsistencies"] for entry in repairs] == [{"missing": 0, "outdated": 0, "orphan": 0}]
    report = run_job(spark, cassandra_settings, "messages", keyspace, "check")
    assert report["processedImapUidEntries"] == 300 - second["projection-orphan"]
    assert report["inconsistencies"]["orphan"] == second["projection-orphan"]
    assert report["inconsistencies"]["missing"] == second["projection-missing"]
