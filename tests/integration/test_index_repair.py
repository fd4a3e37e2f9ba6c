"""messageDeleted, firstUnseen and mailboxRecents rebuilt from imapUidTable by the shared engine, checked with CQL."""

import pytest
from james_consistency.engine.run import RunOptions
from james_consistency.jobs.targets import run_target
from james_consistency_kit.faults import inject
from support.james_platform import james_platform

# target -> (index table, its uid column, the fault kinds that break it, the truth condition)
INDEXES = {
    "deleted": ("messagedeleted", "uid", ("deleted-missing", "deleted-stale"), lambda m: m.flagdeleted),
    "unseen": ("firstunseen", "uid", ("unseen-missing", "unseen-stale"), lambda m: not m.flagseen),
    "recent": ("mailboxrecents", "recent_mesage_uid", ("recent-missing", "recent-stale"), lambda m: m.flagrecent),
}


def index_rows(cql, keyspace, table, uid_column):
    return {(r.mailboxid, getattr(r, uid_column)) for r in cql.execute(f"SELECT * FROM {keyspace}.{table}")}


def expected_from_truth(cql, keyspace, condition):
    return {(m.mailboxid, m.uid) for m in cql.execute(f"SELECT * FROM {keyspace}.imapuidtable") if condition(m)}


@pytest.mark.parametrize("generation", ["3.9", "3.5"])
@pytest.mark.parametrize("target", list(INDEXES))
def test_index_is_rebuilt_row_by_row_from_the_truth(
    cql, cassandra_settings, spark, new_keyspace, tmp_path, target, generation
):
    table, uid_column, kinds, condition = INDEXES[target]
    keyspace = new_keyspace(target)
    james_platform(cql, cassandra_settings, keyspace, generation)
    broken = {
        kind: inject(cassandra_settings, keyspace=keyspace, kind=kind, rate=0.2, manifest_path=str(tmp_path / kind))
        for kind in kinds
    }
    before = index_rows(cql, keyspace, table, uid_column)

    check = run_target(spark, cassandra_settings, RunOptions(target, keyspace, mode="check"))
    assert check["inconsistencies"] == {
        "missing": broken[kinds[0]]["count"],
        "outdated": 0,
        "orphan": broken[kinds[1]]["count"],
    }
    assert index_rows(cql, keyspace, table, uid_column) == before, "the dry run wrote nothing"

    repair = run_target(spark, cassandra_settings, RunOptions(target, keyspace, mode="repair", allow_destructive=True))

    assert repair["status"] == "COMPLETED"
    assert repair["addedEntries"] == broken[kinds[0]]["count"]
    assert repair["removedEntries"] == broken[kinds[1]]["count"]
    assert index_rows(cql, keyspace, table, uid_column) == expected_from_truth(cql, keyspace, condition)
    again = run_target(spark, cassandra_settings, RunOptions(target, keyspace, mode="repair"))
    assert sum(again["inconsistencies"].values()) == 0 and again["addedEntries"] == again["removedEntries"] == 0
