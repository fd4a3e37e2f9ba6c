"""Whole runs of counters_recompute through Airflow's dag.test() on the real node, and the night's order: it is
scheduled on the asset message_consistency emits for a keyspace when its run there ended well.

Expected counters and quotas are counted here from imapUidTable and the mailbox table with plain CQL."""

import os
import subprocess
import sys
import time

import pytest
from james_airflow.bundle import DAGS_FOLDER
from james_consistency_kit.faults import inject
from support.dag_runs import announcements, task_states
from support.james_platform import james_platform

DAG_ID = "counters_recompute"


def nonzero(values: dict) -> dict:
    """An absent counter row reads as zero."""
    return {key: value for key, value in values.items() if any(value)}


def counters(cql, keyspace) -> dict:
    rows = cql.execute(f"SELECT mailboxid, count, unseen FROM {keyspace}.mailboxcounters")
    return nonzero({r.mailboxid: (r.count or 0, r.unseen or 0) for r in rows})


def counters_from_truth(cql, keyspace) -> dict:
    counts = {}
    for row in cql.execute(f"SELECT mailboxid, flagseen FROM {keyspace}.imapuidtable"):
        count, unseen = counts.get(row.mailboxid, (0, 0))
        counts[row.mailboxid] = (count + 1, unseen + (0 if row.flagseen else 1))
    return nonzero(counts)


def quotas(cql, keyspace) -> dict:
    """quota root -> (messages, octets): currentQuota's rows (James 3.5 to 3.8), or quotaCurrentValue's MAILBOX rows."""
    tables = {
        row.table_name
        for row in cql.execute("SELECT table_name FROM system_schema.tables WHERE keyspace_name = %s", (keyspace,))
    }
    if "quotacurrentvalue" not in tables:
        rows = cql.execute(f"SELECT quotaroot, messagecount, storage FROM {keyspace}.currentquota")
        return nonzero({row.quotaroot: (row.messagecount or 0, row.storage or 0) for row in rows})
    usage = {}
    for row in cql.execute(f"SELECT * FROM {keyspace}.quotacurrentvalue"):
        if row.quotacomponent == "MAILBOX":
            messages, octets = usage.get(row.identifier, (0, 0))
            usage[row.identifier] = (
                (row.currentvalue, octets) if row.quotatype == "count" else (messages, row.currentvalue)
            )
    return nonzero(usage)


def quotas_from_truth(cql, keyspace) -> dict:
    owners = {
        row.id: f"{row.mailboxbase.namespace}&{row.mailboxbase.user}"
        for row in cql.execute(f"SELECT id, mailboxbase FROM {keyspace}.mailbox")
    }
    usage = {}
    for row in cql.execute(f"SELECT mailboxid, fullcontentoctets FROM {keyspace}.imapuidtable"):
        messages, octets = usage.get(owners[row.mailboxid], (0, 0))
        usage[owners[row.mailboxid]] = (messages + 1, octets + row.fullcontentoctets)
    return nonzero(usage)


def timed_test(dagbag, dag_id, what, **run_conf):
    started = time.perf_counter()
    run = dagbag.get_dag(dag_id).test(run_conf=run_conf)
    print(f"dag.test() {dag_id} {what}: {time.perf_counter() - started:.0f}s")
    return run


def seeded(cql, cassandra_settings, keyspace, tmp_path, *kinds) -> None:
    james_platform(cql, cassandra_settings, keyspace, "3.9")
    for kind, rate in kinds:
        manifest = inject(
            cassandra_settings, keyspace=keyspace, kind=kind, rate=rate, manifest_path=str(tmp_path / kind)
        )
        assert manifest["count"] > 0, kind


@pytest.mark.end_to_end
def test_the_night_message_repair_announces_its_keyspace_then_counters_and_quotas_are_recomputed(
    dagbag, airflow_against_test_node, cql, cassandra_settings, spark, new_keyspace, tmp_path
):
    keyspace = new_keyspace("cntnight")
    seeded(cql, cassandra_settings, keyspace, tmp_path, ("counters-wrong", 0.5), ("quota-wrong", 0.5))
    assert counters(cql, keyspace) != counters_from_truth(cql, keyspace)
    assert quotas(cql, keyspace) != quotas_from_truth(cql, keyspace)

    # The message repair ends well (nothing to repair): its report announces the keyspace's consistent messages.
    run = timed_test(dagbag, "message_consistency", "run", keyspace=keyspace, recheck_delay_seconds=0)
    assert str(run.state) == "success" and task_states(run)["repair"] == "skipped"
    assert announcements(keyspace) == [
        {
            "source_dag_id": "message_consistency",
            "source_task_id": "report",
            "source_run_id": run.run_id,
            "extra": {"keyspace": keyspace, "run_id": run.run_id},
        }
    ]

    run = timed_test(dagbag, DAG_ID, "repair", keyspace=keyspace, recheck_delay_seconds=0, max_destructive_share=1)

    assert str(run.state) == "success"
    assert set(task_states(run).values()) == {"success"}
    assert counters(cql, keyspace) == counters_from_truth(cql, keyspace)
    assert quotas(cql, keyspace) == quotas_from_truth(cql, keyspace)
    assert airflow_against_test_node() == []


@pytest.mark.end_to_end
def test_a_corrupt_truth_stops_the_counters_before_writing_and_alerts(
    dagbag, airflow_against_test_node, cql, cassandra_settings, spark, new_keyspace, tmp_path
):
    keyspace = new_keyspace("cntbad")
    seeded(cql, cassandra_settings, keyspace, tmp_path, ("counters-wrong", 0.5), ("truth-malformed", 0.05))
    counters_before, quotas_before = counters(cql, keyspace), quotas(cql, keyspace)

    # A night like this, message_consistency stops at its gate and announces nothing (test_message_consistency_dag),
    # so no counters_recompute is scheduled. An operator triggering it anyway: both truth gates stop it before
    # anything is written.
    run = timed_test(dagbag, DAG_ID, "corrupt truth", keyspace=keyspace, recheck_delay_seconds=0)

    assert str(run.state) == "failed"
    states = task_states(run)
    assert states["check_counters"] == states["check_quotas"] == "failed"
    assert states["repair_counters"] == states["repair_quotas"] == "upstream_failed"
    assert counters(cql, keyspace) == counters_before and quotas(cql, keyspace) == quotas_before
    alerts = airflow_against_test_node()
    gates = {
        alert["task_id"]: alert["report"]["failed_gates"][0]["gate"] for alert in alerts if alert["dag_id"] == DAG_ID
    }
    assert gates == {"check_counters": "counters_truth_health", "check_quotas": "quotas_truth_health"}


def test_counters_recompute_is_scheduled_on_the_message_repair_of_the_deployment_keyspace(dagbag):
    from james_airflow.schedules import keyspace_asset

    (alias,) = dagbag.get_dag("message_consistency").get_task("report").outlets
    dag = dagbag.get_dag(DAG_ID)
    keyspace = dag.params["keyspace"]
    assert [asset.uri for asset in dag.timetable.asset_condition.objects] == [keyspace_asset(alias, keyspace).uri]
    assert keyspace_asset(alias, keyspace).uri == f"james://{keyspace}/messages_consistent"
    assert "not concurrency-safe" in dag.doc_md and "ADR-0023" in dag.doc_md

    # The deployment's keyspace moves the schedule and the form's default together.
    probe = (
        "from airflow.dag_processing.dagbag import DagBag\n"
        f"dag = DagBag({str(DAGS_FOLDER)!r}).get_dag({DAG_ID!r})\n"
        "print(dag.params['keyspace'], [asset.uri for asset in dag.timetable.asset_condition.objects])\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env={**os.environ, "JAMES_KEYSPACE": "james_prod"},
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "james_prod ['james://james_prod/messages_consistent']"
    assert dag.params.validate()["dry_run"] is False and dag.max_active_runs == 1
