"""Counted by Cassandra itself (system_views.local_write_latency, per table): a repair never writes its source of
truth, and every repair run a second time writes nothing at all."""

import pytest
from james_consistency.engine.run import RunOptions
from james_consistency.jobs.targets import run_target
from james_consistency.projections import TARGETS
from james_consistency_kit.bench import TARGET_FAULTS
from james_consistency_kit.faults import inject
from support.james_platform import james_platform

MESSAGE_FAULTS = ("projection-missing", "projection-stale-flags", "projection-orphan")
TRUTH_TABLES = (
    "imapuidtable",
    "eventstore",
    "acl",
    "mailbox",
    "mailboxpathv3",
    "mailboxpathv2",
    "messagev2",
    "messagev3",
)


def write_counts(cql, keyspace) -> dict[str, int]:
    rows = cql.execute(
        "SELECT table_name, count FROM system_views.local_write_latency WHERE keyspace_name = %s", (keyspace,)
    )
    return {row.table_name: row.count for row in rows}


def written_between(before: dict, after: dict) -> dict[str, int]:
    return {table: after[table] - before.get(table, 0) for table in after if after[table] != before.get(table, 0)}


@pytest.mark.end_to_end
def test_repairs_never_write_the_truth_and_a_second_run_writes_nothing(
    cql, cassandra_settings, spark, new_keyspace, tmp_path
):
    generation = "3.9"  # the 3.5 run proves the same (both pass) at twice the suite time
    keyspace = new_keyspace("idem")
    james_platform(cql, cassandra_settings, keyspace, generation)
    kinds = [*MESSAGE_FAULTS, *(kind for faults in TARGET_FAULTS.values() for kind in faults)]
    injected = 0
    for kind in kinds:
        if kind.startswith("aclv2") and generation == "3.5":
            continue
        injected += inject(
            cassandra_settings, keyspace=keyspace, kind=kind, rate=0.1, manifest_path=str(tmp_path / kind)
        )["count"]
    assert injected > 20

    first_writes = {}
    for target in TARGETS:
        before = write_counts(cql, keyspace)
        run_target(spark, cassandra_settings, RunOptions(target, keyspace, mode="repair", allow_destructive=True))
        first_writes[target] = written_between(before, write_counts(cql, keyspace))
        assert not set(first_writes[target]) & set(TRUTH_TABLES), (target, first_writes[target])
    assert sum(sum(writes.values()) for writes in first_writes.values()) >= injected / 2, first_writes

    before_second = write_counts(cql, keyspace)
    for target in TARGETS:
        report = run_target(spark, cassandra_settings, RunOptions(target, keyspace, mode="repair"))
        assert sum(report.get("inconsistencies", {}).values()) == 0, (target, report.get("inconsistencies"))
    assert written_between(before_second, write_counts(cql, keyspace)) == {}
