"""James as the oracle: a platform written by James's own code (the harness), broken by James's own write paths
under fault injection, repaired by our jobs, then judged by James's own tasks. After our repairs, James's
SolveMessageInconsistencies and SolveMailboxInconsistencies fix nothing, and RecomputeMailboxCounters and
RecomputeCurrentQuotas (where the version has them) change no counter, and the ACLs James's own read path returns
(the mailbox's ACL and UserMailboxACL) equal the truth's.
"""

import json

import pytest
from james_consistency.engine.run import RunOptions
from james_consistency.jobs.targets import run_target
from james_consistency.mailboxes import CONFIRMATION
from james_consistency.mailboxes.options import MailboxOptions
from james_consistency_kit import james_harness
from support.james_platform import james_broken_platform

pytestmark = pytest.mark.end_to_end


def harness(version: str):
    reason = f"the James {version} harness is not built (make setup builds james/harness-{version})"
    return pytest.param(version, marks=pytest.mark.skipif(not james_harness.is_built(version), reason=reason))


# The night's order: messages first (counters and quotas count them), then the per-mailbox projections.
NIGHT = {
    "3.8.1": ("messages", "acl", "aclv2", "deleted", "unseen", "recent", "flags", "counters", "quotas"),
    "3.5.0": ("messages", "acl", "deleted", "unseen", "recent", "flags", "counters", "quotas"),
}
# James's own tasks per version (3.5.0 has no message nor quota task: they came with 3.6.0).
JAMES_TASKS = {"3.8.1": ("messages", "mailboxes", "counters", "quotas"), "3.5.0": ("mailboxes", "counters")}
FIXED_MESSAGE_FIELDS = ("addedMessageIdEntries", "updatedMessageIdEntries", "removedMessageIdEntries")


SPECIAL_NAMES = ("owner", "anybody", "anyone", "authenticated")


def truth_acls(cql, keyspace, version: str) -> dict:
    """{mailbox id: {entry key: set of right letters}} from the ACL truth: 3.8.1 the newAcl of the last acl-updated
    event of each mailbox aggregate in eventstore, 3.5.0 the `acl` row's JSON."""
    if version == "3.5.0":
        rows = cql.execute(f"SELECT id, acl FROM {keyspace}.acl")
        entries = {str(row.id): json.loads(row.acl)["entries"] for row in rows if row.acl}
    else:
        last_events = {}
        for row in cql.execute(f"SELECT aggregateid, eventid, event FROM {keyspace}.eventstore"):
            event = json.loads(row.event) if row.event else {}
            if event.get("type") == "acl-updated" and row.eventid >= last_events.get(row.aggregateid, (-1, None))[0]:
                last_events[row.aggregateid] = (row.eventid, event)
        entries = {key: event["aclDiff"]["newAcl"]["entries"] for key, (_, event) in last_events.items()}
    return {mailbox: {key: set(rights) for key, rights in acl.items()} for mailbox, acl in entries.items()}


def truth_user_rights(acls: dict) -> dict:
    """UserMailboxACL as the truth implies it: the positive entries of plain users, per user then mailbox."""
    rights_of_users = {}
    for mailbox, acl in acls.items():
        for key, rights in acl.items():
            if key.startswith(("$", "-")) or key in SPECIAL_NAMES or not rights:
                continue
            rights_of_users.setdefault(key, {})[mailbox] = rights
    return rights_of_users


def as_sets(read: dict) -> dict:
    """James's read ACL document ({id: {key: "letters"}}, or an error string) with rights as sets of letters."""
    return {
        name: {key: set(rights) for key, rights in entries.items()} if isinstance(entries, dict) else entries
        for name, entries in read.items()
    }


def counter_rows(cql, keyspace) -> dict:
    # James 3.5 to 3.8 keep quotas in currentQuota (quotaCurrentValue came with 3.9's generic quotas).
    counters = {r.mailboxid: (r.count, r.unseen) for r in cql.execute(f"SELECT * FROM {keyspace}.mailboxcounters")}
    quotas = {r.quotaroot: (r.messagecount, r.storage) for r in cql.execute(f"SELECT * FROM {keyspace}.currentquota")}
    return {"counters": counters, "quotas": quotas}


@pytest.mark.parametrize("version", [harness("3.8.1"), harness("3.5.0")])
def test_after_our_repairs_james_own_tasks_find_nothing_left_to_fix(
    cql, cassandra_settings, spark, new_keyspace, version
):
    keyspace = new_keyspace(f"oracle{version.replace('.', '')}")
    on_keyspace = ["--keyspace", keyspace]
    # Lost attachments have no James task to judge them and no repair (they are reported): test_attachment_repair.
    broken = james_broken_platform(cql, cassandra_settings, keyspace, version)
    assert all(broken.values()), f"James's faults left inconsistencies in every target: {broken}"

    for target in NIGHT[version]:
        report = run_target(
            spark, cassandra_settings, RunOptions(target, keyspace, mode="repair", allow_destructive=True)
        )
        assert report["status"] == "COMPLETED", f"{target}: {report.get('errors')}"
    mailboxes = run_target(
        spark,
        cassandra_settings,
        RunOptions("mailboxes", keyspace, mode="repair", target_options=MailboxOptions(CONFIRMATION)),
    )
    assert mailboxes["conflictingEntries"] == []

    read_by_james = james_harness.run(version, "acl", on_keyspace, cassandra_settings)
    truth = truth_acls(cql, keyspace, version)
    read_acls = as_sets(read_by_james["mailboxes"])
    assert read_acls, "James read the ACL of some mailbox"
    expected_acls = {mailbox: truth.get(mailbox, {}) for mailbox in read_acls}
    assert read_acls == expected_acls, "James's read of each mailbox's ACL is the truth's ACL"
    assert as_sets(read_by_james["userRights"]) == truth_user_rights(truth), "James's UserMailboxACL is the truth's"
    counters_before = counter_rows(cql, keyspace)

    for target in JAMES_TASKS[version]:
        solved = james_harness.run(version, "solve", [target, *on_keyspace], cassandra_settings)
        information = solved["additionalInformation"]
        assert solved["result"] == "COMPLETED", f"James's {target} task: {information}"
        if target == "messages":
            fixed = {name: information[name] for name in FIXED_MESSAGE_FIELDS}
            assert fixed == dict.fromkeys(FIXED_MESSAGE_FIELDS, 0), f"James's message task still fixed: {information}"
            assert information["fixedInconsistencies"] == [] and information["errors"] == []
        elif target == "mailboxes":
            assert information["fixedInconsistencies"] == [], f"James's mailbox task still fixed: {information}"
            assert information["conflictingEntries"] == [], f"James's mailbox task sees conflicts: {information}"
        else:
            failed = information.get("failedMailboxes", information.get("failedQuotaRoots"))
            assert failed == [], f"James's {target} task failed: {information}"
    assert counter_rows(cql, keyspace) == counters_before, "James's recomputations changed no counter"
