"""The offline mailbox repair (mailbox <-> mailboxPathV3 / mailboxPathV2) on the real node with real Spark.

Every assertion on the tables is made with CQL: which path registers which id, which mailbox row names which path.
"""

import json
import subprocess
import sys

import pytest
from james_consistency.cassandra.schema import create_schema
from james_consistency.engine.run import RunOptions
from james_consistency.jobs.targets import run_target
from james_consistency.mailboxes.options import MailboxOptions
from support.mailboxes import (
    acl,
    add_mailbox,
    add_mailbox_row,
    break_every_mailbox_kind,
    counter,
    james_add_message,
    james_save_mailbox,
    james_save_path,
    james_set_counter,
    mailbox_rows,
    messages_of,
    paths,
    set_acl,
    write_times,
)
from support.messages import timeuuid

GENERATIONS = ["3.9", "3.5"]
OFFLINE = "ALL-SERVICES-ARE-OFFLINE"
EVERY_KIND = {
    "orphan-mailbox": 1,
    "orphan-path": 2,
    "one-id-two-paths": 1,
    "two-ids-one-path": 1,
    "path-points-to-another-id": 0,
    "mailbox-path-outdated": 1,
    "mailbox-registered-elsewhere": 2,
}


def run(spark, settings, keyspace, mode="repair", **chosen):
    """The mailbox repair's run, with the repair's confirmation and the mailbox options `chosen`."""
    own = MailboxOptions(confirmation=OFFLINE if mode == "repair" else None, **chosen)
    return run_target(spark, settings, RunOptions("mailboxes", keyspace, mode=mode, target_options=own))


def entry(path: str, mailbox_id) -> dict:
    return {"mailboxPath": f"#private:{path}", "mailboxId": str(mailbox_id)}


def two_ids_entry(ids) -> dict:
    return {
        "mailboxDaoEntry": entry("dave:INBOX", ids["dave2"]),
        "mailboxPathDaoEntry": entry("dave:INBOX", ids["dave"]),
    }


@pytest.mark.parametrize("generation", GENERATIONS)
def test_check_reports_every_kind_with_james_fields_and_writes_nothing(
    cql, cassandra_settings, spark, new_keyspace, generation
):
    keyspace = new_keyspace("mbxcheck")
    create_schema(cql, keyspace, generation)
    ids = break_every_mailbox_kind(cql, keyspace, generation)
    before = write_times(cql, keyspace, generation)

    report = run(spark, cassandra_settings, keyspace, mode="check")

    assert report["generation"] == generation
    assert report["mailboxPathTable"] == ("mailboxpathv3" if generation == "3.9" else "mailboxpathv2")
    assert report["inconsistencies"] == EVERY_KIND
    assert report["processedMailboxEntries"] == 9
    assert report["processedMailboxPathEntries"] == 10
    assert report["fixedInconsistencies"] == [] and report["errors"] == []
    assert report["conflictingEntries"] == [two_ids_entry(ids)], "the swapped pair is realigned, not a conflict"
    running = report["runningOptions"]
    assert {name: running[name] for name in ("maxIterations", "autoMerge", "maxPasses", "merge", "orphanPaths")} == {
        "maxIterations": 5, "autoMerge": False, "maxPasses": 5, "merge": False, "orphanPaths": "recreate",
    }  # fmt: skip
    assert report["orphanPaths"] == [
        {"mailboxPath": "#private:alice:Archive", "mailboxId": str(ids["archive"]), "messages": 3,
         "referencedByMessages": True},
        {"mailboxPath": "#private:alice:Old", "mailboxId": str(ids["old"]), "messages": 0,
         "referencedByMessages": False},
    ]  # fmt: skip
    [conflict] = report["conflicts"]
    assert conflict["ids"] == sorted(
        [
            {"mailboxId": str(ids["dave"]), "messages": 3, "registrations": 1},
            {"mailboxId": str(ids["dave2"]), "messages": 2, "registrations": 0},
        ],
        key=lambda item: item["mailboxId"],
    )
    assert conflict["merge"]["mergeDestination"] == str(ids["dave"])
    assert conflict["merge"]["mergeOrigins"] == [str(ids["dave2"])]
    assert report["plannedActions"] == {
        "kept-latest-path": 1,
        "mailbox-realigned": 3,
        "mailbox-recreated": 2,
        "path-registered": 1,
    }
    assert report["nothingToDo"] is False and report["status"] == "PARTIAL"
    assert [gate["name"] for gate in report["gates"]] == ["mailbox_health", "mailbox_nothing_to_do"]
    assert write_times(cql, keyspace, generation) == before, "a check writes nothing"


@pytest.mark.parametrize("generation", GENERATIONS)
def test_repair_fixes_every_kind_leaves_conflicts_and_a_second_run_changes_nothing(
    cql, cassandra_settings, spark, new_keyspace, generation
):
    keyspace = new_keyspace("mbxrepair")
    create_schema(cql, keyspace, generation)
    ids = break_every_mailbox_kind(cql, keyspace, generation)

    report = run(spark, cassandra_settings, keyspace)

    assert report["inconsistencies"] == EVERY_KIND
    assert report["remaining"] == {kind: 0 for kind in EVERY_KIND} | {"two-ids-one-path": 1}
    assert report["fixedCount"] == 7 and report["failedCount"] == 0 and report["errors"] == []
    assert sorted(report["fixedInconsistencies"]) == sorted(
        str(ids[role]) for role in ("orphan", "archive", "old", "work", "frank", "loopa", "loopb")
    )
    assert report["conflictingEntries"] == [two_ids_entry(ids)]
    assert report["status"] == "PARTIAL", "conflicts are left for an admin, as James reports them"
    assert [item["pass"] for item in report["passes"]] == [1]

    rows, registered = mailbox_rows(cql, keyspace), paths(cql, keyspace, generation)
    # orphan mailbox: its path is registered again.
    assert registered["alice:Drafts"] == ids["orphan"]
    # orphan paths: the mailbox row is back, whether messages reference it or not (James 3.9.x): no folder is lost.
    assert rows[ids["archive"]] == "alice:Archive" and registered["alice:Archive"] == ids["archive"]
    assert rows[ids["old"]] == "alice:Old" and registered["alice:Old"] == ids["old"]
    # one id under two paths: the later path wins, the row follows it, the other path is dropped.
    assert rows[ids["work"]] == "carol:Work-renamed" and registered["carol:Work-renamed"] == ids["work"]
    assert "carol:Work" not in registered
    # a row whose id is registered under another (free) path follows its registration.
    assert rows[ids["frank"]] == "frank:New" and registered["frank:New"] == ids["frank"]
    # the conflict is never guessed: two ids on dave's INBOX stay as they were.
    assert rows[ids["dave"]] == rows[ids["dave2"]] == "dave:INBOX" and registered["dave:INBOX"] == ids["dave"]
    # erin's swapped pair: each row follows its registration (the path table, what IMAP shows, is left as it is).
    assert rows[ids["loopa"]] == "erin:B" and rows[ids["loopb"]] == "erin:A"
    assert registered["erin:A"] == ids["loopb"] and registered["erin:B"] == ids["loopa"]
    assert rows[ids["consistent"]] == "bob:INBOX" and registered["bob:INBOX"] == ids["consistent"]

    written = write_times(cql, keyspace, generation)
    again = run(spark, cassandra_settings, keyspace)

    assert again["inconsistencies"] == report["remaining"]
    assert again["fixedCount"] == 0 and again.get("passes") == []
    assert again["conflictingEntries"] == report["conflictingEntries"]
    assert write_times(cql, keyspace, generation) == written, "a second run writes nothing"
    verified = run(spark, cassandra_settings, keyspace, mode="verify")
    assert verified["remainingFixable"] == 0
    assert [gate["success"] for gate in verified["gates"]] == [True, True]


@pytest.mark.parametrize("generation", GENERATIONS)
def test_merge_moves_the_losers_messages_and_acl_into_the_registered_id(
    cql, cassandra_settings, spark, new_keyspace, generation
):
    keyspace = new_keyspace("mbxmerge")
    create_schema(cql, keyspace, generation)
    ids = break_every_mailbox_kind(cql, keyspace, generation)
    set_acl(cql, keyspace, generation, ids["dave"], {"bob": "lr"})
    set_acl(cql, keyspace, generation, ids["dave2"], {"bob": "w", "carol": "l"})
    loser_messages = {
        row.messageid
        for row in cql.execute(f"SELECT messageid, mailboxid FROM {keyspace}.imapuidtable")
        if row.mailboxid == ids["dave2"]
    }

    report = run(spark, cassandra_settings, keyspace, merge=True)

    assert report["fixedCount"] == 8 and report["failedCount"] == 0
    merged = [fix for fix in report["fixes"] if fix["action"] == "merged"]
    assert merged[0]["detail"]["movedMessages"] == 2
    assert report["conflictingEntries"] == [] and report["status"] == "COMPLETED"
    assert "james-consistency repair counters --keyspace " + keyspace in report["followUp"]
    rows = mailbox_rows(cql, keyspace)
    assert ids["dave2"] not in rows and rows[ids["dave"]] == "dave:INBOX"
    truth = {
        (row.uid, row.messageid)
        for row in cql.execute(f"SELECT messageid, mailboxid, uid FROM {keyspace}.imapuidtable")
        if row.mailboxid in (ids["dave"], ids["dave2"])
        for _ in [row]
        if row.mailboxid == ids["dave"] or pytest.fail("a message left in the merged-away mailbox")
    }
    assert sorted(uid for uid, _ in truth) == [1, 2, 3, 4, 5], "moved messages get the winner's next uids"
    assert {message for uid, message in truth if uid > 3} == loser_messages
    projection = {
        (row.uid, row.messageid)
        for row in cql.execute(f"SELECT mailboxid, uid, messageid FROM {keyspace}.messageidtable WHERE mailboxid = %s",
                               (ids["dave"],))
    }  # fmt: skip
    assert projection == truth
    assert (
        cql.execute(f"SELECT nextuid FROM {keyspace}.messagecounter WHERE mailboxid = %s", (ids["dave"],)).one().nextuid
        == 5
    )
    assert acl(cql, keyspace, generation, ids["dave"]) == {"bob": "lrw", "carol": "l"}


@pytest.mark.parametrize(("generation", "merge"), [("3.9", False), ("3.9", True), ("3.5", False)])
def test_a_row_squatting_a_path_while_its_id_is_registered_elsewhere_is_realigned_in_one_run_and_so_is_a_loop(
    cql, cassandra_settings, spark, new_keyspace, generation, merge
):
    """James master's fixMailboxInconsistenciesShouldRealignLoserInsteadOfMergingWhenLoserIsRegisteredElsewhere: rows
    id1@abc and id2@abc, paths abc -> id2 and xyz -> id1. Beside it, two ids swapped between two paths (A -> loopb,
    B -> loopa), whose rows also name a path registered to another id: each row follows its registration, as James
    master's phase 2 realigns them."""
    keyspace = new_keyspace("mbxrealign")
    create_schema(cql, keyspace, generation)
    id1, id2, loopa, loopb = (timeuuid(n) for n in (700, 701, 702, 703))
    james_save_mailbox(cql, keyspace, id1, "user", "abc")
    james_save_mailbox(cql, keyspace, id2, "user", "abc", uidvalidity=9)
    james_save_path(cql, keyspace, generation, "user", "abc", id2, uidvalidity=9)
    james_save_path(cql, keyspace, generation, "user", "xyz", id1)
    kept = james_add_message(cql, keyspace, generation, id1, 1)
    james_save_mailbox(cql, keyspace, loopa, "erin", "A")
    james_save_mailbox(cql, keyspace, loopb, "erin", "B")
    james_save_path(cql, keyspace, generation, "erin", "A", loopb)
    james_save_path(cql, keyspace, generation, "erin", "B", loopa)

    report = run(spark, cassandra_settings, keyspace, merge=merge)

    # id1 follows its registration; abc stays with id2; the swapped rows follow theirs; no path moves.
    rows, registered = mailbox_rows(cql, keyspace), paths(cql, keyspace, generation)
    assert rows == {id1: "user:xyz", id2: "user:abc", loopa: "erin:B", loopb: "erin:A"}
    assert registered == {"user:abc": id2, "user:xyz": id1, "erin:A": loopb, "erin:B": loopa}
    assert messages_of(cql, keyspace, "imapuidtable", id1) == {1: (kept["messageid"], kept["modseq"])}
    assert messages_of(cql, keyspace, "messageidtable", id1) == {1: (kept["messageid"], kept["modseq"])}
    row = cql.execute(f"SELECT uidvalidity FROM {keyspace}.mailbox WHERE id = %s", (id1,)).one()
    assert row.uidvalidity == 7, "the realigned row keeps its uid validity"
    # Reported as James master reports it with autoMerge: fixes, no conflicting entry.
    assert report["inconsistencies"]["mailbox-registered-elsewhere"] == 3
    assert report["inconsistencies"]["two-ids-one-path"] == 0, "id1 is not a ghost of abc to merge"
    assert report["inconsistencies"]["path-points-to-another-id"] == 0
    assert [item["pass"] for item in report["passes"]] == [1] and report["fixedCount"] == 3
    assert sorted(report["fixedInconsistencies"]) == sorted(map(str, (id1, loopa, loopb)))
    assert report["failedCount"] == 0
    assert {fix["action"] for fix in report["fixes"]} == {"mailbox-realigned"}
    assert {fix["mailboxId"]: fix["detail"] for fix in report["fixes"]} == {
        str(id1): {"from": "#private:user:abc", "to": "#private:user:xyz", "pathOwner": str(id2)},
        str(loopa): {"from": "#private:erin:A", "to": "#private:erin:B", "pathOwner": str(loopb)},
        str(loopb): {"from": "#private:erin:B", "to": "#private:erin:A", "pathOwner": str(loopa)},
    }
    assert "followUp" not in report, "nothing was merged"
    assert report["remaining"] == {kind: 0 for kind in EVERY_KIND}
    assert report["conflictingEntries"] == [] and report["status"] == "COMPLETED"

    written = write_times(cql, keyspace, generation)
    again = run(spark, cassandra_settings, keyspace, merge=merge)
    assert again["fixedCount"] == 0 and again["conflictingEntries"] == []
    assert write_times(cql, keyspace, generation) == written


def test_a_row_realigned_onto_a_path_a_ghost_squats_leaves_two_ids_there_which_the_next_pass_merges(
    cql, cassandra_settings, spark, new_keyspace
):
    """James master's order: id1's stale row (at abc, registered to id2) is realigned onto xyz, its registration,
    although ghost's row claims xyz; the next pass finds id1 and the ghost (registered nowhere) on xyz and, with
    merge (James's autoMerge), merges the ghost into id1."""
    keyspace = new_keyspace("mbxghost")
    create_schema(cql, keyspace, "3.9")
    id1, id2, ghost = (timeuuid(n) for n in (730, 731, 732))
    james_save_mailbox(cql, keyspace, id1, "user", "abc")
    james_save_mailbox(cql, keyspace, id2, "user", "abc")
    james_save_mailbox(cql, keyspace, ghost, "user", "xyz")
    james_save_path(cql, keyspace, "3.9", "user", "abc", id2)
    james_save_path(cql, keyspace, "3.9", "user", "xyz", id1)
    moved = james_add_message(cql, keyspace, "3.9", ghost, 1)["messageid"]

    report = run(spark, cassandra_settings, keyspace, merge=True)

    assert report["inconsistencies"] == {kind: 0 for kind in EVERY_KIND} | {
        "mailbox-registered-elsewhere": 1,
        "path-points-to-another-id": 1,
    }
    assert [(item["pass"], item["actions"]) for item in report["passes"]] == [
        (1, {"mailbox-realigned": 1}),
        (2, {"merged": 1}),
    ]
    assert mailbox_rows(cql, keyspace) == {id1: "user:xyz", id2: "user:abc"}
    assert paths(cql, keyspace, "3.9") == {"user:abc": id2, "user:xyz": id1}
    assert [messageid for messageid, _ in messages_of(cql, keyspace, "imapuidtable", id1).values()] == [moved]
    assert report["conflictingEntries"] == [] and report["status"] == "COMPLETED"


@pytest.mark.parametrize("generation", GENERATIONS)
def test_a_merge_never_overwrites_a_uid_of_the_winner_when_its_counter_lags(
    cql, cassandra_settings, spark, new_keyspace, generation
):
    """The winner holds uids 1..5, but its messageCounter (and modseq) went back to 2: James's CassandraUidProvider
    would hand out 3 and 4 again, and CassandraMessageIdDAO's upsert would replace the winner's messages there."""
    keyspace = new_keyspace("mbxuids")
    create_schema(cql, keyspace, generation)
    winner, loser = timeuuid(710), timeuuid(711)
    james_save_path(cql, keyspace, generation, "dave", "INBOX", winner)
    james_save_mailbox(cql, keyspace, winner, "dave", "INBOX")
    james_save_mailbox(cql, keyspace, loser, "dave", "INBOX")
    for number in range(1, 6):
        james_add_message(cql, keyspace, generation, winner, number)
    moved = {james_add_message(cql, keyspace, generation, loser, 100 + number)["messageid"] for number in (1, 2)}
    james_set_counter(cql, keyspace, "messageCounter", "nextUid", winner, 2)
    james_set_counter(cql, keyspace, "modseq", "nextModseq", winner, 2)
    truth_before = messages_of(cql, keyspace, "imapuidtable", winner)
    projection_before = messages_of(cql, keyspace, "messageidtable", winner)
    assert sorted(truth_before) == [1, 2, 3, 4, 5] and projection_before == truth_before

    report = run(spark, cassandra_settings, keyspace, merge=True)

    assert report["failedCount"] == 0 and report["errors"] == []
    [merged] = [fix for fix in report["fixes"] if fix["action"] == "merged"]
    assert merged["detail"]["movedMessages"] == 2
    truth = messages_of(cql, keyspace, "imapuidtable", winner)
    projection = messages_of(cql, keyspace, "messageidtable", winner)
    assert {uid: truth[uid] for uid in truth_before} == truth_before, "no message of the winner was touched"
    assert {uid: projection[uid] for uid in truth_before} == truth_before, "no uid of the winner was overwritten"
    assert sorted(truth) == [1, 2, 3, 4, 5, 6, 7], "each uid once: the moved messages above every existing one"
    assert {truth[uid][0] for uid in (6, 7)} == moved and projection == truth
    assert min(truth[uid][1] for uid in (6, 7)) > max(modseq for _, modseq in truth_before.values())
    assert counter(cql, keyspace, "messagecounter", "nextuid", winner) == 7, "the counter ends at the highest uid"
    assert counter(cql, keyspace, "modseq", "nextmodseq", winner) == max(modseq for _, modseq in truth.values())
    assert messages_of(cql, keyspace, "imapuidtable", loser) == {} and loser not in mailbox_rows(cql, keyspace)


@pytest.mark.parametrize("policy", [None, "delete"], ids=["by-default", "deleted-when-asked"])
def test_an_unreferenced_orphan_path_keeps_its_folder_by_default_and_is_deleted_only_when_asked(
    cql, cassandra_settings, spark, new_keyspace, policy
):
    """Two creates interrupted after the path was registered (James writes the path, then the row): an empty folder
    and one a message was delivered to. James 3.9.x re-creates both rows; James 3.9.0 deleted both paths."""
    keyspace = new_keyspace("mbxorphan")
    create_schema(cql, keyspace, "3.9")
    empty, used = timeuuid(720), timeuuid(721)
    james_save_path(cql, keyspace, "3.9", "gus", "Empty", empty, uidvalidity=41)
    james_save_path(cql, keyspace, "3.9", "gus", "Used", used, uidvalidity=42)
    james_add_message(cql, keyspace, "3.9", used, 1)
    chosen = {} if policy is None else {"orphan_paths": policy}

    check = run(spark, cassandra_settings, keyspace, mode="check", **chosen)
    report = run(spark, cassandra_settings, keyspace, **chosen)

    rows, registered = mailbox_rows(cql, keyspace), paths(cql, keyspace, "3.9")
    if policy is None:
        assert check["plannedActions"] == {"mailbox-recreated": 2}
        assert report["runningOptions"]["orphanPaths"] == "recreate"
        assert rows == {empty: "gus:Empty", used: "gus:Used"}, "both folders stay, the empty one too"
        assert registered == {"gus:Empty": empty, "gus:Used": used}
        uidvalidity = {
            row.id: row.uidvalidity for row in cql.execute(f"SELECT id, uidvalidity FROM {keyspace}.mailbox")
        }
        assert uidvalidity == {empty: 41, used: 42}, "the rows take the uid validity of their path"
    else:
        assert check["plannedActions"] == {"path-deleted": 2}
        assert report["runningOptions"]["orphanPaths"] == "delete"
        assert rows == {} and registered == {}, "deleted when asked, even the folder holding a message"
    assert report["fixedCount"] == 2 and report["status"] == "COMPLETED"


def test_an_orphan_mailbox_whose_path_was_taken_meanwhile_is_reported_and_left(cql, cassandra_settings, new_keyspace):
    """The policy re-reads at SERIAL just before acting: a path registered between the scan and the fix wins."""
    from cassandra.query import dict_factory
    from james_consistency.cassandra.cql import close, connect
    from james_consistency.engine.live import run_steps
    from james_consistency.mailboxes import policy, store
    from support.messages import timeuuid

    keyspace = new_keyspace("mbxrace")
    create_schema(cql, keyspace, "3.9")
    orphan, newcomer = timeuuid(900), timeuuid(901)
    add_mailbox_row(cql, keyspace, orphan, "gus", "Lists")
    finding = {"kind": "orphan-mailbox", "mailboxId": str(orphan), "namespace": "#private", "user": "gus",
               "name": "Lists", "mailboxPath": "#private:gus:Lists", "messages": 0}  # fmt: skip
    add_mailbox(cql, keyspace, "3.9", newcomer, "gus", "Lists")  # the user created it again meanwhile
    before = write_times(cql, keyspace, "3.9")

    session = connect(cassandra_settings, row_factory=dict_factory)
    try:
        options = store.PolicyOptions(settings=cassandra_settings, keyspace=keyspace, generation="3.9")
        outcome = run_steps(session, policy.act(store.MailboxStore(session, options), finding, options))
    finally:
        close(session)

    assert outcome["action"] == "path-taken"
    assert json.loads(outcome["detail"]) == {"registeredId": str(newcomer)}
    assert paths(cql, keyspace, "3.9")["gus:Lists"] == newcomer
    assert write_times(cql, keyspace, "3.9") == before


def cli(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "james_consistency_kit.cli", *arguments], capture_output=True, text=True, timeout=600
    )


@pytest.mark.parametrize("confirmation", [None, "yes", "all-services-are-offline"])
def test_repair_refuses_without_the_typed_confirmation(cql, cassandra_node, new_keyspace, confirmation):
    keyspace = new_keyspace("mbxrefuse")
    create_schema(cql, keyspace, "3.9")
    break_every_mailbox_kind(cql, keyspace, "3.9")
    before = write_times(cql, keyspace, "3.9")
    extra = [] if confirmation is None else ["--i-know-what-i-am-doing", confirmation]

    result = cli("repair", "mailboxes", "--keyspace", keyspace, "--port", str(cassandra_node.native_port), *extra)

    assert result.returncode == 2
    assert "--i-know-what-i-am-doing ALL-SERVICES-ARE-OFFLINE" in result.stderr
    assert "SMTP, IMAP and JMAP" in result.stderr
    assert write_times(cql, keyspace, "3.9") == before


@pytest.mark.end_to_end
def test_the_command_line_checks_then_repairs_through_spark_submit_and_its_undo_finds_the_run_dir(
    cql, cassandra_node, new_keyspace, tmp_path
):
    keyspace = new_keyspace("mbxcli")
    create_schema(cql, keyspace, "3.5")
    ids = break_every_mailbox_kind(cql, keyspace, "3.5")
    port = str(cassandra_node.native_port)
    run_dir = tmp_path / "run"

    checked = cli("check", "mailboxes", "--keyspace", keyspace, "--port", port, "--report", str(tmp_path / "c.json"))
    repaired = cli(
        "repair", "mailboxes", "--keyspace", keyspace, "--port", port, "--report", str(tmp_path / "r.json"),
        "--run-dir", str(run_dir), "--i-know-what-i-am-doing", OFFLINE,
    )  # fmt: skip

    assert checked.returncode == 0, checked.stderr[-2000:]
    assert json.loads((tmp_path / "c.json").read_text())["inconsistencies"] == EVERY_KIND
    assert repaired.returncode == 0, repaired.stderr[-2000:]
    assert "mailboxes repair on " + keyspace in repaired.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["fixedCount"] == 7 and len(report["conflictingEntries"]) == 1
    assert paths(cql, keyspace, "3.5")["alice:Drafts"] == ids["orphan"]
    # Its work and before-images are in --run-dir, where `undo --run-dir` finds them (a dry run: nothing written).
    assert report["workDir"] == str(run_dir) and report["beforeImages"]["path"].startswith(str(run_dir))
    written = write_times(cql, keyspace, "3.5")
    undo = cli("undo", "--run-dir", str(run_dir), "--port", port, "--report", str(tmp_path / "u.json"))
    assert undo.returncode == 0, undo.stderr[-2000:]
    planned = json.loads((tmp_path / "u.json").read_text())
    assert (planned["undoneRunId"], planned["undoneTarget"], planned["dryRun"]) == (report["runId"], "mailboxes", True)
    assert planned["images"] == report["beforeImages"]["counts"] and {"mailbox", "mailboxpathv2"} <= set(
        planned["undoPlan"]
    )
    assert write_times(cql, keyspace, "3.5") == written
