"""What the approver of the offline mailbox repair reads: the diagnosis as Markdown, sections only when they have
something to say, each list cut at the sample size."""

from james_consistency.mailboxes import diagnosis as d
from james_consistency.mailboxes.report import approval_summary
from james_consistency.report.run_report import parse_report

# What every mailbox check report holds besides its findings.
A_CHECK = {
    "type": "solve-mailbox-inconsistencies",
    "target": "mailboxes",
    "mode": "check",
    "dryRun": True,
    "runId": "20261126T020000-abcdef",
    "status": "PARTIAL",
    "result": "PARTIAL",
}

# A mailbox row whose path no id is registered under (as the path table sees it: nobody).
UNREGISTERED_ENTRY = {"mailboxDaoEntry": {"mailboxId": "a", "mailboxPath": "#private:u:B"}, "mailboxPathDaoEntry": None}


def test_the_approval_form_shows_counts_with_their_action_the_conflicts_orphan_paths_and_a_sample():
    report = {
        **A_CHECK,
        "keyspace": "james",
        "generation": "3.9",
        "processedMailboxEntries": 5,
        "processedMailboxPathEntries": 6,
        "inconsistencies": {d.ORPHAN_PATH: 2, d.TWO_IDS_ONE_PATH: 1},
        "runningOptions": {"orphanPaths": "recreate-when-referenced", "maxIterations": 5, "autoMerge": False},
        "plannedActions": {"path-deleted": 1, "reported": 1},
        "conflicts": [
            {
                "mailboxPath": "#private:u:A",
                "ids": [{"mailboxId": "w", "messages": 5}, {"mailboxId": "l", "messages": 0}],
                "merge": {"mergeDestination": "w", "webadmin": ["POST /cassandra/mailbox/merging {...}"]},
            },
            {"mailboxPath": "#private:u:B", "ids": [], "merge": None, "why": "beyond the sample size"},
        ],
        "conflictingEntries": [
            {
                "mailboxDaoEntry": {"mailboxId": "l", "mailboxPath": "#private:u:A"},
                "mailboxPathDaoEntry": {"mailboxId": "w"},
            },
            UNREGISTERED_ENTRY,
        ],
        "orphanPaths": [
            {"mailboxPath": "#private:u:Gone", "mailboxId": "p2", "messages": 0, "referencedByMessages": False}
        ],
        "sample": [
            {"kind": d.ORPHAN_PATH, "mailboxId": "p2", "mailboxPath": "#private:u:Gone"},
            {"kind": d.TWO_IDS_ONE_PATH, "mailboxId": "w", "mailboxPath": "#private:u:A"},
        ],
    }

    assert approval_summary(parse_report(report), sample_size=1).splitlines() == [
        "**Keyspace** `james` (James 3.9): 5 mailbox rows, 6 path registrations.",
        "",
        "| inconsistency | found | planned action |",
        "|---|---:|---|",
        "| orphan-path | 2 | re-create the mailbox row if messages reference it, else delete the path |",
        "| two-ids-one-path | 1 | reported (merge only when asked) |",
        "",
        "**Planned actions** (re-checked at SERIAL now): path-deleted 1, reported 1",
        "",
        "**Conflicts** (2 conflicting entries, never guessed):",
        "- `#private:u:A` claimed by `w` (5 messages), `l` (0 messages); merge into `w`: "
        "POST /cassandra/mailbox/merging {...}",
        "- mailbox `l` says `#private:u:A`, the path table says `w`",
        "",
        "**Orphan paths** (policy `recreate-when-referenced`):",
        "- `#private:u:Gone` -> `p2`: no message",
        "",
        "**Sample** (1 of 3):",
        "- orphan-path: `p2` `#private:u:Gone`",
    ]


def test_conflicting_entries_alone_are_listed_with_nobody_when_the_path_is_registered_to_no_id():
    report = {
        **A_CHECK,
        "keyspace": "james",
        "inconsistencies": {d.PATH_POINTS_TO_ANOTHER_ID: 1},
        "conflictingEntries": [UNREGISTERED_ENTRY],
    }

    assert approval_summary(parse_report(report)).splitlines()[-3:] == [
        "",
        "**Conflicts** (1 conflicting entries, never guessed):",
        "- mailbox `a` says `#private:u:B`, the path table says `nobody`",
    ]


def test_the_planned_action_of_an_orphan_path_is_the_one_of_the_policy_the_run_has():
    report = {**A_CHECK, "keyspace": "james", "inconsistencies": {d.ORPHAN_PATH: 1}}

    lines = {
        policy: approval_summary(parse_report({**report, "runningOptions": {"orphanPaths": policy}})).splitlines()[4]
        for policy in ("recreate", "delete")
    }

    assert lines == {
        "recreate": "| orphan-path | 1 | re-create the mailbox row from the path (James 3.9.x) |",
        "delete": "| orphan-path | 1 | delete the path (James 3.9.0, ADR-0020) |",
    }
