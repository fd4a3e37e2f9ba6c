"""The mailbox repair's decisions, run in the Spark executors by the engine's partition applier (`MailboxPolicy`): one
action per finding, written as re-check steps (engine.live) over the store (`store.MailboxStore`: every read at SERIAL,
every write a lightweight transaction conditioned on what it just read). A finding whose state moved since the scan
is left for the next pass (re-diagnosed from a fresh scan), never forced.

The path table is the truth, as in James 3.9.x and master (SolveMailboxInconsistenciesService):

    orphan-mailbox         register its path IF NOT EXISTS; a path taken meanwhile is reported, nothing done
    orphan-path            re-create the mailbox row from the path (its uidvalidity) IF NOT EXISTS, after a SERIAL
                           re-read: the path still registers the id, the row is still absent (policy `recreate`, the
                           default, as James 3.9.x); `recreate-when-referenced` deletes the path when no message
                           references the id, `delete` always does (James 3.9.0, ADR-0020) (mailboxes.options)
    one-id-two-paths       keep the most recently written path (WRITETIME), on a tie the one the mailbox row names
                           (James: the row's path wins when its write time is >= the other's); realign the row,
                           drop the others
    mailbox-path-outdated  realign the mailbox row to the one path that registers its id (its own path is free).
                           James reaches the opposite end here (it registers the row's path, then keeps it as the
                           newest and drops the registration): we keep the registration, which IMAP already shows
    mailbox-registered-elsewhere  realign the mailbox row to the one path that registers its id, its own path being
                           registered to another id (James master's `realignStaleProjection`), also when another row
                           claims that registration (it becomes two ids on one path, see below) and for ids swapped
                           between two paths (each row follows its registration)
    two-ids-one-path       reported with both ids, their message counts and the merge to perform; with `merge`
                           (James's autoMerge), the loser's messages and ACL move into the winner (the id the path
                           registers) only when the loser is registered under no path at all; each moved message gets
                           a uid and a modseq above every one the winner's messages carry, and never takes a uid
                           already given
    path-points-to-another-id  reported only: a row on a path registered to another id, its own id registered
                           nowhere (a ghost; once the registered id's row is back at the path, two ids on one path)
"""

import json
import random
from dataclasses import dataclass, replace

from james_consistency.cassandra.acl_rights import RIGHTS_ORDER
from james_consistency.mailboxes import diagnosis as d
from james_consistency.mailboxes.options import RECREATE, RECREATE_WHEN_REFERENCED
from james_consistency.mailboxes.store import Floor, MailboxStore, PolicyOptions
from james_consistency.projections.acl import MalformedTruth

# Outcomes. The first six changed something; the others did not.
PATH_REGISTERED = "path-registered"
MAILBOX_RECREATED = "mailbox-recreated"
PATH_DELETED = "path-deleted"
KEPT_LATEST_PATH = "kept-latest-path"
MAILBOX_REALIGNED = "mailbox-realigned"
MERGED = "merged"
FIXED = (PATH_REGISTERED, MAILBOX_RECREATED, PATH_DELETED, KEPT_LATEST_PATH, MAILBOX_REALIGNED, MERGED)
REPORTED = "reported"  # a conflict, left for an admin
PATH_TAKEN = "path-taken"  # an orphan mailbox whose path someone registered meanwhile
CHANGED = "changed-since-scan"  # the state moved: left for the next pass
FAILED = "failed"


def _path_text(path: tuple) -> str:
    return ":".join(path)


def _outcome(finding: dict, action: str, detail: dict | None = None, error: str | None = None) -> dict:
    return {
        "kind": finding["kind"],
        "action": action,
        "mailboxId": finding.get("mailboxId"),
        "mailboxPath": finding.get("mailboxPath"),
        "detail": json.dumps(detail or {}, default=str, sort_keys=True),
        "error": error,
    }


def _row_path(finding: dict) -> tuple:
    return tuple(finding[part] for part in d.PATH)


# ---- one action per kind: re-check steps (engine.live) answering the outcome ----------------------------------


def orphan_mailbox(store: MailboxStore, finding: dict, options: PolicyOptions):
    path, mailbox_id = _row_path(finding), finding["mailboxId"]
    row = yield from store.mailbox(mailbox_id)
    if row is None or row.get("path") != path:
        return _outcome(finding, CHANGED, {"mailboxRow": None if row is None else _path_text(row["path"])})
    registered = yield from store.path(path)
    if registered is not None:
        taken = str(registered["mailboxid"])
        return _outcome(finding, CHANGED if taken == mailbox_id else PATH_TAKEN, {"registeredId": taken})
    if not options.write:
        return _outcome(finding, PATH_REGISTERED, {"wouldDo": True})
    if (yield from store.register(path, mailbox_id, row["uidvalidity"])):
        return _outcome(finding, PATH_REGISTERED)
    taken = (yield from store.path(path)) or {}
    return _outcome(finding, PATH_TAKEN, {"registeredId": str(taken.get("mailboxid"))})


def _recreates(policy: str, referenced: bool) -> bool:
    """Whether an orphan path's mailbox row is re-created (else its path is deleted) under the run's policy."""
    return policy == RECREATE or (policy == RECREATE_WHEN_REFERENCED and referenced)


def orphan_path(store: MailboxStore, finding: dict, options: PolicyOptions):
    """James 3.9.x's OrphanMailboxPathDAOEntry, stricter: the path must still register this id and the row must still
    be absent (SERIAL), and the row is created IF NOT EXISTS with the path's uidvalidity (3.5's path table has none:
    a new one, as James's UidValidity.generate())."""
    path, mailbox_id = _row_path(finding), finding["mailboxId"]
    registered = yield from store.path(path)
    if registered is None or str(registered["mailboxid"]) != mailbox_id:
        return _outcome(finding, CHANGED)
    if (yield from store.mailbox(mailbox_id)) is not None:
        return _outcome(finding, CHANGED, {"mailboxRow": "exists"})
    referenced = finding["messages"] > 0 or (yield from store.referenced(mailbox_id))
    detail = {"referencedByMessages": referenced, "messages": finding["messages"]}
    if _recreates(options.orphan_paths, referenced):
        if not options.write:
            return _outcome(finding, MAILBOX_RECREATED, {**detail, "wouldDo": True})
        uidvalidity = registered.get("uidvalidity") or random.randint(1, 2**32 - 1)
        if (yield from store.create_mailbox(mailbox_id, path, uidvalidity)):
            return _outcome(finding, MAILBOX_RECREATED, detail)
        return _outcome(finding, CHANGED, {**detail, "mailboxRow": "created meanwhile"})
    if not options.write:
        return _outcome(finding, PATH_DELETED, {**detail, "wouldDo": True})
    if (yield from store.unregister(path, mailbox_id, registered.get("uidvalidity"))):
        return _outcome(finding, PATH_DELETED, detail)
    return _outcome(finding, CHANGED, detail)


def one_id_two_paths(store: MailboxStore, finding: dict, options: PolicyOptions):
    """James's same-mailbox conflict over every registration at once: the path written last is kept; on equal write
    times the one the mailbox row names (James: `projectionWins = t(row's path) >= t(other)`), then the greatest path
    text, so that a re-run decides alike. The row moves onto the kept path (conditioned on the path it holds), the
    other registrations are dropped (each conditioned on the id)."""
    mailbox_id = finding["mailboxId"]
    row = yield from store.mailbox(mailbox_id)
    row_path = None if row is None else row.get("path")
    current = []
    for entry in finding["paths"]:
        path = (entry["namespace"], entry["user"], entry["name"])
        registered = yield from store.path(path)
        if registered is not None and str(registered["mailboxid"]) == mailbox_id:
            current.append(
                (registered["written"], path == row_path, _path_text(path), path, registered.get("uidvalidity"))
            )
    if len(current) < 2:
        return _outcome(finding, CHANGED, {"stillRegisteredUnder": [entry[2] for entry in current]})
    current.sort(key=lambda entry: entry[:3])
    keep = current[-1][3]
    detail = {"kept": _path_text(keep), "dropped": [entry[2] for entry in current[:-1]]}
    if options.write and row_path is not None and row_path != keep:
        if not (yield from store.move_mailbox_row(mailbox_id, row_path, keep)):
            return _outcome(finding, CHANGED, detail)
    if options.write:
        for *_, path, uidvalidity in current[:-1]:
            yield from store.unregister(path, mailbox_id, uidvalidity)
    return _outcome(finding, KEPT_LATEST_PATH, {**detail, **({} if options.write else {"wouldDo": True})})


def mailbox_path_outdated(store: MailboxStore, finding: dict, options: PolicyOptions):
    """A row at a free path while its id is registered under one other path: the row follows the registration (the
    path table being the truth, and what IMAP shows). James's passes reach the opposite end (the row's path registered
    first, then kept as the newest of two): a deliberate difference."""
    mailbox_id, own = finding["mailboxId"], _row_path(finding)
    entries = finding["paths"]
    target = (entries[0]["namespace"], entries[0]["user"], entries[0]["name"])
    registered = yield from store.path(target)
    row = yield from store.mailbox(mailbox_id)
    if (
        registered is None
        or str(registered["mailboxid"]) != mailbox_id
        or row is None
        or row.get("path") != own
        or (yield from store.path(own)) is not None
    ):
        return _outcome(finding, CHANGED)
    detail = {"from": _path_text(own), "to": _path_text(target)}
    if options.write and not (yield from store.move_mailbox_row(mailbox_id, own, target)):
        return _outcome(finding, CHANGED, detail)
    return _outcome(finding, MAILBOX_REALIGNED, {**detail, **({} if options.write else {"wouldDo": True})})


def mailbox_registered_elsewhere(store: MailboxStore, finding: dict, options: PolicyOptions):
    """James master's `realignStaleProjection`: the row moves onto the one path its id is registered under, while
    its own path stays with the id registered there (a row another id claims at the target is left to the next pass,
    as two ids on one path). James re-reads the path at STRONG and saves the row unconditionally; here every row
    involved is re-read at SERIAL and the move is conditioned on the row's path."""
    mailbox_id, own = finding["mailboxId"], _row_path(finding)
    entries = finding["paths"]
    target = (entries[0]["namespace"], entries[0]["user"], entries[0]["name"])
    registered = yield from store.path(target)
    owner = yield from store.path(own)
    row = yield from store.mailbox(mailbox_id)
    if (
        registered is None
        or str(registered["mailboxid"]) != mailbox_id
        or owner is None
        or str(owner["mailboxid"]) == mailbox_id
        or row is None
        or row.get("path") != own
    ):
        return _outcome(finding, CHANGED)
    detail = {"from": _path_text(own), "to": _path_text(target), "pathOwner": str(owner["mailboxid"])}
    if options.write and not (yield from store.move_mailbox_row(mailbox_id, own, target)):
        return _outcome(finding, CHANGED, detail)
    return _outcome(finding, MAILBOX_REALIGNED, {**detail, **({} if options.write else {"wouldDo": True})})


def merge_plan(finding: dict) -> dict | None:
    """The merge to perform for two ids under one path: the id the path registers wins; every other claimant is a
    loser, merged only if it is registered under no path of the whole table (James's clean ghost looks only in the
    loser's own user's paths). None when no winner is certain."""
    winner = finding.get("registeredId")
    ids = [claimant["mailboxId"] for claimant in finding["claimants"]]
    if winner is None or winner not in ids:
        return None
    losers = [claimant for claimant in finding["claimants"] if claimant["mailboxId"] != winner]
    if any(loser["registrations"] > 0 for loser in losers):
        return None
    return {"mergeDestination": winner, "mergeOrigins": [loser["mailboxId"] for loser in losers]}


def _move_loser_messages(store: MailboxStore, finding: dict, plan: dict):
    """Every message of the losers into the winner, in uid order; how many moved."""
    winner = plan["mergeDestination"]
    messages = sorted(finding.get("loserMessages") or [], key=lambda message: message["uid"])
    # The winner's highest uid and modseq: imapUidTable's from the scan (offline: nothing adds messages since),
    # messageIdTable's re-read now; moved messages are numbered above both whatever the counters say.
    projected = (yield from store.highest_projected_uid(winner)) if messages else 0
    floor = Floor(
        uid=max(finding.get("winnerHighestUid") or 0, projected), modseq=finding.get("winnerHighestModseq") or 0
    )
    moved = 0
    for loser in plan["mergeOrigins"]:
        for message in messages:
            if message["mailboxId"] == loser:
                moved += yield from store.move_message(message["messageId"], loser, message["uid"], winner, floor)
    return moved


def merged_acl(winner: dict[str, str], losers: list[dict[str, str]]) -> dict[str, str]:
    """The winner's ACL entries with every loser's rights added: an entry both hold gets the union of their rights,
    in James's order of rights."""
    merged = dict(winner)
    for acl in losers:
        for key, rights in acl.items():
            union = set(merged.get(key, "")) | set(rights)
            merged[key] = "".join(letter for letter in RIGHTS_ORDER if letter in union)
    return merged


def two_ids_one_path(store: MailboxStore, finding: dict, options: PolicyOptions):
    plan = merge_plan(finding)
    if not options.merge:
        return _outcome(finding, REPORTED, {"merge": plan})
    if plan is None:
        return _outcome(finding, REPORTED, {"merge": None, "why": "no certain winner, or a loser is registered"})
    path, winner = _row_path(finding), plan["mergeDestination"]
    registered = yield from store.path(path)
    if registered is None or str(registered["mailboxid"]) != winner:
        return _outcome(finding, CHANGED, {"merge": plan})
    rows = {}
    for mailbox_id in [winner, *plan["mergeOrigins"]]:
        rows[mailbox_id] = yield from store.mailbox(mailbox_id)
    if any(row is None or row.get("path") != path for row in rows.values()):
        return _outcome(finding, CHANGED, {"merge": plan})
    acls = {}
    try:
        for mailbox_id in rows:
            acls[mailbox_id] = yield from store.acl(mailbox_id)
    except MalformedTruth as unreadable:
        return _outcome(finding, REPORTED, {"merge": plan, "why": f"an ACL cannot be read: {unreadable}"})
    if not options.write:
        return _outcome(finding, MERGED, {"merge": plan, "wouldDo": True})
    moved = yield from _move_loser_messages(store, finding, plan)
    merged = merged_acl(acls[winner][0], [acls[loser][0] for loser in plan["mergeOrigins"]])
    if merged != acls[winner][0] and not (yield from store.write_acl(winner, acls[winner][0], merged, acls[winner][1])):
        return _outcome(finding, FAILED, {"merge": plan, "movedMessages": moved}, "the winner's ACL changed meanwhile")
    for loser in plan["mergeOrigins"]:
        if acls[loser][0]:
            yield from store.write_acl(loser, acls[loser][0], {}, acls[loser][1])  # a deleted mailbox's ACL is empty
        yield from store.delete_mailbox(loser, path, rows[loser].get("uidvalidity"))
    return _outcome(finding, MERGED, {"merge": plan, "movedMessages": moved, "acl": merged})


# The action of each kind a repair fixes; any other kind (path-points-to-another-id) is only reported.
ACTIONS = {
    d.ORPHAN_MAILBOX: orphan_mailbox,
    d.ORPHAN_PATH: orphan_path,
    d.ONE_ID_TWO_PATHS: one_id_two_paths,
    d.MAILBOX_PATH_OUTDATED: mailbox_path_outdated,
    d.MAILBOX_REGISTERED_ELSEWHERE: mailbox_registered_elsewhere,
    d.TWO_IDS_ONE_PATH: two_ids_one_path,
}


def act(store: MailboxStore, finding: dict, options: PolicyOptions):
    """The action of the finding's kind (steps), its outcome; a kind without action is reported, a failure is an
    outcome."""
    action = ACTIONS.get(finding["kind"])
    if action is None:
        return _outcome(finding, REPORTED)
    try:
        return (yield from action(store, finding, options))
    except Exception as error:  # noqa: BLE001 - one finding's failure is reported, the others go on
        return _outcome(finding, FAILED, error=f"{type(error).__name__}: {str(error)[:300]}")


@dataclass(frozen=True)
class MailboxPolicy:
    """The mailbox repair's policy for the engine's partition applier: one action per finding, in its own task
    order (no grouping), its identity the mailbox id and path."""

    options: PolicyOptions
    group_columns: tuple[str, ...] = ()
    order: tuple = ()

    def open(self, session, context) -> "FindingReconciler":
        """The store of one task, writing only when the engine's context says so (a repair, not a check), and
        recording the before-image of every write first."""
        options = replace(self.options, write=context.write)
        return FindingReconciler(MailboxStore(session, options, context.recorder(session)), options)

    def sample(self, finding) -> str:
        return json.dumps({"mailboxId": finding["mailboxId"], "mailboxPath": finding["mailboxPath"]}, sort_keys=True)


@dataclass(frozen=True)
class FindingReconciler:
    """What the engine's applier re-checks each finding (a candidate row) with, in one task."""

    store: MailboxStore
    options: PolicyOptions

    def steps(self, finding_row):
        """The finding's action (steps), answered as (action, detail, error)."""
        outcome = yield from act(self.store, finding_row.asDict(recursive=True), self.options)
        return outcome["action"], outcome["detail"], outcome["error"]
