"""A James-like writer: user traffic against a 3.9 keyspace while repairs run, in James's write order.

Operations (weights in `TrafficOptions.mix`):
- add: imapUidTable `INSERT ... IF NOT EXISTS` (the truth), then messageIdTable, then the per-mailbox indexes
  (messageDeleted, firstUnseen, mailboxRecents) and applicableFlag (keywords added);
- flags: imapUidTable `UPDATE ... IF modseq = previous`, then messageIdTable (an UPDATE of the flag columns, as
  James does: it upserts a partial row where the projection row was missing), then the indexes;
- move: an add in the target mailbox (new uid, same messageId), then a delete in the source;
- delete: imapUidTable, then messageIdTable and the index rows;
- acl: an `acl-updated` event appended to eventStore (`IF NOT EXISTS`, the truth), then aclv2 and UserMailboxACL.

A share of the operations (`partial_share`) is a simulated partial failure: it stops right after the truth write.
Every operation is logged as one JSON line: the truth rows written (with the wall-clock window of the write, in
microseconds, to compare with WRITETIME) and the projection rows the operation wrote (or, for a partial failure,
would have written), each row's intended final state (`null` = deleted). Counters and quotas are not written.
`undone_writes` reads a log against the projection tables: the complete writes that a repair running meanwhile took
back from the user (the live-traffic tests and the impact bench assert there are none).
"""

import json
import random
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from cassandra.util import uuid_from_time
from james_consistency.cassandra.cql import CassandraSettings, close, connect
from james_consistency.cassandra.schema import detect_generation
from james_consistency.errors import OperatorError

from james_consistency_kit.seed import MESSAGE_COLUMNS_39 as MESSAGE_COLUMNS

FLAGS = ("flaganswered", "flagdeleted", "flagdraft", "flagflagged", "flagrecent", "flagseen", "flaguser")
KEYWORDS = ("$Forwarded", "$Junk", "work", "family", "traffic-label")
RIGHTS = ("lr", "lrs", "lrstw", "eilrstw")
INDEXES = (
    ("messagedeleted", "uid", "flagdeleted", True),
    ("firstunseen", "uid", "flagseen", False),
    ("mailboxrecents", "recent_mesage_uid", "flagrecent", True),
)


@dataclass
class TrafficOptions:
    keyspace: str
    log_path: str
    partial_share: float = 0.1
    ops_per_second: float = 25.0
    seconds: float = 60.0
    seed: int = 11
    mix: dict = field(default_factory=lambda: {"add": 3, "flags": 5, "move": 1, "delete": 1, "acl": 2})


def plain(value):
    """A JSON value of a CQL value (ids as strings, sets as sorted lists, dates as epoch milliseconds)."""
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, set | frozenset | list | tuple) or type(value).__name__ == "SortedSet":
        return sorted(plain(item) for item in value) or None
    if hasattr(value, "timestamp"):
        return round(value.timestamp() * 1000)
    return value


def plain_row(row: dict | None) -> dict | None:
    return None if row is None else {key: plain(value) for key, value in row.items()}


def _micros() -> int:
    return time.time_ns() // 1000


class Writer:
    def __init__(self, session, options: TrafficOptions):
        self.session = session
        self.options = options
        self.ks = options.keyspace
        self.random = random.Random(options.seed)
        self.messages: dict[tuple, dict] = {}  # (messageid, mailboxid, uid) -> truth row, as the writer knows it
        self.next_uid: dict = {}
        self.next_modseq: dict = {}
        self.acls: dict[str, tuple[int, dict]] = {}  # mailbox id -> (last eventId, entries)
        self.users: list[str] = []
        self._prepared: dict = {}
        self.counts = {"operations": 0, "partial": 0, "failed": 0}

    def prepare(self, cql: str):
        if cql not in self._prepared:
            self._prepared[cql] = self.session.prepare(cql)
        return self._prepared[cql]

    def execute(self, cql: str, values: list):
        return self.session.execute(self.prepare(cql), values)

    # ---- the state the writer starts from ----------------------------------------------------------------------

    def load(self) -> None:
        ks = self.ks
        for row in self.session.execute(f"SELECT {', '.join(MESSAGE_COLUMNS)} FROM {ks}.imapuidtable"):
            row = row._asdict()
            row["userflags"] = set(row["userflags"]) if row["userflags"] else None
            self.messages[(row["messageid"], row["mailboxid"], row["uid"])] = row
        mailboxes = {}
        for row in self.session.execute(f"SELECT id, mailboxbase FROM {ks}.mailbox"):
            mailboxes[row.id] = row.mailboxbase.user if row.mailboxbase else None
        self.users = sorted({user for user in mailboxes.values() if user})
        for mailbox in mailboxes:
            self.next_uid[mailbox] = 0
            self.next_modseq[mailbox] = 0
        for row in self.session.execute(f"SELECT mailboxid, nextuid FROM {ks}.messagecounter"):
            self.next_uid[row.mailboxid] = max(self.next_uid.get(row.mailboxid, 0), row.nextuid or 0)
        for row in self.session.execute(f"SELECT mailboxid, nextmodseq FROM {ks}.modseq"):
            self.next_modseq[row.mailboxid] = max(self.next_modseq.get(row.mailboxid, 0), row.nextmodseq or 0)
        for (_, mailbox, uid), row in self.messages.items():
            self.next_uid[mailbox] = max(self.next_uid.get(mailbox, 0), uid)
            self.next_modseq[mailbox] = max(self.next_modseq.get(mailbox, 0), row["modseq"] or 0)
        for row in self.session.execute(f"SELECT aggregateid, eventid, event FROM {ks}.eventstore"):
            known = self.acls.get(row.aggregateid)
            if known is not None and known[0] >= row.eventid:
                continue
            try:
                entries = json.loads(row.event)["aclDiff"]["newAcl"]["entries"]
            except (ValueError, KeyError, TypeError):
                entries = None  # unreadable: the writer leaves this mailbox's ACL alone
            self.acls[row.aggregateid] = (row.eventid, entries)
        for mailbox in mailboxes:
            self.acls.setdefault(str(mailbox), (-1, {}))

    # ---- generators (James: compare-and-set on messageCounter / modseq) ------------------------------------

    def uid(self, mailbox) -> int:
        self.next_uid[mailbox] = self.next_uid.get(mailbox, 0) + 1
        self.execute(
            f"UPDATE {self.ks}.messagecounter SET nextuid = ? WHERE mailboxid = ?", [self.next_uid[mailbox], mailbox]
        )
        return self.next_uid[mailbox]

    def modseq(self, mailbox) -> int:
        self.next_modseq[mailbox] = self.next_modseq.get(mailbox, 0) + 1
        self.execute(
            f"UPDATE {self.ks}.modseq SET nextmodseq = ? WHERE mailboxid = ?", [self.next_modseq[mailbox], mailbox]
        )
        return self.next_modseq[mailbox]

    # ---- projections written after the truth ----------------------------------------------------------------

    def write_projection_row(self, row: dict) -> dict:
        columns = [c for c in MESSAGE_COLUMNS if row.get(c) is not None or c in FLAGS]
        self.execute(
            f"INSERT INTO {self.ks}.messageidtable ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})",
            [row[c] for c in columns],
        )
        return {c: row.get(c) for c in MESSAGE_COLUMNS}

    def index_writes(self, row: dict, before: dict | None, removed: bool = False) -> list[dict]:
        """The index rows James adds or deletes for this message (before -> row), as log entries (not executed)."""
        changes = []
        for table, uid_column, flag, when in INDEXES:
            now_in = not removed and bool(row.get(flag)) == when
            was_in = before is not None and bool(before.get(flag)) == when
            if now_in != was_in:
                key = {"mailboxid": row["mailboxid"], uid_column: row["uid"]}
                changes.append({"table": table, "key": key, "row": dict(key) if now_in else None})
        return changes

    def apply_index(self, change: dict) -> None:
        table, key = change["table"], change["key"]
        names = list(key)
        if change["row"] is None:
            where = " AND ".join(f"{name} = ?" for name in names)
            self.execute(f"DELETE FROM {self.ks}.{table} WHERE {where}", [key[n] for n in names])
        else:
            self.execute(
                f"INSERT INTO {self.ks}.{table} ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})",
                [key[n] for n in names],
            )

    def add_keywords(self, mailbox, keywords) -> list[dict]:
        if not keywords:
            return []
        self.execute(
            f"UPDATE {self.ks}.applicableflag SET userflags = userflags + ? WHERE mailboxid = ?",
            [set(keywords), mailbox],
        )
        return [{"table": "applicableflag", "key": {"mailboxid": mailbox}, "row": {"userflags": set(keywords)}}]

    # ---- operations ----------------------------------------------------------------------------------------

    def op_add(self, partial: bool, mailbox=None, template: dict | None = None) -> dict:
        mailbox = mailbox or self.random.choice(list(self.next_uid))
        uid = self.uid(mailbox)
        message_id = template["messageid"] if template else uuid_from_time(time.time())
        row = {
            "messageid": message_id,
            "mailboxid": mailbox,
            "uid": uid,
            "modseq": self.modseq(mailbox),
            **{flag: False for flag in FLAGS},
            "flagseen": self.random.random() < 0.5,
            "flagrecent": self.random.random() < 0.3,
            "flagdeleted": self.random.random() < 0.1,
            "userflags": set(self.random.sample(KEYWORDS, self.random.randint(0, 2))) or None,
            "threadid": message_id,
            "internaldate": _now_ms(),
            "save_date": _now_ms(),
            "bodystartoctet": 400,
            "fullcontentoctets": 2_000 + self.random.randint(0, 100_000),
            "headercontent": f"header-blob-{message_id}",
        }
        if template:
            row.update(
                {key: template[key] for key in (*FLAGS, "userflags", "threadid", "internaldate", "headercontent")}
            )
        columns = [c for c in MESSAGE_COLUMNS if row.get(c) is not None]
        started = _micros()
        applied = self.execute(
            f"INSERT INTO {self.ks}.imapuidtable ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)}) "
            "IF NOT EXISTS",
            [row[c] for c in columns],
        ).one()
        truth = [_truth_entry(row, started)]
        if not _applied(applied):
            return {"truth": [], "projections": [], "error": "imapUidTable insert not applied"}
        self.messages[(message_id, mailbox, uid)] = row
        projections = [{"table": "messageidtable", "key": _message_key(row), "row": dict(row)}]
        projections += self.index_writes(row, None)
        if row["userflags"]:
            projections.append(
                {"table": "applicableflag", "key": {"mailboxid": mailbox}, "row": {"userflags": row["userflags"]}}
            )
        if not partial:
            self.write_projection_row(row)
            for change in projections:
                if change["table"] in ("messagedeleted", "firstunseen", "mailboxrecents"):
                    self.apply_index(change)
            self.add_keywords(mailbox, row["userflags"])
        return {"truth": truth, "projections": projections}

    def op_flags(self, partial: bool) -> dict:
        if not self.messages:
            return self.op_add(partial)
        key = self.random.choice(list(self.messages))
        before = self.messages[key]
        row = dict(before)
        for flag in self.random.sample(("flagseen", "flagflagged", "flagdeleted", "flagrecent", "flaganswered"), 2):
            row[flag] = not bool(before.get(flag))
        if self.random.random() < 0.5:
            row["userflags"] = set(before.get("userflags") or ()) ^ {self.random.choice(KEYWORDS)} or None
        row["modseq"] = self.modseq(row["mailboxid"])
        assignments = ", ".join(f"{c} = ?" for c in (*FLAGS, "userflags", "modseq"))
        values = [row[c] for c in (*FLAGS, "userflags", "modseq")]
        started = _micros()
        applied = self.execute(
            f"UPDATE {self.ks}.imapuidtable SET {assignments} WHERE messageid = ? AND mailboxid = ? AND uid = ? "
            "IF modseq = ?",
            [*values, *key, before["modseq"]],
        ).one()
        if not _applied(applied):
            return {"truth": [], "projections": [], "error": f"imapUidTable flag update not applied at {key}"}
        self.messages[key] = row
        written = {c: row[c] for c in (*FLAGS, "userflags", "modseq")}
        projections = [{"table": "messageidtable", "key": _message_key(row), "row": written}]
        projections += self.index_writes(row, before)
        added = set(row.get("userflags") or ()) - set(before.get("userflags") or ())
        if added:
            projections.append(
                {"table": "applicableflag", "key": {"mailboxid": row["mailboxid"]}, "row": {"userflags": added}}
            )
        if not partial:
            self.execute(
                f"UPDATE {self.ks}.messageidtable SET {assignments} WHERE mailboxid = ? AND uid = ?",
                [*values, row["mailboxid"], row["uid"]],
            )
            for change in projections:
                if change["table"] in ("messagedeleted", "firstunseen", "mailboxrecents"):
                    self.apply_index(change)
            self.add_keywords(row["mailboxid"], added)
        return {"truth": [_truth_entry(row, started)], "projections": projections}

    def op_delete(self, partial: bool, key: tuple | None = None) -> dict:
        if not self.messages:
            return self.op_add(partial)
        key = key or self.random.choice(list(self.messages))
        row = self.messages.pop(key)
        started = _micros()
        self.execute(f"DELETE FROM {self.ks}.imapuidtable WHERE messageid = ? AND mailboxid = ? AND uid = ?", list(key))
        projections = [{"table": "messageidtable", "key": _message_key(row), "row": None}]
        projections += self.index_writes(row, row, removed=True)
        if not partial:
            self.execute(f"DELETE FROM {self.ks}.messageidtable WHERE mailboxid = ? AND uid = ?", list(key[1:]))
            for change in projections[1:]:
                self.apply_index(change)
        return {"truth": [_truth_entry(row, started, deleted=True)], "projections": projections}

    def op_move(self, partial: bool) -> dict:
        """An add in the target, then a delete in the source; a partial failure stops after the first truth write."""
        if not self.messages:
            return self.op_add(partial)
        key = self.random.choice(list(self.messages))
        target = self.random.choice([mailbox for mailbox in self.next_uid if mailbox != key[1]] or [key[1]])
        added = self.op_add(partial, mailbox=target, template=self.messages[key])
        if partial:
            return added
        removed = self.op_delete(False, key)
        return {
            "truth": added["truth"] + removed["truth"],
            "projections": added["projections"] + removed["projections"],
        }

    def op_acl(self, partial: bool) -> dict:
        readable = [mailbox for mailbox, (_, entries) in self.acls.items() if entries is not None]
        if not readable or not self.users:
            return self.op_add(partial)
        mailbox = self.random.choice(readable)
        last, old = self.acls[mailbox]
        new = dict(old)
        user = self.random.choice(self.users)
        if user in new and self.random.random() < 0.5:
            del new[user]
        else:
            new[user] = self.random.choice(RIGHTS)
        event_id = last + 1
        event = {
            "eventId": event_id,
            "aggregateKey": mailbox,
            "type": "acl-updated",
            "aclDiff": {"oldAcl": {"entries": old}, "newAcl": {"entries": new}},
        }
        started = _micros()
        applied = self.execute(
            f"INSERT INTO {self.ks}.eventstore (aggregateid, eventid, event) VALUES (?, ?, ?) IF NOT EXISTS",
            [mailbox, event_id, json.dumps(event, separators=(",", ":"))],
        ).one()
        if not _applied(applied):
            return {"truth": [], "projections": [], "error": f"eventStore append not applied for {mailbox}"}
        self.acls[mailbox] = (event_id, new)
        mailbox_id = uuid.UUID(mailbox)
        projections = []
        for entry in sorted(set(old) | set(new)):
            if old.get(entry) == new.get(entry):
                continue
            rights = new.get(entry)
            projections.append(
                {
                    "table": "aclv2",
                    "key": {"id": mailbox_id, "key": entry},
                    "row": {"rights": set(rights)} if rights else None,
                }
            )
            if _user_entry(entry):
                canonical = "".join(letter for letter in "aeiklprstwx" if letter in (rights or ""))
                projections.append(
                    {
                        "table": "usermailboxacl",
                        "key": {"username": entry, "mailboxid": mailbox_id},
                        "row": {"rights": canonical} if canonical else None,
                    }
                )
        if not partial:
            for change in projections:
                self.apply_acl(change)
        truth = [
            {
                "table": "eventstore",
                "key": {"aggregateid": mailbox, "eventid": event_id},
                "row": {"event": json.dumps(event, separators=(",", ":"))},
                "window": [started, _micros()],
            }
        ]
        return {"truth": truth, "projections": projections}

    def apply_acl(self, change: dict) -> None:
        table, key, row = change["table"], change["key"], change["row"]
        names = list(key)
        where = " AND ".join(f"{name} = ?" for name in names)
        if row is None:
            self.execute(f"DELETE FROM {self.ks}.{table} WHERE {where}", [key[n] for n in names])
        else:
            self.execute(
                f"UPDATE {self.ks}.{table} SET rights = ? WHERE {where}", [row["rights"], *(key[n] for n in names)]
            )

    def step(self) -> dict:
        kinds = list(self.options.mix)
        kind = self.random.choices(kinds, weights=[self.options.mix[k] for k in kinds])[0]
        partial = self.random.random() < self.options.partial_share
        started = _micros()
        entry = getattr(self, f"op_{kind}")(partial)
        self.counts["operations"] += 1
        self.counts["partial"] += partial
        self.counts["failed"] += "error" in entry
        return {"op": kind, "partial": partial, "started": started, "finished": _micros(), **entry}


def _now_ms():
    from datetime import UTC, datetime

    now = datetime.now(UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def _applied(row) -> bool:
    return row is None or bool(row[0])


def _user_entry(key: str) -> bool:
    return not key.startswith(("-", "$")) and key not in ("owner", "anyone", "authenticated")


def _message_key(row: dict) -> dict:
    return {"mailboxid": row["mailboxid"], "uid": row["uid"]}


def _truth_entry(row: dict, started: int, deleted: bool = False) -> dict:
    return {
        "table": "imapuidtable",
        "key": {"messageid": row["messageid"], "mailboxid": row["mailboxid"], "uid": row["uid"]},
        "row": None if deleted else {c: row.get(c) for c in MESSAGE_COLUMNS},
        "window": [started, _micros()],
    }


def _jsonable(entry):
    if isinstance(entry, dict):
        return {key: _jsonable(value) for key, value in entry.items()}
    if isinstance(entry, list) and not entry or isinstance(entry, list) and isinstance(entry[0], dict):
        return [_jsonable(item) for item in entry]
    return plain(entry)


def log_line(entry: dict) -> str:
    """One operation of the log, as JSON."""
    return json.dumps(_jsonable(entry))


def run_writer(settings: CassandraSettings, options: TrafficOptions, stop=None) -> dict:
    """Write until `stop` (a multiprocessing Event) is set or `options.seconds` have passed; returns the counts.
    The log gets one JSON line per operation, flushed as it goes, and a last line `{"summary": counts}`."""
    session = connect(settings, options.keyspace)
    generation = detect_generation(session, options.keyspace)
    if generation != "3.9":
        close(session)
        raise OperatorError(f"keyspace '{options.keyspace}' holds the James {generation} schema: traffic writes 3.9")
    path = Path(options.log_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = Writer(session, options)
    try:
        writer.load()
        deadline = time.monotonic() + options.seconds
        with path.open("w") as log:
            log.write(json.dumps({"started": _micros()}) + "\n")
            log.flush()
            while time.monotonic() < deadline and not (stop is not None and stop.is_set()):
                began = time.monotonic()
                entry = writer.step()
                log.write(log_line(entry) + "\n")
                log.flush()
                if options.ops_per_second > 0:
                    time.sleep(max(0.0, 1.0 / options.ops_per_second - (time.monotonic() - began)))
            log.write(json.dumps({"summary": writer.counts, "finished": _micros()}) + "\n")
    finally:
        close(session)
    return writer.counts


def read_log(path: str | Path) -> list[dict]:
    """The operations of a writer's log (header and summary lines left out)."""
    entries = []
    for line in Path(path).read_text().splitlines():
        entry = json.loads(line)
        if "op" in entry:
            entries.append(entry)
    return entries


# ---- what the log says was written, against the tables ---------------------------------------------------------

# The projection tables the writer writes, by their key columns.
KEY_COLUMNS = {
    "messageidtable": ("mailboxid", "uid"),
    "messagedeleted": ("mailboxid", "uid"),
    "firstunseen": ("mailboxid", "uid"),
    "mailboxrecents": ("mailboxid", "recent_mesage_uid"),
    "applicableflag": ("mailboxid",),
    "aclv2": ("id", "key"),
    "usermailboxacl": ("username", "mailboxid"),
}


def key_of(table: str, key: dict) -> tuple:
    return (table, *(str(key[column]) for column in KEY_COLUMNS[table]))


def read_projections(session, keyspace: str) -> dict:
    """(table, key...) -> the row as plain JSON values, for every projection table the writer writes."""
    rows = {}
    for table, columns in KEY_COLUMNS.items():
        for row in session.execute(f"SELECT * FROM {keyspace}.{table}"):
            values = {name: plain(value) for name, value in row._asdict().items()}
            rows[(table, *(str(values[column]) for column in columns))] = values
    return rows


def undone_writes(log: list[dict], projections: dict) -> list[dict]:
    """Projection rows whose last write by the writer (a complete operation) is not what the table holds now: what a
    repair or an undo running meanwhile took from a user."""
    last: dict = {}
    undone = []
    for entry in log:
        for change in entry["projections"]:
            key = key_of(change["table"], change["key"])
            if change["table"] == "applicableflag":
                # Add-only: every keyword a complete operation added must still be there.
                held = set((projections.get(key) or {}).get("userflags") or ())
                if not entry["partial"] and not set(change["row"]["userflags"]) <= held:
                    undone.append({"key": key, "wrote": change["row"], "now": projections.get(key)})
                continue
            last[key] = (entry, change)
    for key, (entry, change) in last.items():
        if entry["partial"] or "error" in entry:
            continue
        now = projections.get(key)
        wrote = change["row"]
        if wrote is None:
            ok = now is None
        else:
            ok = now is not None and all(now.get(column) == value for column, value in wrote.items())
        if not ok:
            undone.append({"key": key, "op": entry["op"], "wrote": wrote, "now": now})
    return undone
