"""Faults of the ACL projections: UserMailboxACL and aclv2 rows missing, extra or with other rights, an ACL updated
without its projections, and ACL truths James cannot read (3.5 JSON torn, 3.9 events of an unknown type)."""

import json
import uuid

from james_consistency.projections.acl import is_mailbox_acl_aggregate

from james_consistency_kit.faults.base import Damage, Injection, plain, register
from james_consistency_kit.seed import canonical_rights


def current_acls(job: Injection) -> dict:
    """mailboxId -> the entries of its current ACL, or None when the truth cannot be read."""
    acls = {}
    if job.generation == "3.9":
        for aggregate, (_, event) in last_events(job).items():
            try:
                acls[uuid.UUID(aggregate)] = _event_acl(event)
            except ValueError:
                continue  # not a mailbox's aggregate
    else:
        for row in job.session.execute(f"SELECT id, acl FROM {job.keyspace}.acl"):
            acls[row.id] = _json_acl(row.acl)
    return acls


def last_events(job: Injection) -> dict:
    """mailboxId (text) -> (last eventId, event JSON) of the eventStore."""
    last = {}
    for row in job.session.execute(f"SELECT aggregateid, eventid, event FROM {job.keyspace}.eventstore"):
        if row.aggregateid not in last or row.eventid > last[row.aggregateid][0]:
            last[row.aggregateid] = (row.eventid, row.event)
    return last


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
    return others[job.digest((mailbox_id,)) % len(others)]


def acl_user_extra(job: Injection) -> list[dict]:
    """A revoked share whose UserMailboxACL delete failed: a user without rights still lists the mailbox."""
    acls = current_acls(job)
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
        wrong = canonical_rights((row.rights or "") + "ax")
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
                "before": {"rights": plain(row.rights)},
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
                "before": {"rights": plain(row.rights)},
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
    last = last_events(job)
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
    acls = current_acls(job)
    last = last_events(job) if job.generation == "3.9" else {}
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


register(
    {
        "acl-user-missing": Damage(
            "UserMailboxACL row missing for a user holding rights", ("usermailboxacl",), acl_user_missing
        ),
        "acl-user-extra": Damage(
            "UserMailboxACL row for a user holding no right (revoked share)",
            ("usermailboxacl", "mailbox"),
            acl_user_extra,
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
    }
)
