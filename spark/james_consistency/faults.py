"""`james-consistency break`: reproduce one of James's partial-write failures and record exactly what was broken.

Each kind does what a half-applied James write leaves behind (see the reference's "How James writes"): the write
that succeeded is kept, the one that failed is undone or skewed. Rows are chosen by a hash of their key and the
random seed (about `rate` of the candidates, at least one), streamed from Cassandra, so a big keyspace costs no
memory. The manifest (JSON) lists every broken row with its key, before and after values, and the inconsistency
kind a repair should report for it.
"""

import json
import random
import uuid
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from cassandra.query import SimpleStatement

from james_consistency.cql import CassandraSettings, close, connect, table_names
from james_consistency.errors import OperatorError
from james_consistency.paths import LOCAL_DIR
from james_consistency.schema import detect_generation, validate_keyspace_name


@dataclass
class Damage:
    """What one fault kind does: the tables it needs and the function that breaks rows."""

    description: str
    tables: tuple[str, ...]
    breaks: Callable[["Injection"], list[dict]]
    generations: tuple[str, ...] = ("3.9", "3.5")


@dataclass
class Injection:
    session: object
    keyspace: str
    generation: str
    rate: float
    seed: int

    def chosen(self, query: str, key: Callable) -> Iterator:
        """Rows of `query` whose key hashes under the rate (at least one row when there are candidates)."""
        threshold = int(self.rate * 1_000_000)
        first = None
        picked = 0
        for row in self.session.execute(SimpleStatement(query, fetch_size=5_000)):
            first = first or row
            digest = zlib.crc32(f"{self.seed}|{key(row)}".encode()) % 1_000_000
            if digest < threshold:
                picked += 1
                yield row
        if picked == 0 and first is not None and self.rate > 0:
            yield first

    def run(self, cql: str, values) -> None:
        self.session.execute(cql, values)


def _text(value):
    if isinstance(value, uuid.UUID | datetime):
        return str(value)
    if isinstance(value, set | frozenset) or type(value).__name__ == "SortedSet":
        return sorted(value)
    return value


def _message_key(row) -> dict:
    return {"mailboxId": str(row.mailboxid), "uid": row.uid, "messageId": str(row.messageid)}


# ---- messages ------------------------------------------------------------------------------------------------


def projection_missing(job: Injection) -> list[dict]:
    broken = []
    for row in job.chosen(f"SELECT mailboxid, uid, messageid FROM {job.keyspace}.messageidtable", _key_of):
        job.run(
            f"DELETE FROM {job.keyspace}.messageidtable WHERE mailboxid = %s AND uid = %s", (row.mailboxid, row.uid)
        )
        broken.append({**_message_key(row), "table": "messageIdTable", "expected_kind": "missing"})
    return broken


def projection_stale_flags(job: Injection) -> list[dict]:
    """The BOB story: a flag change reached imapUidTable but not messageIdTable (seen in JMAP, unseen in IMAP)."""
    broken = []
    query = f"SELECT mailboxid, uid, messageid, flagseen, flagflagged, userflags FROM {job.keyspace}.messageidtable"
    for row in job.chosen(query, _key_of):
        job.run(
            f"UPDATE {job.keyspace}.messageidtable SET flagseen = %s, flagflagged = %s, userflags = userflags + %s "
            "WHERE mailboxid = %s AND uid = %s",
            (not row.flagseen, not row.flagflagged, {"$stale-keyword"}, row.mailboxid, row.uid),
        )
        broken.append(
            {
                **_message_key(row),
                "table": "messageIdTable",
                "expected_kind": "outdated",
                "before": {"flagseen": row.flagseen, "flagflagged": row.flagflagged, "userflags": _text(row.userflags)},
                "after": {"flagseen": not row.flagseen, "flagflagged": not row.flagflagged},
            }
        )
    return broken


def projection_outdated(job: Injection) -> list[dict]:
    broken = []
    for row in job.chosen(f"SELECT mailboxid, uid, messageid, modseq FROM {job.keyspace}.messageidtable", _key_of):
        changes = {"modseq": (row.modseq or 0) + 1_000}
        if job.generation == "3.9":
            changes.update(headercontent="stale-header-blob", fullcontentoctets=1)
        assignments = ", ".join(f"{column} = %s" for column in changes)
        job.run(
            f"UPDATE {job.keyspace}.messageidtable SET {assignments} WHERE mailboxid = %s AND uid = %s",
            (*changes.values(), row.mailboxid, row.uid),
        )
        broken.append(
            {
                **_message_key(row),
                "table": "messageIdTable",
                "expected_kind": "outdated",
                "before": {"modseq": row.modseq},
                "after": changes,
            }
        )
    return broken


def projection_orphan(job: Injection) -> list[dict]:
    """A delete that reached imapUidTable but not messageIdTable."""
    broken = []
    for row in job.chosen(f"SELECT messageid, mailboxid, uid FROM {job.keyspace}.imapuidtable", _key_of):
        job.run(
            f"DELETE FROM {job.keyspace}.imapuidtable WHERE messageid = %s AND mailboxid = %s AND uid = %s",
            (row.messageid, row.mailboxid, row.uid),
        )
        broken.append({**_message_key(row), "table": "messageIdTable", "expected_kind": "orphan"})
    return broken


def projection_wrong_uid(job: Injection) -> list[dict]:
    """A projection row of a real message at a uid the message does not have (James's task keeps it)."""
    broken = []
    for row in job.chosen(f"SELECT * FROM {job.keyspace}.messageidtable", _key_of):
        values = row._asdict()
        values["uid"] = row.uid + 1_000_000
        columns = [column for column, value in values.items() if value is not None]
        job.run(
            f"INSERT INTO {job.keyspace}.messageidtable ({', '.join(columns)}) "
            f"VALUES ({', '.join('%s' for _ in columns)})",
            [values[column] for column in columns],
        )
        broken.append(
            {
                "mailboxId": str(row.mailboxid),
                "uid": values["uid"],
                "messageId": str(row.messageid),
                "trueUid": row.uid,
                "table": "messageIdTable",
                "expected_kind": "orphan",
            }
        )
    return broken


def truth_malformed(job: Injection) -> list[dict]:
    """imapUidTable rows no James would write (uid 0, no modSeq): the truth-health gate must stop the repair."""
    broken = []
    for row in job.chosen(f"SELECT messageid, mailboxid FROM {job.keyspace}.imapuidtable", _key_of):
        job.run(
            f"INSERT INTO {job.keyspace}.imapuidtable (messageid, mailboxid, uid, flagseen) VALUES (%s, %s, 0, true)",
            (row.messageid, row.mailboxid),
        )
        broken.append(
            {"messageId": str(row.messageid), "mailboxId": str(row.mailboxid), "uid": 0, "table": "imapUidTable"}
        )
        broken[-1]["expected_kind"] = "truth-unhealthy"
    return broken


# ---- ACLs ----------------------------------------------------------------------------------------------------


def acl_user_missing(job: Injection) -> list[dict]:
    broken = []
    for row in job.chosen(f"SELECT username, mailboxid, rights FROM {job.keyspace}.usermailboxacl", _key_of):
        job.run(
            f"DELETE FROM {job.keyspace}.usermailboxacl WHERE username = %s AND mailboxid = %s",
            (row.username, row.mailboxid),
        )
        broken.append(
            {
                "userName": row.username,
                "mailboxId": str(row.mailboxid),
                "before": row.rights,
                "expected_kind": "missing",
            }
        )
    return broken


def acl_user_extra(job: Injection) -> list[dict]:
    broken = []
    for row in job.chosen(f"SELECT id FROM {job.keyspace}.mailbox", _key_of):
        job.run(
            f"INSERT INTO {job.keyspace}.usermailboxacl (username, mailboxid, rights) VALUES (%s, %s, 'lr')",
            ("intruder@domain.tld", row.id),
        )
        broken.append({"userName": "intruder@domain.tld", "mailboxId": str(row.id), "expected_kind": "orphan"})
    return broken


def acl_user_wrong_rights(job: Injection) -> list[dict]:
    broken = []
    for row in job.chosen(f"SELECT username, mailboxid, rights FROM {job.keyspace}.usermailboxacl", _key_of):
        wrong = "aeiklprstwx" if row.rights != "aeiklprstwx" else "l"
        job.run(
            f"UPDATE {job.keyspace}.usermailboxacl SET rights = %s WHERE username = %s AND mailboxid = %s",
            (wrong, row.username, row.mailboxid),
        )
        broken.append(
            {
                "userName": row.username,
                "mailboxId": str(row.mailboxid),
                "before": row.rights,
                "after": wrong,
                "expected_kind": "outdated",
            }
        )
    return broken


def aclv2_missing(job: Injection) -> list[dict]:
    broken = []
    for row in job.chosen(f"SELECT id, key, rights FROM {job.keyspace}.aclv2", _key_of):
        job.run(f"DELETE FROM {job.keyspace}.aclv2 WHERE id = %s AND key = %s", (row.id, row.key))
        broken.append(
            {"mailboxId": str(row.id), "key": row.key, "before": _text(row.rights), "expected_kind": "missing"}
        )
    return broken


def aclv2_wrong(job: Injection) -> list[dict]:
    broken = []
    for row in job.chosen(f"SELECT id, key, rights FROM {job.keyspace}.aclv2", _key_of):
        job.run(f"UPDATE {job.keyspace}.aclv2 SET rights = {{'a'}} WHERE id = %s AND key = %s", (row.id, row.key))
        broken.append(
            {
                "mailboxId": str(row.id),
                "key": row.key,
                "before": _text(row.rights),
                "after": ["a"],
                "expected_kind": "outdated",
            }
        )
    return broken


def acl_json_malformed(job: Injection) -> list[dict]:
    """A legacy `acl` row James reads as an EMPTY ACL: a repair must report it and leave its projection alone."""
    broken = []
    for row in job.chosen(f"SELECT id, acl FROM {job.keyspace}.acl", _key_of):
        job.run(f"UPDATE {job.keyspace}.acl SET acl = %s WHERE id = %s", ('{"entries":{"bob@domain.tld":"lr', row.id))
        broken.append({"mailboxId": str(row.id), "before": row.acl, "expected_kind": "malformed-truth"})
    return broken


def acl_event_unknown_type(job: Injection) -> list[dict]:
    broken = []
    query = f"SELECT aggregateid, eventid FROM {job.keyspace}.eventstore PER PARTITION LIMIT 1"
    for row in job.chosen(query, _key_of):
        last = job.session.execute(
            f"SELECT eventid FROM {job.keyspace}.eventstore WHERE aggregateid = %s ORDER BY eventid DESC LIMIT 1",
            (row.aggregateid,),
        ).one()
        event_id = last.eventid + 1
        event = {"eventId": event_id, "aggregateKey": row.aggregateid, "type": "acl-frobnicated", "payload": {}}
        job.run(
            f"INSERT INTO {job.keyspace}.eventstore (aggregateid, eventid, event) VALUES (%s, %s, %s)",
            (row.aggregateid, event_id, json.dumps(event)),
        )
        broken.append({"mailboxId": row.aggregateid, "eventId": event_id, "expected_kind": "malformed-truth"})
    return broken


# ---- mailboxes -----------------------------------------------------------------------------------------------


def _path_table(job: Injection) -> str:
    return "mailboxpathv3" if job.generation == "3.9" else "mailboxpathv2"


def mailbox_path_orphan(job: Injection) -> list[dict]:
    """The mailbox row is gone, its path registration stays."""
    broken = []
    for row in job.chosen(f"SELECT id, mailboxbase, name FROM {job.keyspace}.mailbox", _key_of):
        job.run(f"DELETE FROM {job.keyspace}.mailbox WHERE id = %s", (row.id,))
        broken.append({"mailboxId": str(row.id), "mailboxPath": _path_text(row), "expected_kind": "orphan-path"})
    return broken


def mailbox_orphan(job: Injection) -> list[dict]:
    """The mailbox row stays, its path registration is gone."""
    broken = []
    for row in job.chosen(f"SELECT id, mailboxbase, name FROM {job.keyspace}.mailbox", _key_of):
        job.run(
            f"DELETE FROM {job.keyspace}.{_path_table(job)} WHERE namespace = %s AND user = %s AND mailboxname = %s",
            (row.mailboxbase.namespace, row.mailboxbase.user, row.name),
        )
        broken.append({"mailboxId": str(row.id), "mailboxPath": _path_text(row), "expected_kind": "orphan-mailbox"})
    return broken


def mailbox_two_paths(job: Injection) -> list[dict]:
    """A rename that registered the new path but did not remove the old one: one id under two paths."""
    broken = []
    for row in job.chosen(f"SELECT id, mailboxbase, name, uidvalidity FROM {job.keyspace}.mailbox", _key_of):
        other_name = f"{row.name}-renamed"
        _insert_path(job, row.mailboxbase.namespace, row.mailboxbase.user, other_name, row.id, row.uidvalidity)
        broken.append(
            {
                "mailboxId": str(row.id),
                "mailboxPath": _path_text(row),
                "otherPath": f"{row.mailboxbase.namespace}:{row.mailboxbase.user}:{other_name}",
                "expected_kind": "one-id-two-paths",
            }
        )
    return broken


def mailbox_path_conflict(job: Injection) -> list[dict]:
    """A second mailbox row claims a path already registered to another id: two ids under one path."""
    rng = random.Random(job.seed)
    broken = []
    for row in job.chosen(f"SELECT id, mailboxbase, name, uidvalidity FROM {job.keyspace}.mailbox", _key_of):
        intruder = uuid.UUID(int=(row.id.int ^ (rng.getrandbits(48))), version=1)
        job.run(
            f"INSERT INTO {job.keyspace}.mailbox (id, mailboxbase, name, uidvalidity) "
            "VALUES (%s, {namespace: %s, user: %s}, %s, %s)",
            (intruder, row.mailboxbase.namespace, row.mailboxbase.user, row.name, row.uidvalidity + 1),
        )
        broken.append(
            {
                "mailboxId": str(row.id),
                "otherMailboxId": str(intruder),
                "mailboxPath": _path_text(row),
                "expected_kind": "two-ids-one-path",
            }
        )
    return broken


def _insert_path(job: Injection, namespace, user, name, mailbox_id, uidvalidity) -> None:
    if job.generation == "3.9":
        job.run(
            f"INSERT INTO {job.keyspace}.mailboxpathv3 (namespace, user, mailboxname, mailboxid, uidvalidity) "
            "VALUES (%s, %s, %s, %s, %s)",
            (namespace, user, name, mailbox_id, uidvalidity),
        )
    else:
        job.run(
            f"INSERT INTO {job.keyspace}.mailboxpathv2 (namespace, user, mailboxname, mailboxid) "
            "VALUES (%s, %s, %s, %s)",
            (namespace, user, name, mailbox_id),
        )


def _path_text(row) -> str:
    return f"{row.mailboxbase.namespace}:{row.mailboxbase.user}:{row.name}"


# ---- per-mailbox indexes -------------------------------------------------------------------------------------

_INDEXES = {
    # index table -> (uid column, truth condition on an imapUidTable row)
    "messagedeleted": ("uid", lambda row: row.flagdeleted),
    "firstunseen": ("uid", lambda row: not row.flagseen),
    "mailboxrecents": ("recent_mesage_uid", lambda row: row.flagrecent),
}


def _index_missing(table: str) -> Callable[[Injection], list[dict]]:
    uid_column, _ = _INDEXES[table]

    def breaks(job: Injection) -> list[dict]:
        broken = []
        for row in job.chosen(f"SELECT mailboxid, {uid_column} FROM {job.keyspace}.{table}", _key_of):
            uid = getattr(row, uid_column)
            job.run(
                f"DELETE FROM {job.keyspace}.{table} WHERE mailboxid = %s AND {uid_column} = %s", (row.mailboxid, uid)
            )
            broken.append({"mailboxId": str(row.mailboxid), "uid": uid, "table": table, "expected_kind": "missing"})
        return broken

    return breaks


def _index_stale(table: str) -> Callable[[Injection], list[dict]]:
    """An index entry for a message that does not (or no longer) qualify: e.g. a flag removed, the index not updated."""
    uid_column, qualifies = _INDEXES[table]

    def breaks(job: Injection) -> list[dict]:
        broken = []
        query = f"SELECT mailboxid, uid, messageid, flagdeleted, flagseen, flagrecent FROM {job.keyspace}.imapuidtable"
        for row in job.chosen(query, _key_of):
            if qualifies(row):
                continue
            job.run(
                f"INSERT INTO {job.keyspace}.{table} (mailboxid, {uid_column}) VALUES (%s, %s)",
                (row.mailboxid, row.uid),
            )
            broken.append({"mailboxId": str(row.mailboxid), "uid": row.uid, "table": table, "expected_kind": "orphan"})
        return broken

    return breaks


def applicable_flag_missing(job: Injection) -> list[dict]:
    broken = []
    for row in job.chosen(f"SELECT mailboxid, userflags FROM {job.keyspace}.applicableflag", _key_of):
        if not row.userflags:
            continue
        keyword = sorted(row.userflags)[0]
        job.run(
            f"UPDATE {job.keyspace}.applicableflag SET userflags = userflags - %s WHERE mailboxid = %s",
            ({keyword}, row.mailboxid),
        )
        broken.append({"mailboxId": str(row.mailboxid), "keyword": keyword, "expected_kind": "missing"})
    return broken


# ---- counters ------------------------------------------------------------------------------------------------


def counters_wrong(job: Injection) -> list[dict]:
    """A counter increment lost or doubled (James only logs counter write failures)."""
    broken = []
    for row in job.chosen(f"SELECT mailboxid, count, unseen FROM {job.keyspace}.mailboxcounters", _key_of):
        job.run(
            f"UPDATE {job.keyspace}.mailboxcounters SET count = count + 3, unseen = unseen - 1 WHERE mailboxid = %s",
            (row.mailboxid,),
        )
        broken.append(
            {
                "mailboxId": str(row.mailboxid),
                "before": {"count": row.count, "unseen": row.unseen},
                "after": {"count": row.count + 3, "unseen": row.unseen - 1},
                "expected_kind": "outdated",
            }
        )
    return broken


def quota_wrong(job: Injection) -> list[dict]:
    broken = []
    if job.generation == "3.9":
        query = f"SELECT identifier, quotacomponent, quotatype, currentvalue FROM {job.keyspace}.quotacurrentvalue"
        for row in job.chosen(query, _key_of):
            job.run(
                f"UPDATE {job.keyspace}.quotacurrentvalue SET currentvalue = currentvalue + 7 "
                "WHERE identifier = %s AND quotacomponent = %s AND quotatype = %s",
                (row.identifier, row.quotacomponent, row.quotatype),
            )
            broken.append(
                {
                    "quotaRoot": row.identifier,
                    "quotaType": row.quotatype,
                    "before": row.currentvalue,
                    "after": row.currentvalue + 7,
                    "expected_kind": "outdated",
                }
            )
    else:
        for row in job.chosen(f"SELECT quotaroot, messagecount, storage FROM {job.keyspace}.currentquota", _key_of):
            job.run(
                f"UPDATE {job.keyspace}.currentquota SET messagecount = messagecount + 7, storage = storage - 100 "
                "WHERE quotaroot = %s",
                (row.quotaroot,),
            )
            broken.append(
                {
                    "quotaRoot": row.quotaroot,
                    "before": {"messageCount": row.messagecount, "storage": row.storage},
                    "after": {"messageCount": row.messagecount + 7, "storage": row.storage - 100},
                    "expected_kind": "outdated",
                }
            )
    return broken


def _key_of(row) -> str:
    return "|".join(str(value) for value in row)


KINDS: dict[str, Damage] = {
    "projection-missing": Damage(
        "messageIdTable row missing (added message, projection write failed)", ("messageidtable",), projection_missing
    ),
    "projection-stale-flags": Damage(
        "messageIdTable flags/keywords differ from imapUidTable (BOB: seen in JMAP, unseen in IMAP)",
        ("messageidtable",),
        projection_stale_flags,
    ),
    "projection-outdated": Damage(
        "messageIdTable modSeq (3.9: size, header blob) differs from imapUidTable",
        ("messageidtable",),
        projection_outdated,
    ),
    "projection-orphan": Damage(
        "messageIdTable row whose imapUidTable row was deleted (delete half-applied)",
        ("imapuidtable",),
        projection_orphan,
    ),
    "projection-wrong-uid": Damage(
        "messageIdTable row of a real message at a uid it does not have", ("messageidtable",), projection_wrong_uid
    ),
    "truth-malformed": Damage(
        "imapUidTable row with uid 0 and no modSeq (the truth gate must stop the repair)",
        ("imapuidtable",),
        truth_malformed,
    ),
    "acl-user-missing": Damage(
        "UserMailboxACL row missing for a user holding rights", ("usermailboxacl",), acl_user_missing
    ),
    "acl-user-extra": Damage(
        "UserMailboxACL row for a user holding no right", ("usermailboxacl", "mailbox"), acl_user_extra
    ),
    "acl-user-wrong-rights": Damage(
        "UserMailboxACL rights differ from the ACL", ("usermailboxacl",), acl_user_wrong_rights
    ),
    "aclv2-missing": Damage("aclv2 entry missing", ("aclv2",), aclv2_missing, ("3.9",)),
    "aclv2-wrong": Damage("aclv2 entry with wrong rights", ("aclv2",), aclv2_wrong, ("3.9",)),
    "acl-json-malformed": Damage(
        "legacy acl JSON unparsable (James reads it as an empty ACL)", ("acl",), acl_json_malformed, ("3.5",)
    ),
    "acl-event-unknown-type": Damage(
        "eventStore event of an unknown type after the ACL events", ("eventstore",), acl_event_unknown_type, ("3.9",)
    ),
    "mailbox-path-orphan": Damage("path registration without its mailbox row", ("mailbox",), mailbox_path_orphan),
    "mailbox-orphan": Damage("mailbox row without its path registration", ("mailbox",), mailbox_orphan),
    "mailbox-two-paths": Damage("one mailbox id registered under two paths", ("mailbox",), mailbox_two_paths),
    "mailbox-path-conflict": Damage("two mailbox ids claiming one path", ("mailbox",), mailbox_path_conflict),
    "deleted-missing": Damage(
        "messageDeleted entry missing for a \\Deleted message", ("messagedeleted",), _index_missing("messagedeleted")
    ),
    "deleted-stale": Damage(
        "messageDeleted entry for a message not \\Deleted", ("messagedeleted",), _index_stale("messagedeleted")
    ),
    "unseen-missing": Damage(
        "firstUnseen entry missing for an unseen message", ("firstunseen",), _index_missing("firstunseen")
    ),
    "unseen-stale": Damage("firstUnseen entry for a seen message", ("firstunseen",), _index_stale("firstunseen")),
    "recent-missing": Damage(
        "mailboxRecents entry missing for a \\Recent message", ("mailboxrecents",), _index_missing("mailboxrecents")
    ),
    "recent-stale": Damage(
        "mailboxRecents entry for a message not \\Recent", ("mailboxrecents",), _index_stale("mailboxrecents")
    ),
    "applicable-flag-missing": Damage(
        "applicableFlag lacks a keyword used in the mailbox", ("applicableflag",), applicable_flag_missing
    ),
    "counters-wrong": Damage(
        "mailboxCounters count/unseen off (lost or doubled increment)", ("mailboxcounters",), counters_wrong
    ),
    "quota-wrong": Damage("current quota (quotaCurrentValue, or 3.5 currentQuota) off", (), quota_wrong),
}


def inject(
    settings: CassandraSettings,
    *,
    keyspace: str,
    kind: str,
    rate: float,
    random_seed: int = 7,
    manifest_path: str | None = None,
) -> dict:
    """Break about `rate` of the candidate rows the way `kind` says; write and return the manifest."""
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
            raise OperatorError(f"fault kind '{kind}' exists only in the James {'/'.join(damage.generations)} schema")
        missing = [table for table in damage.tables if table not in table_names(session, keyspace)]
        if missing:
            raise OperatorError(f"keyspace '{keyspace}' has no table {', '.join(missing)} needed by '{kind}'")
        rows = damage.breaks(Injection(session, keyspace, generation, rate, random_seed))
    finally:
        close(session)
    created = datetime.now(UTC)
    path = Path(manifest_path or LOCAL_DIR / "faults" / f"{keyspace}-{kind}-{created.strftime('%Y%m%dT%H%M%S%f')}.json")
    manifest = {
        "kind": kind,
        "description": damage.description,
        "keyspace": keyspace,
        "generation": generation,
        "rate": rate,
        "random_seed": random_seed,
        "tables": list(damage.tables),
        "count": len(rows),
        "created_at": created.isoformat(),
        "path": str(path),
        "rows": rows,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest, indent=2, default=_text) + "\n")
    return manifest
