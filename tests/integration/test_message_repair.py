"""The message projection repair (imapUidTable -> messageIdTable) on the real node with real Spark.

Every assertion on the tables is made with CQL, comparing messageIdTable with imapUidTable row for row.
"""

import re
import threading
import time
from contextlib import contextmanager

import pytest
from james_consistency.cassandra.schema import create_schema
from james_consistency.engine.run import GateFailed, RunOptions
from james_consistency.jobs.targets import run_target
from support.messages import (
    break_every_kind,
    corrupt_the_truth,
    insert,
    message,
    platform,
    projection,
    timeuuid,
    truth,
    write_times,
)

GENERATIONS = ["3.9", "3.5"]


@contextmanager
def session_conf(spark, conf: dict[str, str]):
    """The session with `conf` set meanwhile, then as it was."""
    before = {key: spark.conf.get(key) for key in conf}
    for key, value in conf.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            spark.conf.set(key, value)


def adaptive_execution(spark):
    """The session with Spark's adaptive execution on, as the jobs run (the suite's session turns it off)."""
    return session_conf(spark, {"spark.sql.adaptive.enabled": "true"})


def compiled_plans(spark):
    """The session with whole-stage code generation on, Spark's default as the jobs run (the suite's session compiles
    no code: support/spark_session.py)."""
    return session_conf(spark, {"spark.sql.codegen.wholeStage": "true", "spark.sql.codegen.factoryMode": "FALLBACK"})


def executed_plans(spark) -> dict[int, str]:
    """The physical plans of the latest queries the session ran, by execution id (Spark's SQL status store keeps the
    last thousand)."""
    executions = spark._jsparkSession.sharedState().statusStore().executionsList()
    listed = spark._jvm.scala.collection.JavaConverters.seqAsJavaList(executions)
    return {execution.executionId(): execution.physicalPlanDescription() for execution in listed}


# An operator of a compiled stage: `* Project (4)` in the plan's tree, `Codegen id : 1` in its details.
COMPILED = re.compile(r"[-+] \* \w|Codegen id")


def written_to(plan: str) -> str:
    """The work folder entry a plan writes (its last path part), or '' for a plan that writes none."""
    found = re.search(r"InsertIntoHadoopFsRelationCommand\s*\n?.*?file:\S*?/([\w-]+),", plan, re.DOTALL)
    return found.group(1) if found else ""


def live_read_partitions(monkeypatch) -> dict[str, int]:
    """Filled by the repair: the partitions of the rows each of its direct joins reads the keys of (a task each)."""
    from james_consistency.engine import joined
    from james_consistency.projections import messages

    partitions = {}

    def recorded(name, join):
        def reading(rows, *arguments):
            partitions[name] = rows.rdd.getNumPartitions()
            return join(rows, *arguments)

        return reading

    monkeypatch.setattr(joined, "with_live_projection", recorded("projection", joined.with_live_projection))
    monkeypatch.setattr(messages, "with_live_truth", recorded("truth", messages.with_live_truth))
    return partitions


def run(spark, settings, keyspace, mode="repair", **options):
    options.setdefault("max_destructive_share", 0.5)
    return run_target(spark, settings, RunOptions(target="messages", keyspace=keyspace, mode=mode, **options))


@pytest.mark.parametrize("generation", GENERATIONS)
def test_repair_fixes_every_kind_and_leaves_the_projection_equal_to_the_truth(
    cql, cassandra_settings, spark, new_keyspace, generation, tmp_path, monkeypatch
):
    keyspace = new_keyspace("msg")
    create_schema(cql, keyspace, generation)
    rows = platform(cql, keyspace, generation)
    expected_kinds = break_every_kind(cql, keyspace, generation, rows)
    truth_before = truth(cql, keyspace)
    read_in = live_read_partitions(monkeypatch)

    with adaptive_execution(spark):  # as deployed: the check's candidates end in one file
        report = run(spark, cassandra_settings, keyspace, run_dir=str(tmp_path))

    assert report["status"] == "COMPLETED"
    assert report["generation"] == generation
    assert report["liveReads"] == "projection by partition, truth by direct join"
    assert spark.sparkContext.defaultParallelism == 2
    assert read_in["projection"] == 2, "a task per core read the keys, not one"
    assert read_in["truth"] == 2, "the truth's reads, from the projection's rows, spread alike"
    assert report["inconsistencies"] == expected_kinds
    assert report["processedImapUidEntries"] == 30
    assert report["processedMessageIdEntries"] == 30
    assert report["addedMessageIdEntries"] == 2
    assert report["updatedMessageIdEntries"] == 2
    assert report["removedMessageIdEntries"] == 2
    assert report["errors"] == []
    assert len(report["fixedInconsistencies"]) == 6
    assert set(report["fixedInconsistencies"][0]) == {"mailboxId", "messageId", "uid"}
    assert projection(cql, keyspace) == truth(cql, keyspace)
    assert truth(cql, keyspace) == truth_before, "the source of truth is never written"
    stale = projection(cql, keyspace)[(rows[0]["mailboxid"], 4)]
    assert stale["flagflagged"] is False and stale["userflags"] == frozenset({"$Forwarded"})


def test_bob_stories_are_repaired(cql, cassandra_settings, spark, new_keyspace):
    """The seed documents' stories: BOB's new message is readable over JMAP but not IMAP (messageIdTable write
    failed), and a message BOB read in JMAP still shows unseen in IMAP (flag update failed on messageIdTable)."""
    keyspace = new_keyspace("bob")
    create_schema(cql, keyspace, "3.9")
    inbox = timeuuid(42)
    for uid in range(1, 11):
        insert(cql, keyspace, "imapuidtable", message("3.9", inbox, uid, uid, flagseen=False))
        insert(cql, keyspace, "messageidtable", message("3.9", inbox, uid, uid, flagseen=False))
    insert(cql, keyspace, "imapuidtable", message("3.9", inbox, 11, 11, flagseen=False))  # new mail: no projection
    insert(cql, keyspace, "imapuidtable", message("3.9", inbox, 3, 3, flagseen=True, modseq=999))  # read in JMAP

    report = run(spark, cassandra_settings, keyspace)

    imap_view = projection(cql, keyspace)
    assert (inbox, 11) in imap_view, "IMAP now lists the new message"
    assert imap_view[(inbox, 3)]["flagseen"] is True and imap_view[(inbox, 3)]["modseq"] == 999
    assert report["addedMessageIdEntries"] == 1 and report["updatedMessageIdEntries"] == 1
    assert imap_view == truth(cql, keyspace)


def test_dry_run_counts_but_writes_nothing(cql, cassandra_settings, spark, new_keyspace):
    keyspace = new_keyspace("dry")
    create_schema(cql, keyspace, "3.9")
    rows = platform(cql, keyspace, "3.9")
    expected_kinds = break_every_kind(cql, keyspace, "3.9", rows)
    before, written_before = projection(cql, keyspace), write_times(cql, keyspace)

    report = run(spark, cassandra_settings, keyspace, mode="check")

    assert report["dryRun"] is True and report["status"] == "COMPLETED"
    assert report["inconsistencies"] == expected_kinds
    assert report["plan"]["toAdd"] == 2 and report["plan"]["toDelete"] == 2
    assert report["addedMessageIdEntries"] == report["removedMessageIdEntries"] == 0
    assert projection(cql, keyspace) == before
    assert write_times(cql, keyspace) == written_before


@pytest.mark.parametrize("generation", GENERATIONS)
def test_consistent_keyspace_is_left_untouched(cql, cassandra_settings, spark, new_keyspace, generation):
    keyspace = new_keyspace("ok")
    create_schema(cql, keyspace, generation)
    platform(cql, keyspace, generation)
    written_before = write_times(cql, keyspace)

    report = run(spark, cassandra_settings, keyspace)

    assert report["inconsistencies"] == {"missing": 0, "outdated": 0, "orphan": 0}
    assert report["status"] == "COMPLETED" and report["fixedInconsistencies"] == []
    assert write_times(cql, keyspace) == written_before, "not a single row rewritten"


def test_empty_keyspace_completes_with_nothing_to_do(cql, cassandra_settings, spark, new_keyspace):
    keyspace = new_keyspace("empty")
    create_schema(cql, keyspace, "3.9")

    report = run(spark, cassandra_settings, keyspace)
    verified = run(spark, cassandra_settings, keyspace, mode="verify")

    assert report["status"] == verified["status"] == "COMPLETED"
    assert report["processedImapUidEntries"] == report["processedMessageIdEntries"] == 0
    assert [gate["success"] for gate in verified["gates"]] == [True, True]


def test_user_writes_between_scan_and_fix_are_not_undone(cql, cassandra_settings, spark, new_keyspace, tmp_path):
    keyspace = new_keyspace("race")
    create_schema(cql, keyspace, "3.9")
    rows = platform(cql, keyspace, "3.9")
    break_every_kind(cql, keyspace, "3.9", rows)
    mailbox = rows[0]["mailboxid"]
    user_writes_done = threading.Event()

    def user_session():
        """Acts like James once the scan has produced its candidates, before the delayed re-check."""
        marker = tmp_path / "run" / "candidates" / "_SUCCESS"
        while not marker.exists():
            time.sleep(0.05)
        # BOB flags the outdated message (truth first, then projection, as James writes).
        flagged = dict(rows[3], flagflagged=True, flaganswered=True, modseq=5_000)
        insert(cql, keyspace, "imapuidtable", flagged)
        insert(cql, keyspace, "messageidtable", flagged)
        # BOB deletes the message whose projection row was missing.
        cql.execute(
            f"DELETE FROM {keyspace}.imapuidtable WHERE messageid = %s AND mailboxid = %s AND uid = %s",
            (rows[0]["messageid"], mailbox, 1),
        )
        # A new message takes uid 500, where the scan saw an orphan (the truth write lands first).
        insert(cql, keyspace, "imapuidtable", message("3.9", mailbox, 500, 7_777))
        insert(cql, keyspace, "messageidtable", message("3.9", mailbox, 500, 7_777))
        user_writes_done.set()

    user = threading.Thread(target=user_session, daemon=True)
    user.start()
    report = run(spark, cassandra_settings, keyspace, recheck_delay_seconds=4, run_dir=str(tmp_path / "run"))
    user.join(timeout=5)

    assert user_writes_done.is_set(), "the user writes happened during the run"
    after = projection(cql, keyspace)
    assert after[(mailbox, 4)]["flagflagged"] is True and after[(mailbox, 4)]["modseq"] == 5_000
    assert (mailbox, 1) not in after, "a deleted message is not re-added"
    assert after[(mailbox, 500)]["messageid"] == timeuuid(10_000 + 7_777), "the new message is not deleted"
    assert report["alreadyConsistentOnRecheck"] == 3
    assert after == truth(cql, keyspace)


def test_safety_threshold_stops_a_mass_delete_before_writing(cql, cassandra_settings, spark, new_keyspace):
    keyspace = new_keyspace("mass")
    create_schema(cql, keyspace, "3.9")
    rows = platform(cql, keyspace, "3.9")
    for row in rows[:10]:  # a third of the truth gone: more likely a broken truth than real deletions
        cql.execute(
            f"DELETE FROM {keyspace}.imapuidtable WHERE messageid = %s AND mailboxid = %s AND uid = %s",
            (row["messageid"], row["mailboxid"], row["uid"]),
        )
    before, written_before = projection(cql, keyspace), write_times(cql, keyspace)

    with pytest.raises(GateFailed) as failure:
        run(spark, cassandra_settings, keyspace, max_destructive_share=0.05)

    report = failure.value.report
    assert report["status"] == "FAILED"
    assert report["gates"][-1]["name"] == "plan_safety" and report["gates"][-1]["success"] is False
    assert report["plan"]["toDelete"] == 10
    assert projection(cql, keyspace) == before and write_times(cql, keyspace) == written_before

    allowed = run(spark, cassandra_settings, keyspace, max_destructive_share=0.05, allow_destructive=True)
    assert allowed["removedMessageIdEntries"] == 10
    assert projection(cql, keyspace) == truth(cql, keyspace)


def test_corrupt_truth_fails_the_health_gate_and_writes_nothing(cql, cassandra_settings, spark, new_keyspace):
    keyspace = new_keyspace("corrupt")
    create_schema(cql, keyspace, "3.9")
    corrupt_the_truth(cql, keyspace, platform(cql, keyspace, "3.9"))
    before = projection(cql, keyspace)

    with pytest.raises(GateFailed) as failure:
        run(spark, cassandra_settings, keyspace)

    gate = failure.value.report["gates"][-1]
    assert gate["name"] == "messages_truth_health" and not gate["success"]
    failed = {(f["expectation"], f["target"]) for f in gate["failed_expectations"]}
    assert {target for _, target in failed} == {"uid_below_1", "null_modseq"}
    assert [(row["uid"], row["modseq"]) for row in gate["sample_rows"]] == [(0, None)], "the offending truth row"
    assert projection(cql, keyspace) == before


def test_a_row_that_cannot_be_fixed_makes_the_run_partial_and_the_rest_is_fixed(
    cql, cassandra_settings, spark, new_keyspace
):
    """Two messages of the truth claim one uid: that key fails (reported), every other one is fixed, and once the
    truth is corrected a re-run converges."""
    keyspace = new_keyspace("partial")
    create_schema(cql, keyspace, "3.9")
    rows = platform(cql, keyspace, "3.9")
    break_every_kind(cql, keyspace, "3.9", rows)
    mailbox = rows[0]["mailboxid"]
    intruder = message("3.9", mailbox, 5, 6_666)
    insert(cql, keyspace, "imapuidtable", intruder)

    report = run(spark, cassandra_settings, keyspace, gates_enabled=False)

    assert report["status"] == "PARTIAL"
    assert [(e["mailboxId"], e["uid"]) for e in report["errors"]] == [(str(mailbox), 5)]
    assert "AmbiguousTruth" in report["errors"][0]["error"]
    after = projection(cql, keyspace)
    assert {key: row for key, row in after.items() if key != (mailbox, 5)} == {
        key: row for key, row in truth(cql, keyspace).items() if key != (mailbox, 5)
    }

    cql.execute(
        f"DELETE FROM {keyspace}.imapuidtable WHERE messageid = %s AND mailboxid = %s AND uid = 5",
        (intruder["messageid"], mailbox),
    )
    rerun = run(spark, cassandra_settings, keyspace)
    assert rerun["status"] == "COMPLETED" and rerun["updatedMessageIdEntries"] == 1
    assert projection(cql, keyspace) == truth(cql, keyspace)


def test_verify_after_repair_passes_its_gate(cql, cassandra_settings, spark, new_keyspace):
    keyspace = new_keyspace("verify")
    create_schema(cql, keyspace, "3.9")
    break_every_kind(cql, keyspace, "3.9", platform(cql, keyspace, "3.9"))

    with pytest.raises(GateFailed) as before_repair:
        run(spark, cassandra_settings, keyspace, mode="verify")
    run(spark, cassandra_settings, keyspace)
    after_repair = run(spark, cassandra_settings, keyspace, mode="verify")

    assert before_repair.value.report["remainingInconsistencies"] == 6
    assert before_repair.value.report["gates"][-1]["name"] == "projection_matches_truth"
    assert after_repair["remainingInconsistencies"] == 0 and after_repair["status"] == "COMPLETED"


def test_a_verify_does_not_count_a_key_a_user_is_writing_as_left(
    cql, cassandra_settings, spark, new_keyspace, tmp_path
):
    """James writes imapUidTable, then messageIdTable, tens of milliseconds apart. A verify whose live read of a key
    falls between the two must not count it as left to repair (a scheduled night's gate would fail, an alert at 3 a.m.
    for nothing): a key it finds wrong is read again a moment later, once the user's write has landed."""
    keyspace = new_keyspace("vrace")
    create_schema(cql, keyspace, "3.9")
    rows = platform(cql, keyspace, "3.9")
    flagged = dict(rows[3], flagflagged=True, modseq=5_000)
    insert(cql, keyspace, "imapuidtable", flagged)  # BOB flags a message: James has written the truth, not yet the rest
    live_rows = tmp_path / "run" / "verify-live-rows"

    def projection_write_lands():
        """James's second write, right after the verify has read the key live (its rows kept in the work folder)."""
        while not (live_rows / "_SUCCESS").exists():
            time.sleep(0.02)
        insert(cql, keyspace, "messageidtable", flagged)

    user = threading.Thread(target=projection_write_lands, daemon=True)
    user.start()
    report = run(spark, cassandra_settings, keyspace, mode="verify", run_dir=str(tmp_path / "run"))
    user.join(timeout=5)

    first_read = [row["live_projection"] for row in spark.read.parquet(str(live_rows)).collect()]
    assert [(row["uid"], row["flagflagged"]) for row in first_read] == [(4, False)], "read before James's 2nd write"
    assert report["inconsistencies"]["outdated"] == 1
    assert report["remainingInconsistencies"] == 0 and report["status"] == "COMPLETED"
    assert report["outcomes"] == [{"kind": "outdated", "action": "already_consistent", "count": 1}]
    assert projection(cql, keyspace) == truth(cql, keyspace)


def test_the_scan_runs_compiled_and_the_re_check_of_its_candidates_interpreted(
    cql, cassandra_settings, spark, new_keyspace, tmp_path
):
    """Compiling a query plan pays off over every row of both tables, not over the candidates' few: the scan and its
    diff run as the session compiles them, the re-check and what follows it interpreted, and the session's setting
    is left as it was."""
    keyspace = new_keyspace("compiled")
    create_schema(cql, keyspace, "3.9")
    break_every_kind(cql, keyspace, "3.9", platform(cql, keyspace, "3.9"))
    earlier = max(executed_plans(spark), default=-1)

    with compiled_plans(spark):
        report = run(spark, cassandra_settings, keyspace, run_dir=str(tmp_path))
        setting_after = spark.conf.get("spark.sql.codegen.wholeStage")

    plans = {written_to(plan): plan for execution, plan in executed_plans(spark).items() if execution > earlier}
    assert report["status"] == "COMPLETED" and projection(cql, keyspace) == truth(cql, keyspace)
    assert {"candidates", "outcomes", "before-images"} <= set(plans)
    assert COMPILED.search(plans["candidates"]), "the scan's diff is compiled"
    assert not COMPILED.search(plans["outcomes"]), "the re-check and fixes run interpreted"
    assert not COMPILED.search(plans["before-images"])
    assert setting_after == "true", "the session compiles its own queries as before"
