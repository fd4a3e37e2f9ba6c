"""One scan per DAG run: the repair and the verify reuse the scan the check kept in the run's work folder.

The repair works from the check's candidates (re-checked live), so it fixes what the check found and nothing the scan
did not see; the verify re-checks those candidates and a random sample of the keys the check found consistent.
"""

import pytest
from james_consistency.cassandra.schema import create_schema
from james_consistency.engine.run import GateFailed, RunOptions
from james_consistency.errors import OperatorError
from james_consistency.jobs.targets import run_target
from support.messages import break_every_kind, corrupt_the_truth, platform, projection, truth


def run(spark, settings, keyspace, mode, run_dir, target="messages", **options):
    options.setdefault("max_destructive_share", 0.5)
    return run_target(
        spark, settings, RunOptions(target=target, keyspace=keyspace, mode=mode, run_dir=str(run_dir), **options)
    )


def test_check_repair_verify_scan_once(cql, cassandra_settings, spark, new_keyspace, tmp_path):
    keyspace = new_keyspace("onescan")
    create_schema(cql, keyspace, "3.9")
    rows = platform(cql, keyspace, "3.9")
    found = break_every_kind(cql, keyspace, "3.9", rows)
    run_dir = tmp_path / "run"

    check = run(spark, cassandra_settings, keyspace, "check", run_dir, verify_sample_fraction=1.0)
    # Broken after the check: a repair that scanned again would fix it; one that reuses the check's scan does not.
    later = rows[-1]
    cql.execute(
        f"DELETE FROM {keyspace}.messageidtable WHERE mailboxid = %s AND uid = %s", (later["mailboxid"], later["uid"])
    )
    repair = run(spark, cassandra_settings, keyspace, "repair", run_dir, reuse_scan=True)

    assert check["inconsistencies"] == found
    assert repair["status"] == "COMPLETED"
    assert repair["reusedScan"]["runId"] == check["runId"]
    # The figures the check judged are the repair's: it repeats the check's health verdict, naming the check.
    assert [(gate["name"], gate["judged_by_run"]) for gate in check["gates"]] == [("messages_truth_health", "")]
    assert [(gate["name"], gate["judged_by_run"]) for gate in repair["gates"]] == [
        ("messages_truth_health", check["runId"]),
        ("plan_safety", ""),
    ]
    assert repair["inconsistencies"] == found
    assert repair["processedImapUidEntries"] == 30
    assert (repair["addedMessageIdEntries"], repair["updatedMessageIdEntries"], repair["removedMessageIdEntries"]) == (
        2,
        2,
        2,
    )
    after_repair = projection(cql, keyspace)
    assert (later["mailboxid"], later["uid"]) not in after_repair
    assert {key: row for key, row in truth(cql, keyspace).items() if key != (later["mailboxid"], later["uid"])} == (
        after_repair
    )

    # The verify re-checks the 6 candidates and every consistent key (30 truth rows, 4 of them missing or outdated):
    # the later break is among them.
    with pytest.raises(GateFailed) as verify:
        run(spark, cassandra_settings, keyspace, "verify", run_dir, reuse_scan=True)
    report = verify.value.report
    assert (report["verifiedCandidates"], report["verifiedSample"]) == (6, 26)
    assert report["remainingInconsistencies"] == 1
    assert report["inconsistencies"] == {"missing": 1, "outdated": 0, "orphan": 0}
    assert report["remainingSample"][0]["uid"] == later["uid"]
    assert [gate["judged_by_run"] for gate in report["gates"]] == [check["runId"], ""]


def test_a_repair_reusing_a_scan_whose_truth_failed_its_gate_stops_before_writing(
    cql, cassandra_settings, spark, new_keyspace, tmp_path
):
    keyspace = new_keyspace("onescansick")
    create_schema(cql, keyspace, "3.9")
    corrupt_the_truth(cql, keyspace, platform(cql, keyspace, "3.9"))
    before = projection(cql, keyspace)
    run_dir = tmp_path / "run"
    with pytest.raises(GateFailed) as check:
        run(spark, cassandra_settings, keyspace, "check", run_dir)

    with pytest.raises(GateFailed) as repair:
        run(spark, cassandra_settings, keyspace, "repair", run_dir, reuse_scan=True)

    judged = check.value.report["gates"][-1]
    repeated = repair.value.report["gates"][-1]
    assert (repeated["name"], repeated["success"]) == ("messages_truth_health", False)
    assert repeated["judged_by_run"] == check.value.report["runId"]
    assert repeated["failed_expectations"] == judged["failed_expectations"]
    assert repeated["sample_rows"] == judged["sample_rows"] == [judged["sample_rows"][0]]
    assert projection(cql, keyspace) == before


def test_a_repair_judges_the_truth_itself_when_the_check_it_reuses_ran_without_gates(
    cql, cassandra_settings, spark, new_keyspace, tmp_path
):
    keyspace = new_keyspace("onescanungated")
    create_schema(cql, keyspace, "3.9")
    break_every_kind(cql, keyspace, "3.9", platform(cql, keyspace, "3.9"))
    run_dir = tmp_path / "run"
    run(spark, cassandra_settings, keyspace, "check", run_dir)  # judged: its verdict is kept with its scan
    ungated = run(spark, cassandra_settings, keyspace, "check", run_dir, gates_enabled=False)  # a new scan

    repair = run(spark, cassandra_settings, keyspace, "repair", run_dir, reuse_scan=True)

    assert "gates" not in ungated or not ungated["gates"]
    assert repair["reusedScan"]["runId"] == ungated["runId"]
    assert [(gate["name"], gate["judged_by_run"]) for gate in repair["gates"]] == [
        ("messages_truth_health", ""),
        ("plan_safety", ""),
    ]
    assert projection(cql, keyspace) == truth(cql, keyspace)


def test_verify_reusing_the_scan_passes_after_a_repair(cql, cassandra_settings, spark, new_keyspace, tmp_path):
    keyspace = new_keyspace("onescanok")
    create_schema(cql, keyspace, "3.5")
    break_every_kind(cql, keyspace, "3.5", platform(cql, keyspace, "3.5"))
    run_dir = tmp_path / "run"

    run(spark, cassandra_settings, keyspace, "check", run_dir)
    run(spark, cassandra_settings, keyspace, "repair", run_dir, reuse_scan=True)
    verify = run(spark, cassandra_settings, keyspace, "verify", run_dir, reuse_scan=True)

    assert verify["status"] == "COMPLETED"
    assert verify["remainingInconsistencies"] == 0
    assert verify["verifiedCandidates"] == 6
    assert verify["inconsistencies"] == {"missing": 0, "outdated": 0, "orphan": 0}
    assert projection(cql, keyspace) == truth(cql, keyspace)


def test_a_scan_is_reused_only_for_its_own_target_and_keyspace(cql, cassandra_settings, spark, new_keyspace, tmp_path):
    keyspace = new_keyspace("onescanbad")
    create_schema(cql, keyspace, "3.9")
    platform(cql, keyspace, "3.9", mailboxes=1, per_mailbox=3)
    run(spark, cassandra_settings, keyspace, "check", tmp_path / "messages")

    with pytest.raises(OperatorError, match="--reuse-scan needs --run-dir"):
        run_target(spark, cassandra_settings, RunOptions("messages", keyspace, mode="repair", reuse_scan=True))
    with pytest.raises(OperatorError, match="no scan kept in"):
        run(spark, cassandra_settings, keyspace, "repair", tmp_path / "empty", reuse_scan=True)
    with pytest.raises(OperatorError, match=f"holds a scan of messages on {keyspace}, not of deleted"):
        run(spark, cassandra_settings, keyspace, "repair", tmp_path / "messages", target="deleted", reuse_scan=True)
