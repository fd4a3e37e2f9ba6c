"""The repair policy, run in the Spark executors by the engine's partition applier (`MailboxPolicy`): one action per
finding, written as re-check steps (engine.live), each re-reading the current state at SERIAL just before it writes,
every write a lightweight transaction conditioned on what it just read. A finding
whose state moved since the scan is left for the next pass (re-diagnosed from a fresh scan), never forced.

    orphan-mailbox         register its path IF NOT EXISTS; a path taken meanwhile is reported, nothing done
    orphan-path            re-create the mailbox row when messages still reference the id (James master), otherwise
                           delete the path (ADR-0020) so the user can create it again (option `orphan_paths`)
    one-id-two-paths       keep the most recently written path (WRITETIME), realign the mailbox row, drop the others
    mailbox-path-outdated  realign the mailbox row to the one path that registers its id (its own path is free)
    mailbox-registered-elsewhere  realign the mailbox row to the one path that registers its id, which no row claims
                           (its own path is registered to another id): James master's "realign the loser instead
                           of merging", in the same pass, merge or not
    two-ids-one-path       reported with both ids, their message counts and the merge to perform; with `merge`,
                           the loser's messages and ACL move into the winner (the id the path registers) only when
                           the loser is registered under no path at all; each moved message gets a uid and a modseq
                           above every one the winner's messages carry, and never takes a uid already given
    path-points-to-another-id  reported only (a loop of swapped ids stays as it is)
"""

import json
import random
import uuid
from dataclasses import dataclass, replace

from james_consistency.cassandra.acl_rights import RIGHTS_ORDER
from james_consistency.cassandra.consistency_levels import DEFAULT_CONSISTENCY_LEVEL
from james_consistency.cassandra.cql import CassandraSettings
from james_consistency.engine import before_images
from james_consistency.engine.before_images import Recorder
from james_consistency.engine.live import Query, one, prepared
from james_consistency.mailboxes import diagnosis as d
from james_consistency.projections.acl import MalformedTruth, parse_acl

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

# A value a compare-and-set generator (messageCounter, modseq) handed out: recorded, never taken back by an undo
# (James never gives a uid or a modseq twice).
GENERATED = "generated"
PATH_KEY = ("namespace", "user", "mailboxname")

RECREATE_WHEN_REFERENCED = "recreate-when-referenced"
DELETE = "delete"
ORPHAN_PATH_POLICIES = (RECREATE_WHEN_REFERENCED, DELETE)


@dataclass(frozen=True)
class PolicyOptions:
    settings: CassandraSettings
    keyspace: str
    generation: str
    orphan_paths: str = RECREATE_WHEN_REFERENCED
    merge: bool = False
    write: bool = True
    read_consistency: str = "SERIAL"
    write_consistency: str = DEFAULT_CONSISTENCY_LEVEL


def _path_text(path: tuple) -> str:
    return ":".join(path)


class MailboxStore:
    """The mailbox, path, message and ACL tables of one keyspace, read at SERIAL and written with LWT. Every method is
    a re-check step (engine.live): `row = yield from store.mailbox(id)`, so the engine's applier runs the actions."""

    def __init__(self, session, options: PolicyOptions, recorder: Recorder | None = None):
        self.session = session
        self.options = options
        self.recorder = recorder
        ks = options.keyspace
        self.v3 = options.generation == "3.9"
        self.path_table_name = "mailboxpathv3" if self.v3 else "mailboxpathv2"
        self.path_table = f"{ks}.{self.path_table_name}"
        self.ks = ks

    def _recorded(self, table: str, action: str, key: dict, before: dict | None, written: dict | None):
        """Steps: the before-image of the write that follows (engine.before_images), when the run records them."""
        if self.recorder is not None:
            yield from self.recorder.record(table, before_images.LWT, action, key, before, written, None)

    def _path_row(self, path: tuple, mailbox_id, uidvalidity=None) -> dict:
        row = {"namespace": path[0], "user": path[1], "mailboxname": path[2], "mailboxid": _id(mailbox_id)}
        return {**row, "uidvalidity": uidvalidity} if self.v3 else row

    @staticmethod
    def _mailbox_row(mailbox_id, path: tuple, uidvalidity=None) -> dict:
        row = {"id": _id(mailbox_id), "mailboxbase": {"namespace": path[0], "user": path[1]}, "name": path[2]}
        return row if uidvalidity is None else {**row, "uidvalidity": uidvalidity}

    def _rows(self, cql: str, values: list, consistency: str | None = None):
        statement = prepared(self.session, cql, consistency or self.options.write_consistency)
        return (yield Query(statement, values))

    def _read(self, cql: str, values: list):
        return one((yield from self._rows(cql, values, self.options.read_consistency)))

    def _applied(self, cql: str, values: list):
        return bool(one((yield from self._rows(cql, values)))["[applied]"])

    def steps(self, finding_row):
        """The engine's re-check of one finding (a candidate row): its action, as (action, detail, error)."""
        outcome = yield from act(self, finding_row.asDict(recursive=True), self.options)
        return outcome["action"], outcome["detail"], outcome["error"]

    # ---- reads, SERIAL ---------------------------------------------------------------------------------------

    def mailbox(self, mailbox_id: str):
        row = yield from self._read(
            f"SELECT id, mailboxbase, name, uidvalidity FROM {self.ks}.mailbox WHERE id = ?", [_id(mailbox_id)]
        )
        if row is None or row["mailboxbase"] is None:
            return row
        return {**row, "path": (row["mailboxbase"].namespace, row["mailboxbase"].user, row["name"])}

    def path(self, path: tuple):
        extra = ", uidvalidity" if self.v3 else ""
        return (
            yield from self._read(
                f"SELECT mailboxid, WRITETIME(mailboxid) AS written{extra} FROM {self.path_table} "
                "WHERE namespace = ? AND user = ? AND mailboxname = ?",
                list(path),
            )
        )

    def highest_projected_uid(self, mailbox_id: str):
        """The highest uid messageIdTable holds for the mailbox (0 when none): its partition is sorted by uid."""
        row = yield from self._read(
            f"SELECT uid FROM {self.ks}.messageidtable WHERE mailboxid = ? ORDER BY uid DESC LIMIT 1", [_id(mailbox_id)]
        )
        return 0 if row is None else row["uid"]

    def referenced(self, mailbox_id: str):
        """Does messageIdTable still hold a message of this mailbox (a live second look after the truth scan)?"""
        rows = yield from self._rows(
            f"SELECT uid FROM {self.ks}.messageidtable WHERE mailboxid = ? LIMIT 1",
            [_id(mailbox_id)],
            DEFAULT_CONSISTENCY_LEVEL,
        )
        return bool(rows)

    # ---- writes, LWT -----------------------------------------------------------------------------------------

    def register(self, path: tuple, mailbox_id: str, uidvalidity):
        key = dict(zip(PATH_KEY, path, strict=True))
        written = self._path_row(path, mailbox_id, uidvalidity)
        yield from self._recorded(self.path_table_name, before_images.INSERTED, key, None, written)
        if self.v3:
            return (
                yield from self._applied(
                    f"INSERT INTO {self.path_table} (namespace, user, mailboxname, mailboxid, uidvalidity) "
                    "VALUES (?, ?, ?, ?, ?) IF NOT EXISTS",
                    [*path, _id(mailbox_id), uidvalidity],
                )
            )
        return (
            yield from self._applied(
                f"INSERT INTO {self.path_table} (namespace, user, mailboxname, mailboxid) "
                "VALUES (?, ?, ?, ?) IF NOT EXISTS",
                [*path, _id(mailbox_id)],
            )
        )

    def unregister(self, path: tuple, mailbox_id: str, uidvalidity=None):
        key = dict(zip(PATH_KEY, path, strict=True))
        before = self._path_row(path, mailbox_id, uidvalidity)
        yield from self._recorded(self.path_table_name, before_images.DELETED, key, before, None)
        return (
            yield from self._applied(
                f"DELETE FROM {self.path_table} WHERE namespace = ? AND user = ? AND mailboxname = ? IF mailboxid = ?",
                [*path, _id(mailbox_id)],
            )
        )

    def create_mailbox(self, mailbox_id: str, path: tuple, uidvalidity):
        written = self._mailbox_row(mailbox_id, path, uidvalidity)
        yield from self._recorded("mailbox", before_images.INSERTED, {"id": _id(mailbox_id)}, None, written)
        return (
            yield from self._applied(
                f"INSERT INTO {self.ks}.mailbox (id, mailboxbase, name, uidvalidity) "
                "VALUES (?, {namespace: ?, user: ?}, ?, ?) IF NOT EXISTS",
                [_id(mailbox_id), *path, uidvalidity],
            )
        )

    def move_mailbox_row(self, mailbox_id: str, old: tuple, new: tuple):
        """Point the mailbox row at `new`, only if it still holds `old`."""
        before, written = self._mailbox_row(mailbox_id, old), self._mailbox_row(mailbox_id, new)
        yield from self._recorded("mailbox", before_images.REWRITTEN, {"id": _id(mailbox_id)}, before, written)
        return (
            yield from self._applied(
                f"UPDATE {self.ks}.mailbox SET mailboxbase = {{namespace: ?, user: ?}}, name = ? WHERE id = ? "
                "IF mailboxbase = {namespace: ?, user: ?} AND name = ?",
                [*new, _id(mailbox_id), *old],
            )
        )

    def delete_mailbox(self, mailbox_id: str, path: tuple, uidvalidity=None):
        before = self._mailbox_row(mailbox_id, path, uidvalidity)
        yield from self._recorded("mailbox", before_images.DELETED, {"id": _id(mailbox_id)}, before, None)
        return (
            yield from self._applied(
                f"DELETE FROM {self.ks}.mailbox WHERE id = ? IF mailboxbase = {{namespace: ?, user: ?}} AND name = ?",
                [_id(mailbox_id), *path],
            )
        )

    # ---- merge: messages and ACL -----------------------------------------------------------------------------

    def _next(self, table: str, column: str, mailbox_id: str, floor: int = 0):
        """The next value of a compare-and-set generator (messageCounter.nextUid, modseq.nextModseq) as James's
        CassandraUidProvider / CassandraModSeqProvider hand them out: read the last value given, then
        `UPDATE ... IF nextUid = <read>` (or `INSERT ... IF NOT EXISTS` when the mailbox has no row), retried.
        Unlike James, which trusts the counter alone (its only guard is the `uid.modseq.increment` offset of
        cassandra.properties), the value given is also above `floor`, the highest one the mailbox's messages already
        carry: a counter lagging behind them jumps past them in the same compare-and-set and ends at the value given.
        """
        key = _id(mailbox_id)
        for _ in range(100):
            row = yield from self._read(f"SELECT {column} FROM {self.ks}.{table} WHERE mailboxid = ?", [key])
            if row is None:
                value = floor + 1
                generated = {"mailboxid": key, column: value}
                yield from self._recorded(table, GENERATED, {"mailboxid": key}, None, generated)
                if (
                    yield from self._applied(
                        f"INSERT INTO {self.ks}.{table} (mailboxid, {column}) VALUES (?, ?) IF NOT EXISTS", [key, value]
                    )
                ):
                    return value
                continue
            value = max(row[column] or 0, floor) + 1
            before, generated = {"mailboxid": key, column: row[column]}, {"mailboxid": key, column: value}
            yield from self._recorded(table, GENERATED, {"mailboxid": key}, before, generated)
            if (
                yield from self._applied(
                    f"UPDATE {self.ks}.{table} SET {column} = ? WHERE mailboxid = ? IF {column} = ?",
                    [value, key, row[column]],
                )
            ):
                return value
        raise RuntimeError(f"{table} of {mailbox_id}: no compare-and-set succeeded in 100 tries")

    def move_message(self, message_id: str, loser: str, uid: int, winner: str, floor: "Floor"):
        """One message of the loser into the winner at a new uid and modseq (what James's merge does through
        setInMailboxes); False when the loser no longer holds it.

        James writes imapUidTable `IF NOT EXISTS` (its key holds the message id, so it cannot see another message at
        that uid) then messageIdTable as a plain upsert, which silently replaces whatever message held that uid. Here
        the uid is claimed first in messageIdTable, whose key is (mailboxid, uid), with `IF NOT EXISTS`: a uid already
        given is never overwritten, the next one is taken instead (and a crash between the writes leaves a
        projection row the messages repair drops, while the loser still holds the message for the next run)."""
        row = yield from self._read(
            f"SELECT * FROM {self.ks}.imapuidtable WHERE messageid = ? AND mailboxid = ? AND uid = ?",
            [_id(message_id), _id(loser), uid],
        )
        if row is None:
            return False
        for _ in range(10):
            next_uid = yield from self._next("messagecounter", "nextuid", winner, floor.uid)
            moved = {**row, "mailboxid": _id(winner), "uid": next_uid}
            moved["modseq"] = yield from self._next("modseq", "nextmodseq", winner, floor.modseq)
            columns = list(moved)
            values = [moved[column] for column in columns]
            marks = ", ".join("?" for _ in columns)
            claimed = {"mailboxid": moved["mailboxid"], "uid": moved["uid"]}
            yield from self._recorded("messageidtable", before_images.INSERTED, claimed, None, moved)
            if (
                yield from self._applied(
                    f"INSERT INTO {self.ks}.messageidtable ({', '.join(columns)}) VALUES ({marks}) IF NOT EXISTS",
                    values,
                )
            ):
                break
            highest = yield from self.highest_projected_uid(winner)
            floor.uid = max(floor.uid, moved["uid"], highest)
        else:
            raise RuntimeError(f"no free uid of {winner} in messageIdTable after 10 tries")
        truth_key = {"messageid": moved["messageid"], "mailboxid": moved["mailboxid"], "uid": moved["uid"]}
        yield from self._recorded("imapuidtable", before_images.INSERTED, truth_key, None, moved)
        if not (
            yield from self._applied(
                f"INSERT INTO {self.ks}.imapuidtable ({', '.join(columns)}) VALUES ({marks}) IF NOT EXISTS", values
            )
        ):
            raise RuntimeError(f"message {message_id} is already at uid {moved['uid']} of {winner} in imapUidTable")
        loser_key = {"messageid": _id(message_id), "mailboxid": _id(loser), "uid": uid}
        yield from self._recorded("imapuidtable", before_images.DELETED, loser_key, row, None)
        yield from self._rows(
            f"DELETE FROM {self.ks}.imapuidtable WHERE messageid = ? AND mailboxid = ? AND uid = ? IF EXISTS",
            [_id(message_id), _id(loser), uid],
        )
        projected_key = {"mailboxid": _id(loser), "uid": uid}
        yield from self._recorded("messageidtable", before_images.DELETED, projected_key, row, None)
        yield from self._rows(
            f"DELETE FROM {self.ks}.messageidtable WHERE mailboxid = ? AND uid = ?", [_id(loser), uid]
        )
        return True

    def acl(self, mailbox_id: str):
        """(entries, version) of the mailbox's ACL truth: 3.9 the last eventId, 3.5 the acl row's version (None: no
        ACL yet). MalformedTruth when it cannot be read: a merge is then not certain."""
        if self.v3:
            row = yield from self._read(
                f"SELECT eventid, event FROM {self.ks}.eventstore WHERE aggregateid = ? ORDER BY eventid DESC LIMIT 1",
                [str(mailbox_id)],
            )
            return (parse_acl(row["event"], "3.9"), row["eventid"]) if row else ({}, None)
        row = yield from self._read(f"SELECT acl, version FROM {self.ks}.acl WHERE id = ?", [_id(mailbox_id)])
        return (parse_acl(row["acl"], "3.5"), row["version"]) if row else ({}, None)

    def write_acl(self, mailbox_id: str, old: dict, new: dict, version):
        if self.v3:
            event_id = 0 if version is None else version + 1
            event = {
                "eventId": event_id,
                "aggregateKey": str(mailbox_id),
                "type": "acl-updated",
                "aclDiff": {"oldAcl": {"entries": old}, "newAcl": {"entries": new}},
            }
            key = {"aggregateid": str(mailbox_id), "eventid": event_id}
            written = {**key, "event": json.dumps(event, separators=(",", ":"))}
            yield from self._recorded("eventstore", before_images.INSERTED, key, None, written)
            return (
                yield from self._applied(
                    f"INSERT INTO {self.ks}.eventstore (aggregateid, eventid, event) VALUES (?, ?, ?) IF NOT EXISTS",
                    [str(mailbox_id), event_id, json.dumps(event, separators=(",", ":"))],
                )
            )
        text = json.dumps({"entries": new}, separators=(",", ":"))
        key = {"id": _id(mailbox_id)}
        written = {**key, "acl": text, "version": 0 if version is None else version + 1}
        before = None if version is None else {**key, "acl": json.dumps({"entries": old}), "version": version}
        action = before_images.INSERTED if version is None else before_images.REWRITTEN
        yield from self._recorded("acl", action, key, before, written)
        if version is None:
            return (
                yield from self._applied(
                    f"INSERT INTO {self.ks}.acl (id, acl, version) VALUES (?, ?, 0) IF NOT EXISTS",
                    [_id(mailbox_id), text],
                )
            )
        return (
            yield from self._applied(
                f"UPDATE {self.ks}.acl SET acl = ?, version = ? WHERE id = ? IF version = ?",
                [text, version + 1, _id(mailbox_id), version],
            )
        )


@dataclass
class Floor:
    """The highest uid and modseq a merge's winner already holds: moved messages are given values above them."""

    uid: int = 0
    modseq: int = 0


def _id(value) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))


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


def orphan_path(store: MailboxStore, finding: dict, options: PolicyOptions):
    path, mailbox_id = _row_path(finding), finding["mailboxId"]
    registered = yield from store.path(path)
    if registered is None or str(registered["mailboxid"]) != mailbox_id:
        return _outcome(finding, CHANGED)
    if (yield from store.mailbox(mailbox_id)) is not None:
        return _outcome(finding, CHANGED, {"mailboxRow": "exists"})
    referenced = finding["messages"] > 0 or (yield from store.referenced(mailbox_id))
    detail = {"referencedByMessages": referenced, "messages": finding["messages"]}
    if referenced and options.orphan_paths == RECREATE_WHEN_REFERENCED:
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


def _realign(store: MailboxStore, finding: dict, mailbox_id: str, keep: tuple, write: bool):
    """Point the mailbox row at `keep`; None when done (or nothing to do), else the outcome that stops the fix."""
    row = yield from store.mailbox(mailbox_id)
    if row is None or row.get("path") == keep:
        return None
    if write and not (yield from store.move_mailbox_row(mailbox_id, row["path"], keep)):
        return CHANGED
    return None


def one_id_two_paths(store: MailboxStore, finding: dict, options: PolicyOptions):
    mailbox_id = finding["mailboxId"]
    current = []
    for entry in finding["paths"]:
        path = (entry["namespace"], entry["user"], entry["name"])
        registered = yield from store.path(path)
        if registered is not None and str(registered["mailboxid"]) == mailbox_id:
            current.append((registered["written"], _path_text(path), path, registered.get("uidvalidity")))
    if len(current) < 2:
        return _outcome(finding, CHANGED, {"stillRegisteredUnder": [text for _, text, _, _ in current]})
    current.sort()
    keep = current[-1][2]
    detail = {"kept": _path_text(keep), "dropped": [text for _, text, _, _ in current[:-1]]}
    stop = yield from _realign(store, finding, mailbox_id, keep, options.write)
    if stop:
        return _outcome(finding, stop, detail)
    if options.write:
        for _, _, path, uidvalidity in current[:-1]:
            yield from store.unregister(path, mailbox_id, uidvalidity)
    return _outcome(finding, KEPT_LATEST_PATH, {**detail, **({} if options.write else {"wouldDo": True})})


def mailbox_path_outdated(store: MailboxStore, finding: dict, options: PolicyOptions):
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
    its own path stays with the id registered there. James re-reads the path at STRONG and saves the row
    unconditionally; here every row involved is re-read at SERIAL and the move is conditioned on the row's path."""
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
    loser, merged only if it is registered under no path. None when no winner is certain."""
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

    def open(self, session, context) -> MailboxStore:
        """The store of one task, writing only when the engine's context says so (a repair, not a check), and
        recording the before-image of every write first."""
        return MailboxStore(session, replace(self.options, write=context.write), context.recorder(session))

    def sample(self, finding) -> str:
        return json.dumps({"mailboxId": finding["mailboxId"], "mailboxPath": finding["mailboxPath"]}, sort_keys=True)
