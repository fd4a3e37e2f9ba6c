"""applicableFlag rebuilt from imapUidTable: missing keywords added; unused ones removed only when asked.

Expected sets are computed here from the truth with plain CQL."""

import threading
import time

import pytest
from james_consistency.engine.run import GateFailed, RunOptions
from james_consistency.jobs.targets import run_target
from james_consistency.projections.flags import FlagOptions
from james_consistency_kit.faults import inject
from support.james_platform import james_platform


def seeded(cql, settings, keyspace, generation):
    james_platform(cql, settings, keyspace, generation)


def used_keywords(cql, keyspace) -> dict:
    used = {}
    for row in cql.execute(f"SELECT mailboxid, userflags FROM {keyspace}.imapuidtable"):
        if row.userflags:
            used.setdefault(row.mailboxid, set()).update(row.userflags)
    return used


def applicable_flags(cql, keyspace) -> dict:
    return {
        row.mailboxid: set(row.userflags)
        for row in cql.execute(f"SELECT mailboxid, userflags FROM {keyspace}.applicableflag")
        if row.userflags
    }


def add_keyword(cql, keyspace, mailbox, keyword):
    cql.execute(
        f"UPDATE {keyspace}.applicableflag SET userflags = userflags + %s WHERE mailboxid = %s", ({keyword}, mailbox)
    )


@pytest.mark.parametrize("generation", ["3.9", "3.5"])
def test_missing_keywords_are_added_and_unused_ones_kept_by_default(
    cql, cassandra_settings, spark, new_keyspace, tmp_path, generation
):
    keyspace = new_keyspace("flags")
    seeded(cql, cassandra_settings, keyspace, generation)
    broken = inject(
        cassandra_settings,
        keyspace=keyspace,
        kind="applicable-flag-missing",
        rate=0.5,
        manifest_path=str(tmp_path / "f"),
    )
    assert broken["count"] > 0
    mailbox = next(iter(used_keywords(cql, keyspace)))
    add_keyword(cql, keyspace, mailbox, "$NoLongerUsed")
    before = applicable_flags(cql, keyspace)

    check = run_target(spark, cassandra_settings, RunOptions("flags", keyspace, mode="check"))
    assert check["inconsistencies"]["missing"] + check["inconsistencies"]["outdated"] == len(
        {row["mailboxId"] for row in broken["rows"]}
    )
    assert check["inconsistencies"]["orphan"] == 0
    assert applicable_flags(cql, keyspace) == before, "the dry run wrote nothing"

    repair = run_target(spark, cassandra_settings, RunOptions("flags", keyspace, mode="repair", allow_destructive=True))

    expected = used_keywords(cql, keyspace)
    expected[mailbox] = expected[mailbox] | {"$NoLongerUsed"}
    assert applicable_flags(cql, keyspace) == expected
    assert repair["status"] == "COMPLETED" and repair["removeUnusedFlags"] is False
    assert repair["removedApplicableFlagEntries"] == 0

    pruned = run_target(
        spark,
        cassandra_settings,
        RunOptions(
            "flags", keyspace, mode="repair", target_options=FlagOptions(remove_unused=True), allow_destructive=True
        ),
    )
    assert applicable_flags(cql, keyspace) == used_keywords(cql, keyspace)
    assert pruned["updatedApplicableFlagEntries"] == 1
    again = run_target(
        spark,
        cassandra_settings,
        RunOptions("flags", keyspace, mode="check", target_options=FlagOptions(remove_unused=True)),
    )
    assert sum(again["inconsistencies"].values()) == 0


def test_keyword_a_user_adds_during_the_run_is_not_removed(cql, cassandra_settings, spark, new_keyspace, tmp_path):
    """With removal on: a keyword the scan saw unused, then set on a message by a user before the re-check, stays."""
    keyspace = new_keyspace("race")
    seeded(cql, cassandra_settings, keyspace, "3.9")
    message = next(iter(cql.execute(f"SELECT * FROM {keyspace}.imapuidtable LIMIT 1")))
    mailbox = message.mailboxid
    add_keyword(cql, keyspace, mailbox, "$Urgent")  # unused when the scan runs
    user_done = threading.Event()

    def user_flags_a_message():
        marker = tmp_path / "run" / "candidates" / "_SUCCESS"
        while not marker.exists():
            time.sleep(0.05)
        flags = set(message.userflags or ()) | {"$Urgent"}
        for table in ("imapuidtable", "messageidtable"):
            cql.execute(
                f"UPDATE {keyspace}.{table} SET userflags = %s WHERE messageid = %s AND mailboxid = %s AND uid = %s"
                if table == "imapuidtable"
                else f"UPDATE {keyspace}.{table} SET userflags = %s WHERE mailboxid = %s AND uid = %s",
                (flags, message.messageid, mailbox, message.uid)
                if table == "imapuidtable"
                else (flags, mailbox, message.uid),
            )
        add_keyword(cql, keyspace, mailbox, "$Urgent")
        user_done.set()

    user = threading.Thread(target=user_flags_a_message, daemon=True)
    user.start()
    options = RunOptions(
        "flags",
        keyspace,
        mode="repair",
        target_options=FlagOptions(remove_unused=True),
        recheck_delay_seconds=4,
        run_dir=str(tmp_path / "run"),
        allow_destructive=True,
    )
    report = run_target(spark, cassandra_settings, options)
    user.join(timeout=5)

    assert user_done.is_set()
    assert "$Urgent" in applicable_flags(cql, keyspace)[mailbox]
    assert report["alreadyConsistentOnRecheck"] == 1
    assert applicable_flags(cql, keyspace) == used_keywords(cql, keyspace)


def test_malformed_truth_stops_before_writing(cql, cassandra_settings, spark, new_keyspace, tmp_path):
    keyspace = new_keyspace("bad")
    seeded(cql, cassandra_settings, keyspace, "3.5")
    inject(
        cassandra_settings,
        keyspace=keyspace,
        kind="applicable-flag-missing",
        rate=0.5,
        manifest_path=str(tmp_path / "f"),
    )
    inject(cassandra_settings, keyspace=keyspace, kind="truth-malformed", rate=0.05, manifest_path=str(tmp_path / "m"))
    before = applicable_flags(cql, keyspace)

    with pytest.raises(GateFailed) as failure:
        run_target(spark, cassandra_settings, RunOptions("flags", keyspace, mode="repair"))

    assert failure.value.report["gates"][0]["name"] == "messages_truth_health"
    assert applicable_flags(cql, keyspace) == before
