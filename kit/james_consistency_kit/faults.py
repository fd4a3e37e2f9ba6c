"""`james-consistency break`: reproduce one of James's partial-write failures and record exactly what was broken.

Each kind does what a half-applied James write leaves behind (see the reference's "How James writes"): the write
that succeeded is kept, the one that failed is missing or stale. Candidate rows are streamed from Cassandra with the
Python driver (about 10 s per million rows, memory bounded by the rows chosen, not the table) and chosen by a hash
of their key, the kind and the random seed: about `rate` of them, at least one when there is any. A chosen row is
checked first (its counterpart must exist, so the damage is real even in an already broken keyspace); all damage is
written after the scan, concurrently.

The manifest (JSON) lists every broken row: the projection where a repair will find it, its key columns, the
inconsistency kind the repair should classify it as, the table written with the values before and after, and,
under `also`, the other inconsistencies the same failure leaves (a half-applied delete leaves the counters too).
"""

import heapq
import json
import random
import uuid
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from cassandra.concurrent import execute_concurrent_with_args
from cassandra.query import SimpleStatement
from james_consistency.acl_rights import RIGHTS_ORDER
from james_consistency.cql import CassandraSettings, close, connect, table_names
from james_consistency.errors import OperatorError
from james_consistency.paths import LOCAL_DIR
from james_consistency.projections.acl import is_mailbox_acl_aggregate
from james_consistency.schema import FLAG_COLUMNS, GENERATIONS, detect_generation, validate_keyspace_name

FAULTS_DIR = LOCAL_DIR / "faults"
NAMESPACE = "#private"
FLAGS = tuple(flag.lower() for flag in FLAG_COLUMNS)
# Rows kept aside while scanning, in case none of the chosen ones passes its check.
SPARES = 32


@dataclass(frozen=True)
class Damage:
    """What one fault kind does: the tables it needs, the schema generations it exists in, the function."""

    description: str
    tables: tuple[str, ...]
    breaks: Callable[["Injection"], list[dict]]
    generations: tuple[str, ...] = GENERATIONS

    def __str__(self) -> str:
        return self.description


def _plain(value):
    """A JSON value for a CQL value: ids and dates as strings, sets as sorted lists, UDTs as objects."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, set | frozenset | list | tuple) and not hasattr(value, "_fields"):
        return sorted(_plain(item) for item in value)
    if hasattr(value, "_asdict"):
        return {key: _plain(item) for key, item in value._asdict().items()}
    if hasattr(value, "__iter__"):  # the driver's SortedSet
        return sorted(_plain(item) for item in value)
    return str(value)


def _values(row) -> dict | None:
    return None if row is None else {key: _plain(value) for key, value in row._asdict().items()}


def canonical_rights(rights: Iterable[str]) -> str:
    return "".join(right for right in RIGHTS_ORDER if right in set(rights))


def is_user_entry(key: str) -> bool:
    """A positive entry of an individual user: what UserMailboxACL keeps."""
    return not key.startswith(("-", "$")) and key not in ("owner", "anyone", "authenticated")


@dataclass
class Injection:
    """One `inject` call: the session, what to break, and the damage queued until the scan is over."""

    session: object
    keyspace: str
    generation: str
    kind: str
    rate: float
    seed: int
    # Where the users' current quotas are: James 3.9 writes quotaCurrentValue, 3.5 to 3.8 currentQuota.
    quota_table: str = "quotacurrentvalue"
    writes: list[tuple[str, tuple]] = field(default_factory=list)
    _prepared: dict = field(default_factory=dict)
    _owners: dict | None = None

    # ---- reading ---------------------------------------------------------------------------------------------

    def _hash(self, key: tuple) -> int:
        return zlib.crc32(f"{self.seed}|{self.kind}|{'|'.join(map(str, key))}".encode())

    def pick(
        self,
        query: str,
        key: Callable,
        where: Callable | None = None,
        valid: Callable[[list], list] | None = None,
    ) -> list:
        """Rows of `query` (passing `where`) whose key hashes under the rate; `valid` keeps the chosen rows whose
        damage would be real. At least one row when the rate is above 0 and a valid candidate exists."""
        threshold = int(self.rate * 2**32)
        chosen, spares = [], []
        for number, row in enumerate(self.session.execute(SimpleStatement(query, fetch_size=5_000))):
            if where is not None and not where(row):
                continue
            digest = self._hash(key(row))
            if digest < threshold:
                chosen.append(row)
            elif self.rate > 0:
                entry = (-digest, number, row)
                if len(spares) < SPARES:
                    heapq.heappush(spares, entry)
                elif entry > spares[0]:
                    heapq.heapreplace(spares, entry)
        if valid is not None:
            chosen = valid(chosen) if chosen else []
        if not chosen and spares:
            for _, _, row in sorted(spares, reverse=True):
                if valid is None or valid([row]):
                    return [row]
        return chosen

    def prepare(self, query: str):
        if query not in self._prepared:
            self._prepared[query] = self.session.prepare(query)
        return self._prepared[query]

    def read(self, query: str, parameters: list[tuple]) -> list:
        """One row (or None) per parameter tuple, read concurrently."""
        if not parameters:
            return []
        results = execute_concurrent_with_args(self.session, self.prepare(query), parameters, concurrency=64)
        rows = []
        for success, result in results:
            if not success:
                raise OperatorError(f"reading {self.keyspace} failed: {result}")
            rows.append(result.one())
        return rows

    def truth_rows(self, keys: list[tuple]) -> list:
        """imapUidTable rows at (messageId, mailboxId, uid)."""
        return self.read(
            f"SELECT * FROM {self.keyspace}.imapuidtable WHERE messageid = ? AND mailboxid = ? AND uid = ?", keys
        )

    def projection_rows(self, keys: list[tuple]) -> list:
        """messageIdTable rows at (mailboxId, uid)."""
        return self.read(f"SELECT * FROM {self.keyspace}.messageidtable WHERE mailboxid = ? AND uid = ?", keys)

    def owners(self) -> dict:
        """mailboxId -> owner, from the mailbox table."""
        if self._owners is None:
            self._owners = {
                row.id: row.mailboxbase.user
                for row in self.session.execute(f"SELECT id, mailboxbase FROM {self.keyspace}.mailbox")
                if row.mailboxbase is not None
            }
        return self._owners

    def users(self) -> list[str]:
        return sorted(set(self.owners().values()))

    def current_acls(self) -> dict:
        """mailboxId -> the entries of its current ACL, or None when the truth cannot be read."""
        acls = {}
        if self.generation == "3.9":
            for aggregate, (_, event) in self.last_events().items():
                try:
                    acls[uuid.UUID(aggregate)] = _event_acl(event)
                except ValueError:
                    continue  # not a mailbox's aggregate
        else:
            for row in self.session.execute(f"SELECT id, acl FROM {self.keyspace}.acl"):
                acls[row.id] = _json_acl(row.acl)
        return acls

    def last_events(self) -> dict:
        """mailboxId (text) -> (last eventId, event JSON) of the eventStore."""
        last = {}
        for row in self.session.execute(f"SELECT aggregateid, eventid, event FROM {self.keyspace}.eventstore"):
            if row.aggregateid not in last or row.eventid > last[row.aggregateid][0]:
                last[row.aggregateid] = (row.eventid, row.event)
        return last

    # ---- writing ---------------------------------------------------------------------------------------------

    def write(self, query: str, parameters: tuple) -> None:
        self.writes.append((query, parameters))

    def flush(self) -> None:
        by_query: dict[str, list[tuple]] = {}
        for query, parameters in self.writes:
            by_query.setdefault(query, []).append(parameters)
        for query, parameters in by_query.items():
            for success, result in execute_concurrent_with_args(
                self.session, self.prepare(query), parameters, concurrency=64
            ):
                if not success:
                    raise OperatorError(f"writing the damage failed ({query.split(' WHERE')[0]}): {result}")
        self.writes.clear()


def _event_acl(event: str) -> dict | None:
    try:
        parsed = json.loads(event)
        if parsed.get("type") != "acl-updated":
            return None
        entries = parsed["aclDiff"]["newAcl"]["entries"]
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return entries if isinstance(entries, dict) else None


def _json_acl(text: str | None) -> dict | None:
    try:
        entries = json.loads(text)["entries"]
    except (ValueError, KeyError, TypeError):
        return None
    return entries if isinstance(entries, dict) else None


def _message_key(row) -> dict:
    return {"mailboxId": str(row.mailboxid), "uid": row.uid, "messageId": str(row.messageid)}


def _projection_key(row) -> tuple:
    return (row.mailboxid, row.uid)


def _truth_key(row) -> tuple:
    return (row.messageid, row.mailboxid, row.uid)


def _with_truth(job: Injection) -> Callable[[list], list]:
    """Keeps the messageIdTable rows whose imapUidTable row exists (the projection row is not already an orphan)."""

    def valid(rows: list) -> list:
        truth = job.truth_rows([(row.messageid, row.mailboxid, row.uid) for row in rows])
        return [row for row, found in zip(rows, truth, strict=True) if found is not None]

    return valid


def _with_projection(job: Injection) -> Callable[[list], list]:
    """Keeps the imapUidTable rows that messageIdTable holds for the same message."""

    def valid(rows: list) -> list:
        projection = job.projection_rows([(row.mailboxid, row.uid) for row in rows])
        return [
            row
            for row, found in zip(rows, projection, strict=True)
            if found is not None and found.messageid == row.messageid
        ]

    return valid


def _messages(job: Injection) -> list:
    """Chosen messageIdTable rows (whole: their values go to the manifest) whose truth exists."""
    return job.pick(f"SELECT * FROM {job.keyspace}.messageidtable", _projection_key, valid=_with_truth(job))


# ---- messages ------------------------------------------------------------------------------------------------


def projection_missing(job: Injection) -> list[dict]:
    """Added message: imapUidTable written, the messageIdTable write failed."""
    broken = []
    for row in _messages(job):
        job.write(f"DELETE FROM {job.keyspace}.messageidtable WHERE mailboxid = ? AND uid = ?", _projection_key(row))
        broken.append(
            {
                "projection": "messageIdTable",
                **_message_key(row),
                "expected_kind": "missing",
                "table": "messageIdTable",
                "before": _values(row),
                "after": None,
            }
        )
    return broken


def projection_stale_flags(job: Injection) -> list[dict]:
    """The BOB story: a flag change reached imapUidTable, not messageIdTable (seen over JMAP, unseen over IMAP, or
    the reverse), and a keyword ($Forwarded) added or removed in one table only."""
    broken = []
    for row in _messages(job):
        keywords = set(row.userflags or ()) ^ {"$Forwarded"}
        after = {"flagseen": not row.flagseen, "userflags": sorted(keywords) or None}
        job.write(
            f"UPDATE {job.keyspace}.messageidtable SET flagseen = ?, userflags = ? WHERE mailboxid = ? AND uid = ?",
            (after["flagseen"], keywords or None, row.mailboxid, row.uid),
        )
        broken.append(
            {
                "projection": "messageIdTable",
                **_message_key(row),
                "expected_kind": "outdated",
                "table": "messageIdTable",
                "before": {"flagseen": row.flagseen, "userflags": _plain(row.userflags)},
                "after": after,
            }
        )
    return broken


def projection_outdated(job: Injection) -> list[dict]:
    """messageIdTable left at an older state: lower modSeq (3.9: other size and header blob too)."""
    broken = []
    for row in _messages(job):
        changes = {"modseq": (row.modseq or 1) - 1}
        if job.generation == "3.9":
            changes.update(
                fullcontentoctets=(row.fullcontentoctets or 0) + 512,
                headercontent=f"{row.headercontent or 'header-blob'}-stale",
            )
        job.write(
            f"UPDATE {job.keyspace}.messageidtable SET {', '.join(f'{column} = ?' for column in changes)} "
            "WHERE mailboxid = ? AND uid = ?",
            (*changes.values(), row.mailboxid, row.uid),
        )
        broken.append(
            {
                "projection": "messageIdTable",
                **_message_key(row),
                "expected_kind": "outdated",
                "table": "messageIdTable",
                "before": {column: _plain(getattr(row, column)) for column in changes},
                "after": changes,
            }
        )
    return broken


def projection_orphan(job: Injection) -> list[dict]:
    """Delete half-applied: imapUidTable deleted, the messageIdTable delete failed, so the index updates that follow
    never ran either: the counters, the quota and the flag indexes still count the message."""
    broken = []
    for row in job.pick(f"SELECT * FROM {job.keyspace}.imapuidtable", _truth_key, valid=_with_projection(job)):
        job.write(
            f"DELETE FROM {job.keyspace}.imapuidtable WHERE messageid = ? AND mailboxid = ? AND uid = ?",
            _truth_key(row),
        )
        mailbox = {"mailboxId": str(row.mailboxid)}
        also = [{"projection": "mailboxCounters", **mailbox, "expected_kind": "outdated"}]
        owner = job.owners().get(row.mailboxid)
        if owner is not None:
            quota = "quotaCurrentValue" if job.quota_table == "quotacurrentvalue" else "currentQuota"
            also.append({"projection": quota, "quotaRoot": f"{NAMESPACE}&{owner}", "expected_kind": "outdated"})
        for index, counted in (
            ("messageDeleted", row.flagdeleted),
            ("firstUnseen", not row.flagseen),
            ("mailboxRecents", row.flagrecent),
        ):
            if counted:
                also.append({"projection": index, **mailbox, "uid": row.uid, "expected_kind": "orphan"})
        broken.append(
            {
                "projection": "messageIdTable",
                **_message_key(row),
                "expected_kind": "orphan",
                "table": "imapUidTable",
                "before": _values(row),
                "after": None,
                "also": also,
            }
        )
    return broken


def projection_wrong_uid(job: Injection) -> list[dict]:
    """A messageIdTable row of a real message at a uid that is not the message's (James's own task keeps it)."""
    broken = []
    for row in _messages(job):
        values = row._asdict()
        values["uid"] = row.uid + 1_000_000
        columns = [column for column, value in values.items() if value is not None]
        job.write(
            f"INSERT INTO {job.keyspace}.messageidtable ({', '.join(columns)}) "
            f"VALUES ({', '.join('?' for _ in columns)})",
            tuple(values[column] for column in columns),
        )
        broken.append(
            {
                "projection": "messageIdTable",
                "mailboxId": str(row.mailboxid),
                "uid": values["uid"],
                "messageId": str(row.messageid),
                "trueUid": row.uid,
                "expected_kind": "orphan",
                "table": "messageIdTable",
                "before": None,
                "after": {key: _plain(value) for key, value in values.items()},
            }
        )
    return broken


def truth_malformed(job: Injection) -> list[dict]:
    """imapUidTable rows no James writes: uid 0, no modSeq, no flags. The truth-health gate must stop the repair."""
    broken = []
    query = f"SELECT messageid, mailboxid, uid FROM {job.keyspace}.imapuidtable"
    chosen = job.pick(query, _truth_key, where=lambda r: r.uid > 0)
    for message_id, mailbox_id in dict.fromkeys((row.messageid, row.mailboxid) for row in chosen):
        job.write(
            f"INSERT INTO {job.keyspace}.imapuidtable (messageid, mailboxid, uid) VALUES (?, ?, 0)",
            (message_id, mailbox_id),
        )
        broken.append(
            {
                "projection": "imapUidTable",
                "mailboxId": str(mailbox_id),
                "uid": 0,
                "messageId": str(message_id),
                "expected_kind": "malformed-truth",
                "table": "imapUidTable",
                "before": None,
                "after": {"messageid": str(message_id), "mailboxid": str(mailbox_id), "uid": 0},
            }
        )
    return broken


def truth_null_flags(job: Injection) -> list[dict]:
    """imapUidTable rows whose modSeq and flags were lost (null): a truth no repair may copy."""
    broken = []
    healthy = lambda r: r.uid > 0 and r.modseq is not None  # noqa: E731
    for row in job.pick(f"SELECT * FROM {job.keyspace}.imapuidtable", _truth_key, where=healthy):
        columns = ("modseq", *FLAGS)
        job.write(
            f"DELETE {', '.join(columns)} FROM {job.keyspace}.imapuidtable "
            "WHERE messageid = ? AND mailboxid = ? AND uid = ?",
            _truth_key(row),
        )
        broken.append(
            {
                "projection": "imapUidTable",
                **_message_key(row),
                "expected_kind": "malformed-truth",
                "table": "imapUidTable",
                "before": {column: getattr(row, column) for column in columns},
                "after": dict.fromkeys(columns),
            }
        )
    return broken


# ---- ACLs ----------------------------------------------------------------------------------------------------


def acl_user_missing(job: Injection) -> list[dict]:
    """A share whose UserMailboxACL write failed: the user does not see the mailbox in his list."""
    broken = []
    query = f"SELECT username, mailboxid, rights FROM {job.keyspace}.usermailboxacl"
    for row in job.pick(query, lambda r: (r.username, r.mailboxid)):
        job.write(
            f"DELETE FROM {job.keyspace}.usermailboxacl WHERE username = ? AND mailboxid = ?",
            (row.username, row.mailboxid),
        )
        broken.append(
            {
                "projection": "UserMailboxACL",
                "userName": row.username,
                "mailboxId": str(row.mailboxid),
                "expected_kind": "missing",
                "table": "UserMailboxACL",
                "before": {"rights": row.rights},
                "after": None,
            }
        )
    return broken


def _outsider(job: Injection, mailbox_id, entries: dict) -> str:
    """A user of the platform who holds no right on this mailbox (not its owner), chosen by the seed."""
    owner = job.owners().get(mailbox_id)
    others = [user for user in job.users() if user != owner and user not in entries and f"-{user}" not in entries]
    if not others:
        return "former.colleague@domain.tld"
    return others[job._hash((mailbox_id,)) % len(others)]


def acl_user_extra(job: Injection) -> list[dict]:
    """A revoked share whose UserMailboxACL delete failed: a user without rights still lists the mailbox."""
    acls = job.current_acls()
    existing = {
        (row.username, row.mailboxid)
        for row in job.session.execute(f"SELECT username, mailboxid FROM {job.keyspace}.usermailboxacl")
    }
    broken = []
    query = f"SELECT id FROM {job.keyspace}.mailbox"
    # Mailboxes whose ACL truth can be read (a repair would not touch the projection of the others).
    for row in job.pick(query, lambda r: (r.id,), where=lambda r: acls.get(r.id, {}) is not None):
        user = _outsider(job, row.id, acls.get(row.id) or {})
        if (user, row.id) in existing:
            continue
        job.write(
            f"INSERT INTO {job.keyspace}.usermailboxacl (username, mailboxid, rights) VALUES (?, ?, ?)",
            (user, row.id, "lr"),
        )
        broken.append(
            {
                "projection": "UserMailboxACL",
                "userName": user,
                "mailboxId": str(row.id),
                "expected_kind": "orphan",
                "table": "UserMailboxACL",
                "before": None,
                "after": {"rights": "lr"},
            }
        )
    return broken


def acl_user_wrong_rights(job: Injection) -> list[dict]:
    """UserMailboxACL rights that are not the ACL's: here, Administer and DeleteMailbox granted by mistake."""
    broken = []
    query = f"SELECT username, mailboxid, rights FROM {job.keyspace}.usermailboxacl"
    for row in job.pick(query, lambda r: (r.username, r.mailboxid)):
        wrong = canonical_rights(set(row.rights or "") | {"a", "x"})
        if wrong == row.rights:
            wrong = "l"
        job.write(
            f"UPDATE {job.keyspace}.usermailboxacl SET rights = ? WHERE username = ? AND mailboxid = ?",
            (wrong, row.username, row.mailboxid),
        )
        broken.append(
            {
                "projection": "UserMailboxACL",
                "userName": row.username,
                "mailboxId": str(row.mailboxid),
                "expected_kind": "outdated",
                "table": "UserMailboxACL",
                "before": {"rights": row.rights},
                "after": {"rights": wrong},
            }
        )
    return broken


def aclv2_missing(job: Injection) -> list[dict]:
    broken = []
    for row in job.pick(f"SELECT id, key, rights FROM {job.keyspace}.aclv2", lambda r: (r.id, r.key)):
        job.write(f"DELETE FROM {job.keyspace}.aclv2 WHERE id = ? AND key = ?", (row.id, row.key))
        broken.append(
            {
                "projection": "aclv2",
                "mailboxId": str(row.id),
                "key": row.key,
                "expected_kind": "missing",
                "table": "aclv2",
                "before": {"rights": _plain(row.rights)},
                "after": None,
            }
        )
    return broken


def aclv2_wrong(job: Injection) -> list[dict]:
    broken = []
    for row in job.pick(f"SELECT id, key, rights FROM {job.keyspace}.aclv2", lambda r: (r.id, r.key)):
        wrong = set(row.rights or ()) ^ {"a"} or {"l"}
        job.write(f"UPDATE {job.keyspace}.aclv2 SET rights = ? WHERE id = ? AND key = ?", (wrong, row.id, row.key))
        broken.append(
            {
                "projection": "aclv2",
                "mailboxId": str(row.id),
                "key": row.key,
                "expected_kind": "outdated",
                "table": "aclv2",
                "before": {"rights": _plain(row.rights)},
                "after": {"rights": sorted(wrong)},
            }
        )
    return broken


def acl_json_malformed(job: Injection) -> list[dict]:
    """A 3.5 `acl` row James reads as an EMPTY ACL: a repair must report it and leave its projection alone."""
    broken = []
    for row in job.pick(f"SELECT id, acl FROM {job.keyspace}.acl", lambda r: (r.id,)):
        torn = (row.acl or '{"entries":{}}')[:-3]
        job.write(f"UPDATE {job.keyspace}.acl SET acl = ? WHERE id = ?", (torn, row.id))
        broken.append(
            {
                "projection": "acl",
                "mailboxId": str(row.id),
                "expected_kind": "malformed-truth",
                "table": "acl",
                "before": {"acl": row.acl},
                "after": {"acl": torn},
            }
        )
    return broken


def acl_event_unknown_type(job: Injection) -> list[dict]:
    """An event this version cannot read appended to a mailbox's ACL history: its current ACL is unknown."""
    last = job.last_events()
    broken = []
    query = f"SELECT aggregateid FROM {job.keyspace}.eventstore PER PARTITION LIMIT 1"
    for row in job.pick(query, lambda r: (r.aggregateid,), where=lambda r: is_mailbox_acl_aggregate(r.aggregateid)):
        event_id = last[row.aggregateid][0] + 1
        event = {
            "eventId": event_id,
            "aggregateKey": row.aggregateid,
            "type": "acl-frobnicated",
            "payload": {"entries": {"$everyone": "lr"}},
        }
        text = json.dumps(event, separators=(",", ":"))
        job.write(
            f"INSERT INTO {job.keyspace}.eventstore (aggregateid, eventid, event) VALUES (?, ?, ?)",
            (row.aggregateid, event_id, text),
        )
        broken.append(
            {
                "projection": "eventStore",
                "mailboxId": row.aggregateid,
                "eventId": event_id,
                "expected_kind": "malformed-truth",
                "table": "eventStore",
                "before": None,
                "after": {"event": text},
            }
        )
    return broken


def acl_update_not_projected(job: Injection) -> list[dict]:
    """A share granted (3.9: `acl-updated` event stored; 3.5: `acl` JSON updated) whose projection writes failed:
    the user lacks the UserMailboxACL row (and the aclv2 entry) that the new ACL implies."""
    acls = job.current_acls()
    last = job.last_events() if job.generation == "3.9" else {}
    legacy = (
        {row.id: row for row in job.session.execute(f"SELECT id, acl, version FROM {job.keyspace}.acl")}
        if job.generation == "3.5"
        else {}
    )
    broken = []
    query = f"SELECT id FROM {job.keyspace}.mailbox"
    for row in job.pick(query, lambda r: (r.id,), where=lambda r: acls.get(r.id, {}) is not None):
        old = acls.get(row.id) or {}
        user = _outsider(job, row.id, old)
        new = {**old, user: "lr"}
        mailbox = str(row.id)
        also = []
        if job.generation == "3.9":
            event_id = last[mailbox][0] + 1 if mailbox in last else 0
            event = {
                "eventId": event_id,
                "aggregateKey": mailbox,
                "type": "acl-updated",
                "aclDiff": {"oldAcl": {"entries": old}, "newAcl": {"entries": new}},
            }
            text = json.dumps(event, separators=(",", ":"))
            job.write(
                f"INSERT INTO {job.keyspace}.eventstore (aggregateid, eventid, event) VALUES (?, ?, ?)",
                (mailbox, event_id, text),
            )
            written = {"table": "eventStore", "eventId": event_id, "before": None, "after": {"event": text}}
            also.append({"projection": "aclv2", "mailboxId": mailbox, "key": user, "expected_kind": "missing"})
        else:
            text = json.dumps({"entries": new}, separators=(",", ":"))
            previous = legacy.get(row.id)
            version = (previous.version or 0) + 1 if previous is not None else 1
            job.write(f"UPDATE {job.keyspace}.acl SET acl = ?, version = ? WHERE id = ?", (text, version, row.id))
            before = None if previous is None else {"acl": previous.acl, "version": previous.version}
            written = {"table": "acl", "before": before, "after": {"acl": text, "version": version}}
        broken.append(
            {
                "projection": "UserMailboxACL",
                "userName": user,
                "mailboxId": mailbox,
                "expected_kind": "missing",
                "rights": "lr",
                **written,
                "also": also,
            }
        )
    return broken


# ---- mailboxes -----------------------------------------------------------------------------------------------


def _path_table(job: Injection) -> str:
    return "mailboxpathv3" if job.generation == "3.9" else "mailboxpathv2"


def _path_projection(job: Injection) -> str:
    return "mailboxPathV3" if job.generation == "3.9" else "mailboxPathV2"


def _path_text(namespace: str, user: str, name: str) -> str:
    return f"{namespace}:{user}:{name}"


def _registered(job: Injection) -> Callable[[list], list]:
    """Keeps the mailbox rows registered under their own path (a consistent pair)."""

    def valid(rows: list) -> list:
        paths = job.read(
            f"SELECT mailboxid FROM {job.keyspace}.{_path_table(job)} "
            "WHERE namespace = ? AND user = ? AND mailboxname = ?",
            [(row.mailboxbase.namespace, row.mailboxbase.user, row.name) for row in rows],
        )
        return [row for row, path in zip(rows, paths, strict=True) if path is not None and path.mailboxid == row.id]

    return valid


def _mailboxes(job: Injection) -> list:
    return job.pick(
        f"SELECT id, mailboxbase, name, uidvalidity FROM {job.keyspace}.mailbox",
        lambda r: (r.id,),
        where=lambda r: r.mailboxbase is not None,
        valid=_registered(job),
    )


def mailbox_path_orphan(job: Injection) -> list[dict]:
    """Mailbox deletion half-applied (or creation: path written, mailbox row not): a path without its mailbox."""
    broken = []
    for row in _mailboxes(job):
        job.write(f"DELETE FROM {job.keyspace}.mailbox WHERE id = ?", (row.id,))
        broken.append(
            {
                "projection": _path_projection(job),
                "mailboxPath": _path_text(row.mailboxbase.namespace, row.mailboxbase.user, row.name),
                "mailboxId": str(row.id),
                "expected_kind": "orphan-path",
                "table": "mailbox",
                "before": _values(row),
                "after": None,
            }
        )
    return broken


def mailbox_orphan(job: Injection) -> list[dict]:
    """The mailbox row stays, its path registration is gone: the mailbox cannot be found by its name."""
    broken = []
    for row in _mailboxes(job):
        namespace, user = row.mailboxbase.namespace, row.mailboxbase.user
        job.write(
            f"DELETE FROM {job.keyspace}.{_path_table(job)} WHERE namespace = ? AND user = ? AND mailboxname = ?",
            (namespace, user, row.name),
        )
        broken.append(
            {
                "projection": "mailbox",
                "mailboxId": str(row.id),
                "mailboxPath": _path_text(namespace, user, row.name),
                "expected_kind": "orphan-mailbox",
                "table": _path_projection(job),
                "before": {"mailboxid": str(row.id)},
                "after": None,
            }
        )
    return broken


def mailbox_two_paths(job: Injection) -> list[dict]:
    """A rename stopped after its first write (register the new path): the mailbox row keeps its old name, and its
    id is registered under both paths."""
    broken = []
    for row in _mailboxes(job):
        namespace, user = row.mailboxbase.namespace, row.mailboxbase.user
        new_name = f"{row.name}-renamed"
        if job.generation == "3.9":
            job.write(
                f"INSERT INTO {job.keyspace}.mailboxpathv3 (namespace, user, mailboxname, mailboxid, uidvalidity) "
                "VALUES (?, ?, ?, ?, ?)",
                (namespace, user, new_name, row.id, row.uidvalidity),
            )
        else:
            job.write(
                f"INSERT INTO {job.keyspace}.mailboxpathv2 (namespace, user, mailboxname, mailboxid) "
                "VALUES (?, ?, ?, ?)",
                (namespace, user, new_name, row.id),
            )
        broken.append(
            {
                "projection": _path_projection(job),
                "mailboxPath": _path_text(namespace, user, new_name),
                "mailboxId": str(row.id),
                "registeredPath": _path_text(namespace, user, row.name),
                "expected_kind": "one-id-two-paths",
                "table": _path_projection(job),
                "before": None,
                "after": {"mailboxid": str(row.id)},
            }
        )
    return broken


def mailbox_path_conflict(job: Injection) -> list[dict]:
    """Delete then re-create half-applied: a second mailbox row claims a path registered to another id."""
    broken = []
    for row in _mailboxes(job):
        rng = random.Random(f"{job.seed}|{row.id}")
        # Another timeuuid of the same instant: only the node field differs.
        intruder = uuid.UUID(int=row.id.int ^ (rng.getrandbits(47) | 1), version=1)
        namespace, user = row.mailboxbase.namespace, row.mailboxbase.user
        job.write(
            f"INSERT INTO {job.keyspace}.mailbox (id, mailboxbase, name, uidvalidity) "
            "VALUES (?, {namespace: ?, user: ?}, ?, ?)",
            (intruder, namespace, user, row.name, row.uidvalidity + 1),
        )
        broken.append(
            {
                "projection": "mailbox",
                "mailboxId": str(intruder),
                "registeredMailboxId": str(row.id),
                "mailboxPath": _path_text(namespace, user, row.name),
                "expected_kind": "two-ids-one-path",
                "table": "mailbox",
                "before": None,
                "after": {"namespace": namespace, "user": user, "name": row.name, "uidvalidity": row.uidvalidity + 1},
            }
        )
    return broken


# ---- per-mailbox indexes -------------------------------------------------------------------------------------

_INDEXES = {
    # index table -> (James's name, uid column, truth condition on an imapUidTable row)
    "messagedeleted": ("messageDeleted", "uid", lambda row: bool(row.flagdeleted)),
    "firstunseen": ("firstUnseen", "uid", lambda row: not row.flagseen),
    "mailboxrecents": ("mailboxRecents", "recent_mesage_uid", lambda row: bool(row.flagrecent)),
}


def _index_missing(table: str) -> Callable[[Injection], list[dict]]:
    """The index update after an add or a flag change failed: a qualifying uid is not in the index."""
    name, uid_column, _ = _INDEXES[table]

    def breaks(job: Injection) -> list[dict]:
        broken = []
        query = f"SELECT mailboxid, {uid_column} FROM {job.keyspace}.{table}"
        for row in job.pick(query, lambda r: tuple(r)):
            uid = getattr(row, uid_column)
            job.write(
                f"DELETE FROM {job.keyspace}.{table} WHERE mailboxid = ? AND {uid_column} = ?", (row.mailboxid, uid)
            )
            broken.append(
                {
                    "projection": name,
                    "mailboxId": str(row.mailboxid),
                    "uid": uid,
                    "expected_kind": "missing",
                    "table": name,
                    "before": {"mailboxid": str(row.mailboxid), uid_column: uid},
                    "after": None,
                }
            )
        return broken

    return breaks


def _index_stale(table: str) -> Callable[[Injection], list[dict]]:
    """A flag removed (or a message expunged) without the index update: the index holds a uid that no longer
    qualifies."""
    name, uid_column, qualifies = _INDEXES[table]

    def breaks(job: Injection) -> list[dict]:
        broken = []
        query = f"SELECT messageid, mailboxid, uid, flagdeleted, flagseen, flagrecent FROM {job.keyspace}.imapuidtable"
        for row in job.pick(query, _truth_key, where=lambda r: r.uid > 0 and not qualifies(r)):
            job.write(
                f"INSERT INTO {job.keyspace}.{table} (mailboxid, {uid_column}) VALUES (?, ?)", (row.mailboxid, row.uid)
            )
            broken.append(
                {
                    "projection": name,
                    "mailboxId": str(row.mailboxid),
                    "uid": row.uid,
                    "messageId": str(row.messageid),
                    "expected_kind": "orphan",
                    "table": name,
                    "before": None,
                    "after": {"mailboxid": str(row.mailboxid), uid_column: row.uid},
                }
            )
        return broken

    return breaks


def applicable_flag_missing(job: Injection) -> list[dict]:
    """A keyword added to a message without the applicableFlag update: IMAP clients do not offer it."""
    broken = []
    query = f"SELECT mailboxid, userflags FROM {job.keyspace}.applicableflag"
    for row in job.pick(query, lambda r: (r.mailboxid,), where=lambda r: bool(r.userflags)):
        keywords = sorted(row.userflags)
        keyword = keywords[job._hash((row.mailboxid, "keyword")) % len(keywords)]
        job.write(
            f"UPDATE {job.keyspace}.applicableflag SET userflags = userflags - ? WHERE mailboxid = ?",
            ({keyword}, row.mailboxid),
        )
        broken.append(
            {
                "projection": "applicableFlag",
                "mailboxId": str(row.mailboxid),
                "keyword": keyword,
                "expected_kind": "missing",
                "table": "applicableFlag",
                "before": {"userflags": keywords},
                "after": {"userflags": [k for k in keywords if k != keyword]},
            }
        )
    return broken


# ---- counters ------------------------------------------------------------------------------------------------


def counters_wrong(job: Injection) -> list[dict]:
    """Counter increments lost or doubled (James only logs a failed counter write): one `count` increment lost,
    one `unseen` increment applied twice."""
    broken = []
    for row in job.pick(f"SELECT mailboxid, count, unseen FROM {job.keyspace}.mailboxcounters", lambda r: (r[0],)):
        job.write(
            f"UPDATE {job.keyspace}.mailboxcounters SET count = count - 1, unseen = unseen + 1 WHERE mailboxid = ?",
            (row.mailboxid,),
        )
        broken.append(
            {
                "projection": "mailboxCounters",
                "mailboxId": str(row.mailboxid),
                "expected_kind": "outdated",
                "table": "mailboxCounters",
                "before": {"count": row.count, "unseen": row.unseen},
                "after": {"count": (row.count or 0) - 1, "unseen": (row.unseen or 0) + 1},
            }
        )
    return broken


def quota_wrong(job: Injection) -> list[dict]:
    """A user's current quota off: usage increments lost or doubled."""
    broken = []
    if job.quota_table == "quotacurrentvalue":
        query = f"SELECT identifier, quotacomponent, quotatype, currentvalue FROM {job.keyspace}.quotacurrentvalue"
        for row in job.pick(query, lambda r: tuple(r)[:3], where=lambda r: r.quotacomponent == "MAILBOX"):
            delta = 7 if row.quotatype == "count" else 4_096
            job.write(
                f"UPDATE {job.keyspace}.quotacurrentvalue SET currentvalue = currentvalue + ? "
                "WHERE identifier = ? AND quotacomponent = ? AND quotatype = ?",
                (delta, row.identifier, row.quotacomponent, row.quotatype),
            )
            broken.append(
                {
                    "projection": "quotaCurrentValue",
                    "quotaRoot": row.identifier,
                    "quotaComponent": row.quotacomponent,
                    "quotaType": row.quotatype,
                    "expected_kind": "outdated",
                    "table": "quotaCurrentValue",
                    "before": {"currentvalue": row.currentvalue},
                    "after": {"currentvalue": row.currentvalue + delta},
                }
            )
    else:
        query = f"SELECT quotaroot, messagecount, storage FROM {job.keyspace}.currentquota"
        for row in job.pick(query, lambda r: (r.quotaroot,)):
            job.write(
                f"UPDATE {job.keyspace}.currentquota SET messagecount = messagecount + 7, storage = storage - 100 "
                "WHERE quotaroot = ?",
                (row.quotaroot,),
            )
            broken.append(
                {
                    "projection": "currentQuota",
                    "quotaRoot": row.quotaroot,
                    "expected_kind": "outdated",
                    "table": "currentQuota",
                    "before": {"messagecount": row.messagecount, "storage": row.storage},
                    "after": {"messagecount": (row.messagecount or 0) + 7, "storage": (row.storage or 0) - 100},
                }
            )
    return broken


KINDS: dict[str, Damage] = {
    "projection-missing": Damage(
        "messageIdTable row missing (message added, projection write failed)", ("messageidtable",), projection_missing
    ),
    "projection-stale-flags": Damage(
        "messageIdTable flags/keywords differ from imapUidTable (BOB: seen over JMAP, unseen over IMAP)",
        ("messageidtable",),
        projection_stale_flags,
    ),
    "projection-outdated": Damage(
        "messageIdTable modSeq (3.9: size and header blob too) older than imapUidTable's",
        ("messageidtable",),
        projection_outdated,
    ),
    "projection-orphan": Damage(
        "messageIdTable row whose imapUidTable row was deleted (delete half-applied; counters still count it)",
        ("imapuidtable", "messageidtable", "mailbox"),
        projection_orphan,
    ),
    "projection-wrong-uid": Damage(
        "messageIdTable row of a real message at a uid it does not have", ("messageidtable",), projection_wrong_uid
    ),
    "truth-malformed": Damage(
        "imapUidTable row at uid 0 without modSeq or flags (the truth gate must stop the repair)",
        ("imapuidtable",),
        truth_malformed,
    ),
    "truth-null-flags": Damage(
        "imapUidTable rows whose modSeq and flags are null (the truth gate must stop the repair)",
        ("imapuidtable",),
        truth_null_flags,
    ),
    "acl-user-missing": Damage(
        "UserMailboxACL row missing for a user holding rights", ("usermailboxacl",), acl_user_missing
    ),
    "acl-user-extra": Damage(
        "UserMailboxACL row for a user holding no right (revoked share)", ("usermailboxacl", "mailbox"), acl_user_extra
    ),
    "acl-user-wrong-rights": Damage(
        "UserMailboxACL rights differ from the ACL's", ("usermailboxacl",), acl_user_wrong_rights
    ),
    "acl-update-not-projected": Damage(
        "ACL updated (event or acl JSON) but not its projections: a new share missing from UserMailboxACL/aclv2",
        ("usermailboxacl", "mailbox"),
        acl_update_not_projected,
    ),
    "aclv2-missing": Damage("aclv2 entry missing", ("aclv2",), aclv2_missing, ("3.9",)),
    "aclv2-wrong": Damage("aclv2 entry with other rights than the ACL's", ("aclv2",), aclv2_wrong, ("3.9",)),
    "acl-json-malformed": Damage(
        "3.5 acl JSON unparsable (James reads it as an EMPTY ACL)", ("acl",), acl_json_malformed, ("3.5",)
    ),
    "acl-event-unknown-type": Damage(
        "eventStore event of an unknown type after a mailbox's ACL events",
        ("eventstore",),
        acl_event_unknown_type,
        ("3.9",),
    ),
    "mailbox-path-orphan": Damage("path registration without its mailbox row", ("mailbox",), mailbox_path_orphan),
    "mailbox-orphan": Damage("mailbox row without its path registration", ("mailbox",), mailbox_orphan),
    "mailbox-two-paths": Damage(
        "one mailbox id registered under two paths (rename half-applied)", ("mailbox",), mailbox_two_paths
    ),
    "mailbox-path-conflict": Damage("two mailbox ids claiming one path", ("mailbox",), mailbox_path_conflict),
    "deleted-missing": Damage(
        "messageDeleted lacks a \\Deleted message", ("messagedeleted",), _index_missing("messagedeleted")
    ),
    "deleted-stale": Damage(
        "messageDeleted holds a message not \\Deleted",
        ("messagedeleted", "imapuidtable"),
        _index_stale("messagedeleted"),
    ),
    "unseen-missing": Damage("firstUnseen lacks an unseen message", ("firstunseen",), _index_missing("firstunseen")),
    "unseen-stale": Damage(
        "firstUnseen holds a seen message", ("firstunseen", "imapuidtable"), _index_stale("firstunseen")
    ),
    "recent-missing": Damage(
        "mailboxRecents lacks a \\Recent message", ("mailboxrecents",), _index_missing("mailboxrecents")
    ),
    "recent-stale": Damage(
        "mailboxRecents holds a message not \\Recent",
        ("mailboxrecents", "imapuidtable"),
        _index_stale("mailboxrecents"),
    ),
    "applicable-flag-missing": Damage(
        "applicableFlag lacks a keyword used in the mailbox", ("applicableflag",), applicable_flag_missing
    ),
    "counters-wrong": Damage(
        "mailboxCounters count/unseen off (lost or doubled increment)", ("mailboxcounters",), counters_wrong
    ),
    "quota-wrong": Damage("current quota off (3.9 quotaCurrentValue, 3.5 currentQuota)", (), quota_wrong),
}


def kinds_text() -> str:
    """The kinds, one per line, as `break --kind list` prints them."""
    return "\n".join(f"{kind:<26} {damage.description}" for kind, damage in KINDS.items())


def inject(
    settings: CassandraSettings,
    *,
    keyspace: str,
    kind: str,
    rate: float,
    random_seed: int = 7,
    manifest_path: str | None = None,
) -> dict:
    """Break about `rate` of the candidate rows the way `kind` says; write the JSON manifest and return it."""
    if kind not in KINDS:
        raise OperatorError(f"unknown fault kind '{kind}': choose one of {', '.join(KINDS)}")
    if not 0 <= rate <= 1:
        raise OperatorError(f"rate {rate} is outside 0..1")
    damage = KINDS[kind]
    keyspace = validate_keyspace_name(keyspace)
    session = connect(settings, keyspace)
    try:
        generation = detect_generation(session, keyspace)
        if generation is None:
            raise OperatorError(f"keyspace '{keyspace}' has no James tables: run `james-consistency seed` first")
        if generation not in damage.generations:
            raise OperatorError(
                f"fault kind '{kind}' exists only in the James {'/'.join(damage.generations)} schema; "
                f"keyspace '{keyspace}' holds the {generation} schema"
            )
        tables = table_names(session, keyspace)
        quota_table = "quotacurrentvalue" if "quotacurrentvalue" in tables else "currentquota"
        needed = damage.tables or (quota_table,)
        missing = [table for table in needed if table not in tables]
        if missing:
            raise OperatorError(f"keyspace '{keyspace}' has no table {', '.join(missing)} needed by '{kind}'")
        job = Injection(session, keyspace, generation, kind, rate, random_seed, quota_table)
        rows = damage.breaks(job)
        job.flush()
    finally:
        close(session)
    created = datetime.now(UTC)
    path = Path(manifest_path or FAULTS_DIR / f"{keyspace}-{kind}-{created.strftime('%Y%m%dT%H%M%S%f')}.json")
    manifest = {
        "kind": kind,
        "description": damage.description,
        "keyspace": keyspace,
        "generation": generation,
        "rate": rate,
        "random_seed": random_seed,
        "tables": sorted({row["table"] for row in rows}) or list(needed),
        "count": len(rows),
        "created_at": created.isoformat(),
        "path": str(path),
        "rows": rows,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest, indent=2, default=_plain) + "\n")
    return manifest
