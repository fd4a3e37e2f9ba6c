"""Whole runs of acl_consistency and counters_recompute through Airflow's dag.test() on the real node, and the
night's order: counters_recompute is scheduled on the asset message_consistency emits when it ends well."""

import json

from james_consistency.faults import inject
from james_consistency.seed import seed_platform


def task_states(run) -> dict[str, str]:
    return {ti.task_id: str(ti.state) for ti in run.get_task_instances()}


def user_acl_from_truth(cql, keyspace) -> set:
    """(user, mailbox, rights) of individual users' positive rights in the last acl-updated event, by plain json."""
    last = {}
    for row in cql.execute(f"SELECT aggregateid, eventid, event FROM {keyspace}.eventstore"):
        if row.aggregateid not in last or row.eventid > last[row.aggregateid][0]:
            last[row.aggregateid] = (row.eventid, row.event)
    expected = set()
    for mailbox, (_, event) in last.items():
        for key, rights in json.loads(event)["aclDiff"]["newAcl"]["entries"].items():
            if not key.startswith(("-", "$")) and key not in ("owner", "anyone", "authenticated"):
                expected.add((key, mailbox, "".join(letter for letter in "aeiklprstwx" if letter in rights)))
    return expected


def test_acl_consistency_repairs_both_acl_projections(
    dagbag, airflow_against_test_node, cql, cassandra_settings, spark, new_keyspace, tmp_path
):
    keyspace = new_keyspace("acldag")
    seed_platform(
        cassandra_settings, keyspace=keyspace, users=6, mailboxes_per_user=4, messages_per_mailbox=2, spark=spark
    )
    for kind in ("acl-user-missing", "acl-user-wrong-rights", "aclv2-missing"):
        inject(cassandra_settings, keyspace=keyspace, kind=kind, rate=0.3, manifest_path=str(tmp_path / kind))

    run = dagbag.get_dag("acl_consistency").test(
        run_conf={"keyspace": keyspace, "recheck_delay_seconds": 0, "max_destructive_share": 0.5}
    )

    assert str(run.state) == "success"
    assert task_states(run) == {
        "check_acl": "success",
        "anything_to_repair_acl": "success",
        "repair_acl": "success",
        "verify_acl": "success",
        "check_aclv2": "success",
        "anything_to_repair_aclv2": "success",
        "repair_aclv2": "success",
        "verify_aclv2": "success",
        "report": "success",
    }
    rows = {(r.username, str(r.mailboxid), r.rights) for r in cql.execute(f"SELECT * FROM {keyspace}.usermailboxacl")}
    assert rows == user_acl_from_truth(cql, keyspace)
    assert airflow_against_test_node() == []


def counters_of(cql, keyspace) -> dict:
    return {r.mailboxid: (r.count, r.unseen) for r in cql.execute(f"SELECT * FROM {keyspace}.mailboxcounters")}


def counters_from_truth(cql, keyspace) -> dict:
    counts = {}
    for row in cql.execute(f"SELECT mailboxid, flagseen FROM {keyspace}.imapuidtable"):
        count, unseen = counts.get(row.mailboxid, (0, 0))
        counts[row.mailboxid] = (count + 1, unseen + (0 if row.flagseen else 1))
    return counts


def test_counters_recompute_stops_at_a_failed_gate_and_alerts_then_repairs(
    dagbag, airflow_against_test_node, cql, cassandra_settings, spark, new_keyspace, tmp_path
):
    keyspace = new_keyspace("cntdag")
    seed_platform(
        cassandra_settings, keyspace=keyspace, users=2, mailboxes_per_user=2, messages_per_mailbox=20, spark=spark
    )
    inject(cassandra_settings, keyspace=keyspace, kind="counters-wrong", rate=0.5, manifest_path=str(tmp_path / "c"))
    inject(cassandra_settings, keyspace=keyspace, kind="truth-malformed", rate=0.05, manifest_path=str(tmp_path / "m"))
    counters_before = counters_of(cql, keyspace)

    run = dagbag.get_dag("counters_recompute").test(run_conf={"keyspace": keyspace, "recheck_delay_seconds": 0})

    assert str(run.state) == "failed"
    states = task_states(run)
    assert states["check_counters"] == states["check_quotas"] == "failed"
    assert states["repair_counters"] == states["repair_quotas"] == "upstream_failed"
    assert counters_of(cql, keyspace) == counters_before
    alerts = airflow_against_test_node()
    assert sorted(alert["task_id"] for alert in alerts) == ["check_counters", "check_quotas"]
    gates = {alert["task_id"]: alert["report"]["failed_gates"][0]["gate"] for alert in alerts}
    assert gates == {"check_counters": "counters_truth_health", "check_quotas": "quotas_truth_health"}

    # The operator removes the rows no James writes (uid 0), and the next run repairs counters and quotas.
    for row in cql.execute(f"SELECT messageid, mailboxid FROM {keyspace}.imapuidtable WHERE uid = 0 ALLOW FILTERING"):
        cql.execute(
            f"DELETE FROM {keyspace}.imapuidtable WHERE messageid = %s AND mailboxid = %s AND uid = 0",
            (row.messageid, row.mailboxid),
        )
    run = dagbag.get_dag("counters_recompute").test(
        run_conf={"keyspace": keyspace, "recheck_delay_seconds": 0, "max_destructive_share": 1}
    )

    assert str(run.state) == "success"
    states = task_states(run)
    assert [states[f"{step}_counters"] for step in ("check", "repair", "verify")] == ["success"] * 3
    assert states["check_quotas"] == "success" and states["repair_quotas"] == "skipped", "quotas were right"
    assert counters_of(cql, keyspace) == counters_from_truth(cql, keyspace)


def test_counters_recompute_runs_after_the_message_repair(dagbag):
    message_report = dagbag.get_dag("message_consistency").get_task("report")
    counters = dagbag.get_dag("counters_recompute")
    emitted = {asset.uri for asset in message_report.outlets}
    assert emitted == {"james://message_consistency/consistent"}
    assert {asset.uri for asset in counters.timetable.asset_condition.objects} == emitted
    assert "not concurrency-safe" in counters.doc_md
