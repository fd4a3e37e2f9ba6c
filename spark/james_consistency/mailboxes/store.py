"""The mailbox repair's Cassandra I/O: the mailbox, path, message and ACL tables of one keyspace, each read at SERIAL
and each write a lightweight transaction conditioned on what was just read, its before-image recorded first. Every
method is a re-check step (engine.live) that the per-finding decisions (`policy`) chain with `yield from`.
"""

import json
import uuid
from dataclasses import dataclass

from james_consistency.cassandra.consistency_levels import DEFAULT_CONSISTENCY_LEVEL
from james_consistency.cassandra.cql import CassandraSettings
from james_consistency.engine import before_images
from james_consistency.engine.before_images import Recorder
from james_consistency.engine.live import Query, one, prepared
from james_consistency.mailboxes.options import RECREATE
from james_consistency.projections.acl import parse_acl

# A value a compare-and-set generator (messageCounter, modseq) handed out: recorded, never taken back by an undo
# (James never gives a uid or a modseq twice).
GENERATED = "generated"
PATH_KEY = ("namespace", "user", "mailboxname")


@dataclass(frozen=True)
class PolicyOptions:
    """What the executors' store and decisions are handed: where and how they read and write, the run's orphan-path
    policy and merge choice (mailboxes.options), and whether to write at all (a check does not)."""

    settings: CassandraSettings
    keyspace: str
    generation: str
    orphan_paths: str = RECREATE
    merge: bool = False
    write: bool = True
    read_consistency: str = "SERIAL"
    write_consistency: str = DEFAULT_CONSISTENCY_LEVEL


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
