"""Whole runs of acl_consistency through Airflow's dag.test() on the real node, Spark and Great Expectations.

The expected projections are computed here from the truth (eventStore, or the 3.5 `acl` JSON) with plain CQL and
json, not with the project's code.
"""

import json
import time

import pytest
from james_consistency.projections.acl import is_mailbox_acl_aggregate
from james_consistency.settings import setting
from james_consistency_kit.faults import inject
from support.dag_runs import report_summary, task_states
from support.james_platform import ACL_SIZES, james_platform

DAG_ID = "acl_consistency"
ORDER = "aeiklprstwx"
BRANCH_STEPS = ("check", "anything_to_repair", "repair", "verify")


def truth_acls(cql, keyspace, generation) -> dict[str, dict]:
    """mailbox id -> the entries of its current ACL: the last event's newAcl (3.9), or the acl JSON (3.5)."""
    if generation == "3.5":
        return {
            str(row.id): json.loads(row.acl)["entries"] for row in cql.execute(f"SELECT id, acl FROM {keyspace}.acl")
        }
    last = {}
    for row in cql.execute(f"SELECT aggregateid, eventid, event FROM {keyspace}.eventstore"):
        if not is_mailbox_acl_aggregate(row.aggregateid):
            continue
        if row.aggregateid not in last or row.eventid > last[row.aggregateid][0]:
            last[row.aggregateid] = (row.eventid, row.event)
    return {mailbox: json.loads(event)["aclDiff"]["newAcl"]["entries"] for mailbox, (_, event) in last.items()}


def expected_user_acl(acls) -> set:
    """(user, mailbox, rights in James's order) of individual users' positive rights."""
    return {
        (key, mailbox, "".join(letter for letter in ORDER if letter in rights))
        for mailbox, entries in acls.items()
        for key, rights in entries.items()
        if not key.startswith(("-", "$")) and key not in ("owner", "anyone", "authenticated") and rights
    }


def user_acl(cql, keyspace) -> set:
    return {(r.username, str(r.mailboxid), r.rights) for r in cql.execute(f"SELECT * FROM {keyspace}.usermailboxacl")}


def user_acl_write_times(cql, keyspace) -> dict:
    rows = cql.execute(f"SELECT username, mailboxid, WRITETIME(rights) AS written FROM {keyspace}.usermailboxacl")
    return {(r.username, r.mailboxid): r.written for r in rows}


def expected_aclv2(acls) -> dict:
    """(mailbox, entry key) -> its rights as a set of letters: every entry, negative and special ones included."""
    return {(mailbox, key): frozenset(rights) for mailbox, entries in acls.items() for key, rights in entries.items()}


def aclv2(cql, keyspace) -> dict:
    return {(str(r.id), r.key): frozenset(r.rights or ()) for r in cql.execute(f"SELECT * FROM {keyspace}.aclv2")}


def break_acls(cassandra_settings, keyspace, tmp_path, kinds) -> None:
    for kind in kinds:
        manifest = inject(
            cassandra_settings, keyspace=keyspace, kind=kind, rate=0.2, manifest_path=str(tmp_path / kind)
        )
        assert manifest["count"] > 0, kind


@pytest.mark.end_to_end
def test_a_refused_truth_stops_both_branches_before_writing_then_both_projections_are_repaired(
    dagbag, airflow_against_test_node, cql, cassandra_settings, spark, new_keyspace, tmp_path
):
    keyspace = new_keyspace("acldag")
    james_platform(cql, cassandra_settings, keyspace, "3.9", **ACL_SIZES)
    break_acls(
        cassandra_settings,
        keyspace,
        tmp_path,
        ("acl-user-missing", "acl-user-extra", "acl-user-wrong-rights", "aclv2-missing", "aclv2-wrong"),
    )
    acls = truth_acls(cql, keyspace, "3.9")
    assert user_acl(cql, keyspace) != expected_user_acl(acls) and aclv2(cql, keyspace) != expected_aclv2(acls)
    # A mailbox's event row written without its event (a half-applied append): no ACL can be read from it.
    mailbox = sorted(acls)[0]
    last_event = max(
        r.eventid for r in cql.execute(f"SELECT eventid FROM {keyspace}.eventstore WHERE aggregateid = %s", (mailbox,))
    )
    cql.execute(f"INSERT INTO {keyspace}.eventstore (aggregateid, eventid) VALUES (%s, %s)", (mailbox, last_event + 1))
    user_acl_before, written_before, aclv2_before = (
        user_acl(cql, keyspace),
        user_acl_write_times(cql, keyspace),
        aclv2(cql, keyspace),
    )

    # max_destructive_share 1: on so small a platform the faults are most of UserMailboxACL (the plan-safety gate
    # has tests of its own).
    started = time.perf_counter()
    run = dagbag.get_dag(DAG_ID).test(
        run_conf={"keyspace": keyspace, "recheck_delay_seconds": 0, "max_destructive_share": 1}
    )
    print(f"dag.test() refused-truth run: {time.perf_counter() - started:.0f}s")

    assert str(run.state) == "failed"
    states = task_states(run)
    assert states["check_acl"] == states["check_aclv2"] == "failed"
    assert {states[f"{step}_{target}"] for step in BRANCH_STEPS[1:] for target in ("acl", "aclv2")} == {
        "upstream_failed"
    }
    assert states["report"] == "failed"
    assert user_acl(cql, keyspace) == user_acl_before and aclv2(cql, keyspace) == aclv2_before
    assert user_acl_write_times(cql, keyspace) == written_before
    alerts = airflow_against_test_node()
    assert sorted(alert["task_id"] for alert in alerts) == ["check_acl", "check_aclv2"]
    for alert in alerts:
        assert alert["dag_id"] == DAG_ID and alert["run_id"] == run.run_id
        assert alert["report"]["keyspace"] == keyspace
        (gate,) = alert["report"]["failed_gates"]
        assert gate["gate"] == "acl_truth_health_39"
        assert [failure["target"] for failure in gate["failed_expectations"]] == ["null_event"]

    # The operator removes the empty event row; the next run repairs both projections.
    cql.execute(f"DELETE FROM {keyspace}.eventstore WHERE aggregateid = %s AND eventid = %s", (mailbox, last_event + 1))
    started = time.perf_counter()
    run = dagbag.get_dag(DAG_ID).test(
        run_conf={"keyspace": keyspace, "recheck_delay_seconds": 0, "max_destructive_share": 1}
    )
    print(f"dag.test() repair run: {time.perf_counter() - started:.0f}s")

    assert str(run.state) == "success"
    assert set(task_states(run).values()) == {"success"}
    acls = truth_acls(cql, keyspace, "3.9")
    assert user_acl(cql, keyspace) == expected_user_acl(acls)
    assert aclv2(cql, keyspace) == expected_aclv2(acls)
    assert len(airflow_against_test_node()) == 2, "no new alert"
    summary = report_summary(run)
    for target in ("acl", "aclv2"):
        assert sum(summary[f"check_{target}"]["inconsistencies"].values()) > 0, target
        assert summary[f"repair_{target}"]["status"] == "COMPLETED", target
        assert summary[f"verify_{target}"]["remainingInconsistencies"] == 0, target


@pytest.mark.end_to_end
def test_a_35_keyspace_repairs_user_mailbox_acl_and_skips_aclv2(
    dagbag, airflow_against_test_node, cql, cassandra_settings, spark, new_keyspace, tmp_path
):
    keyspace = new_keyspace("acl35")
    james_platform(cql, cassandra_settings, keyspace, "3.5", **ACL_SIZES)
    break_acls(cassandra_settings, keyspace, tmp_path, ("acl-user-missing", "acl-user-wrong-rights"))

    started = time.perf_counter()
    run = dagbag.get_dag(DAG_ID).test(
        run_conf={"keyspace": keyspace, "recheck_delay_seconds": 0, "max_destructive_share": 1}
    )
    print(f"dag.test() 3.5 run: {time.perf_counter() - started:.0f}s")

    assert str(run.state) == "success"
    assert task_states(run) == {
        "check_acl": "success",
        "anything_to_repair_acl": "success",
        "repair_acl": "success",
        "verify_acl": "success",
        "check_aclv2": "success",
        "anything_to_repair_aclv2": "success",
        "repair_aclv2": "skipped",
        "verify_aclv2": "skipped",
        "report": "success",
    }
    assert user_acl(cql, keyspace) == expected_user_acl(truth_acls(cql, keyspace, "3.5"))
    assert airflow_against_test_node() == []
    summary = report_summary(run)
    assert summary["check_aclv2"]["status"] == "NOT_APPLICABLE"
    assert summary["verify_acl"]["remainingInconsistencies"] == 0


def test_the_two_acl_repairs_are_independent_branches_off_peak(dagbag):
    from airflow.timetables.trigger import CronTriggerTimetable

    dag = dagbag.get_dag(DAG_ID)
    for target, other in (("acl", "aclv2"), ("aclv2", "acl")):
        chain = [f"{step}_{target}" for step in BRANCH_STEPS]
        for upstream, downstream in zip(chain, chain[1:], strict=False):
            assert dag.get_task(upstream).downstream_task_ids == {downstream}
        assert dag.get_task(chain[-1]).downstream_task_ids == {"report"}
        assert not any(task.endswith(f"_{other}") for task in dag.get_task(chain[0]).get_flat_relative_ids())
        assert {dag.get_task(f"{step}_{target}").mode for step in ("check", "repair", "verify")} == {
            "check",
            "repair",
            "verify",
        }
    assert dag.get_task("report").trigger_rule == "all_done", "the report runs after a failed branch too"
    assert isinstance(dag.timetable, CronTriggerTimetable)
    assert dag.timetable._expression == setting("JAMES_ACL_REPAIR_CRON")
    heavy = [task for task in dag.tasks if task.task_id.startswith(("check_", "repair_", "verify_"))]
    assert len(heavy) == 6 and {task.pool for task in heavy} == {"cassandra_heavy"}
    assert dag.max_active_runs == 1 and dag.catchup is False
    assert dag.params.validate()["dry_run"] is False
