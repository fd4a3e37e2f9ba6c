"""A whole index_rebuild run: each index repaired independently; one stopped by its safety gate stops no other; where
James does not handle Recent (JAMES_HANDLE_RECENT=0), mailboxRecents is neither checked nor written."""

import pytest
from james_consistency_kit.faults import inject
from support.james_platform import james_platform


def index_rows(cql, keyspace, table, uid_column="uid"):
    return {(r.mailboxid, getattr(r, uid_column)) for r in cql.execute(f"SELECT * FROM {keyspace}.{table}")}


def from_truth(cql, keyspace, condition):
    return {(m.mailboxid, m.uid) for m in cql.execute(f"SELECT * FROM {keyspace}.imapuidtable") if condition(m)}


def keywords_in_use(cql, keyspace):
    used = {}
    for row in cql.execute(f"SELECT mailboxid, userflags FROM {keyspace}.imapuidtable"):
        used.setdefault(row.mailboxid, set()).update(row.userflags or ())
    return {mailbox: flags for mailbox, flags in used.items() if flags}


def applicable_flags(cql, keyspace):
    rows = cql.execute(f"SELECT mailboxid, userflags FROM {keyspace}.applicableflag")
    return {row.mailboxid: set(row.userflags) for row in rows if row.userflags}


@pytest.mark.end_to_end
def test_one_failed_rebuild_stops_no_other_and_where_james_does_not_handle_recent_mailbox_recents_is_left_alone(
    dagbag, airflow_against_test_node, cql, cassandra_settings, new_keyspace, tmp_path, monkeypatch
):
    from james_airflow.runs import read_report

    keyspace = new_keyspace("idx")
    james_platform(cql, cassandra_settings, keyspace, "3.9")
    faults = (
        ("deleted-stale", 0.5),  # removals past the safety threshold: the deleted rebuild stops at its gate
        ("unseen-missing", 0.2),
        ("recent-missing", 0.5),
        ("recent-stale", 0.5),
        ("applicable-flag-missing", 0.5),
    )
    for kind, rate in faults:
        inject(cassandra_settings, keyspace=keyspace, kind=kind, rate=rate, manifest_path=str(tmp_path / kind))
    deleted_before = index_rows(cql, keyspace, "messagedeleted")
    recents_before = index_rows(cql, keyspace, "mailboxrecents", "recent_mesage_uid")
    monkeypatch.setenv("JAMES_HANDLE_RECENT", "0")  # the jobs' environment, as a worker's would carry it

    run = dagbag.get_dag("index_rebuild").test(run_conf={"keyspace": keyspace, "recheck_delay_seconds": 0})

    states = {ti.task_id: str(ti.state) for ti in run.get_task_instances()}
    assert states == {
        "repair_deleted": "failed",
        "verify_deleted": "upstream_failed",
        "repair_unseen": "success",
        "verify_unseen": "success",
        "repair_recent": "success",
        "verify_recent": "success",
        "repair_flags": "success",
        "verify_flags": "success",
        "report": "failed",
    }
    assert str(run.state) == "failed"
    assert index_rows(cql, keyspace, "messagedeleted") == deleted_before, "stopped before writing"
    assert index_rows(cql, keyspace, "firstunseen") == from_truth(cql, keyspace, lambda m: not m.flagseen)
    assert index_rows(cql, keyspace, "mailboxrecents", "recent_mesage_uid") == recents_before, "James has no Recent"
    assert applicable_flags(cql, keyspace) == keywords_in_use(cql, keyspace)
    steps = ("repair_recent", "verify_recent", "verify_unseen")
    reports = {step: read_report("index_rebuild", run.run_id, step).as_json() for step in steps}
    for step in ("repair_recent", "verify_recent"):
        assert reports[step]["status"] == "NOT_APPLICABLE"
        assert "handleRecent=false" in reports[step]["reason"]
    assert reports["verify_unseen"]["status"] == "COMPLETED"
    alerts = airflow_against_test_node()
    assert [alert["task_id"] for alert in alerts] == ["repair_deleted"]
    assert alerts[0]["report"]["failed_gates"][0]["gate"] == "plan_safety"
