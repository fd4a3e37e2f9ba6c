"""The mailbox report, with the fields of James's SolveMailboxInconsistencies task (`processedMailboxEntries`,
`processedMailboxPathEntries`, `fixedInconsistencies`, `conflictingEntries`, `errors`, `runningOptions` with
`maxIterations` and `autoMerge`) and what an approver needs: counts per kind, the orphan-path policy, orphan paths
with their message references, conflicts with the merge to perform, a sample.

`errors` stays what every report of this project has, a list (here: the ids of the mailboxes whose action failed),
where James's mailbox task has a count: that count is `failedCount`."""

import json

from james_consistency.mailboxes import diagnosis as d
from james_consistency.mailboxes.options import DELETE, RECREATE, RECREATE_WHEN_REFERENCED
from james_consistency.mailboxes.policy import merge_plan
from james_consistency.report.run_report import RunReport

MERGE_ROUTE = "POST /cassandra/mailbox/merging"


def _entry(path: str | None, mailbox_id: str | None) -> dict | None:
    if mailbox_id is None:
        return None
    return {"mailboxPath": path, "mailboxId": mailbox_id}


def _row_path_text(finding: dict) -> str | None:
    row = finding.get("mailboxRowPath")
    return None if row is None else ":".join(row[part] for part in d.PATH)


def conflicting_entries(findings: list[dict]) -> list[dict]:
    """James's conflictingEntries: the mailbox table's view and the path table's view of each conflict."""
    entries = []
    for finding in findings:
        path = finding["mailboxPath"]
        if finding["kind"] == d.PATH_POINTS_TO_ANOTHER_ID:
            entries.append(
                {
                    "mailboxDaoEntry": _entry(path, finding["mailboxId"]),
                    "mailboxPathDaoEntry": _entry(path, finding["registeredId"]),
                }
            )
        elif finding["kind"] == d.TWO_IDS_ONE_PATH:
            for claimant in finding["claimants"]:
                if claimant["mailboxId"] != finding["registeredId"]:
                    entries.append(
                        {
                            "mailboxDaoEntry": _entry(path, claimant["mailboxId"]),
                            "mailboxPathDaoEntry": _entry(path, finding["registeredId"]),
                        }
                    )
    return entries


def conflict(finding: dict) -> dict:
    """A two-ids-one-path conflict as the approver and the admin see it: both ids, their message counts, and the
    exact merge to perform (or why none is certain)."""
    plan = merge_plan(finding)
    described = {
        "kind": finding["kind"],
        "mailboxPath": finding["mailboxPath"],
        "registeredId": finding["registeredId"],
        "ids": finding["claimants"],
    }
    if plan is None:
        described["merge"] = None
        described["why"] = (
            "no id is registered at the path: no certain winner"
            if finding["registeredId"] is None
            else "a loser is registered under another path: merging could lose it"
        )
    else:
        described["merge"] = {
            **plan,
            "webadmin": [
                f"{MERGE_ROUTE} " + json.dumps({"mergeOrigin": origin, "mergeDestination": plan["mergeDestination"]})
                for origin in plan["mergeOrigins"]
            ],
            "command": "james-consistency repair mailboxes --merge --i-know-what-i-am-doing ALL-SERVICES-ARE-OFFLINE",
        }
    return described


def orphan_path(finding: dict) -> dict:
    return {
        "mailboxPath": finding["mailboxPath"],
        "mailboxId": finding["mailboxId"],
        "messages": finding["messages"],
        "referencedByMessages": finding["messages"] > 0,
    }


def sample_entry(finding: dict) -> dict:
    entry = {
        "kind": finding["kind"],
        "mailboxId": finding["mailboxId"],
        "mailboxPath": finding["mailboxPath"],
        "registeredId": finding["registeredId"],
        "mailboxRowPath": _row_path_text(finding),
        "messages": finding["messages"],
    }
    if finding["paths"]:
        entry["registeredPaths"] = [
            {"mailboxPath": ":".join(p[part] for part in d.PATH), "writetime": p["written"]} for p in finding["paths"]
        ]
    if finding["claimants"]:
        entry["claimants"] = finding["claimants"]
    return entry


def describe(findings_sample: list[dict], counts: dict[str, int]) -> dict:
    """The diagnosis part of a report, from the kind counts and a bounded sample of findings."""
    return {
        "inconsistencies": counts,
        "conflictingEntries": conflicting_entries(findings_sample),
        "orphanPaths": [orphan_path(f) for f in findings_sample if f["kind"] == d.ORPHAN_PATH],
        "conflicts": [conflict(f) for f in findings_sample if f["kind"] == d.TWO_IDS_ONE_PATH],
        "sample": [sample_entry(f) for f in findings_sample],
    }


# What a repair does about an orphan path under each policy (mailboxes.options), as the approver reads it.
ORPHAN_PATH_ACTIONS = {
    RECREATE: "re-create the mailbox row from the path (James 3.9.x)",
    RECREATE_WHEN_REFERENCED: "re-create the mailbox row if messages reference it, else delete the path",
    DELETE: "delete the path (James 3.9.0, ADR-0020)",
}
# What a repair does about each kind, as the approver reads it (an orphan path: under the default policy).
PLANNED_ACTIONS = {
    d.ORPHAN_MAILBOX: "register its path (IF NOT EXISTS)",
    d.ORPHAN_PATH: ORPHAN_PATH_ACTIONS[RECREATE],
    d.ONE_ID_TWO_PATHS: "keep the latest written path, realign the mailbox row",
    d.MAILBOX_PATH_OUTDATED: "realign the mailbox row to its registered path (the path IMAP shows)",
    d.MAILBOX_REGISTERED_ELSEWHERE: "realign the mailbox row to its registered path (no merge)",
    d.TWO_IDS_ONE_PATH: "reported (merge only when asked)",
    d.PATH_POINTS_TO_ANOTHER_ID: "reported, left as it is (a ghost)",
}


def orphan_path_policy(report: RunReport) -> str:
    """The orphan-path policy the run ran with (its report's runningOptions)."""
    return (report.runningOptions or {}).get("orphanPaths") or RECREATE


def planned_action(kind: str, report: RunReport) -> str:
    if kind == d.ORPHAN_PATH:
        return ORPHAN_PATH_ACTIONS.get(orphan_path_policy(report), PLANNED_ACTIONS[kind])
    return PLANNED_ACTIONS[kind]


def approval_summary(report: RunReport, sample_size: int = 10) -> str:
    """Markdown for the approval form: counts per kind, the conflicts, orphan paths and a sample."""
    lines = [
        f"**Keyspace** `{report.keyspace}` (James {report.generation}): "
        f"{report.processedMailboxEntries or 0} mailbox rows, "
        f"{report.processedMailboxPathEntries or 0} path registrations.",
        "",
        "| inconsistency | found | planned action |",
        "|---|---:|---|",
    ]
    for kind, count in report.inconsistencies.items():
        lines.append(f"| {kind} | {count} | {planned_action(kind, report)} |")
    if report.plannedActions:
        planned = ", ".join(f"{action} {count}" for action, count in report.plannedActions.items())
        lines += ["", f"**Planned actions** (re-checked at SERIAL now): {planned}"]
    lines += _conflict_lines(report, sample_size)
    orphans = report.orphanPaths or []
    if orphans:
        lines += ["", f"**Orphan paths** (policy `{orphan_path_policy(report)}`):"]
        for item in orphans[:sample_size]:
            refs = f"{item['messages']} messages reference it" if item["referencedByMessages"] else "no message"
            lines.append(f"- `{item['mailboxPath']}` -> `{item['mailboxId']}`: {refs}")
    sample = report.sample or []
    if sample:
        lines += ["", f"**Sample** ({min(len(sample), sample_size)} of {report.found}):"]
        for item in sample[:sample_size]:
            lines.append(f"- {item['kind']}: `{item['mailboxId']}` `{item['mailboxPath']}`")
    return "\n".join(lines)


def _conflict_lines(report: RunReport, sample_size: int) -> list[str]:
    """The conflicts with their merge (or why none), then each conflicting entry as both tables see it."""
    conflicts, entries = report.conflicts or [], report.conflictingEntries or []
    if not (conflicts or entries):
        return []
    lines = ["", f"**Conflicts** ({len(entries)} conflicting entries, never guessed):"]
    for item in conflicts[:sample_size]:
        ids = ", ".join(f"`{c['mailboxId']}` ({c['messages']} messages)" for c in item["ids"])
        merge = item["merge"]
        to_do = (
            f"merge into `{merge['mergeDestination']}`: {'; '.join(merge['webadmin'])}"
            if merge
            else f"no merge: {item['why']}"
        )
        lines.append(f"- `{item['mailboxPath']}` claimed by {ids}; {to_do}")
    for entry in entries[:sample_size]:
        mailbox, path = entry["mailboxDaoEntry"], entry["mailboxPathDaoEntry"]
        lines.append(
            f"- mailbox `{mailbox['mailboxId']}` says `{mailbox['mailboxPath']}`, "
            f"the path table says `{path['mailboxId'] if path else 'nobody'}`"
        )
    return lines
