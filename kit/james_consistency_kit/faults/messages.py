"""Faults of the message tables: messageIdTable rows missing, stale, orphaned or at a wrong uid, and imapUidTable
rows no James writes (the truth gate must stop the repair)."""

from collections.abc import Callable

from james_consistency.cassandra.schema import FLAG_COLUMNS

from james_consistency_kit.faults.base import Damage, Injection, plain, register, row_values

NAMESPACE = "#private"
FLAGS = tuple(flag.lower() for flag in FLAG_COLUMNS)


def truth_rows(job: Injection, keys: list[tuple]) -> list:
    """imapUidTable rows at (messageId, mailboxId, uid)."""
    return job.read(
        f"SELECT * FROM {job.keyspace}.imapuidtable WHERE messageid = ? AND mailboxid = ? AND uid = ?", keys
    )


def projection_rows(job: Injection, keys: list[tuple]) -> list:
    """messageIdTable rows at (mailboxId, uid)."""
    return job.read(f"SELECT * FROM {job.keyspace}.messageidtable WHERE mailboxid = ? AND uid = ?", keys)


def _message_key(row) -> dict:
    return {"mailboxId": str(row.mailboxid), "uid": row.uid, "messageId": str(row.messageid)}


def _projection_key(row) -> tuple:
    return (row.mailboxid, row.uid)


def truth_key(row) -> tuple:
    return (row.messageid, row.mailboxid, row.uid)


def _with_truth(job: Injection) -> Callable[[list], list]:
    """Keeps the messageIdTable rows whose imapUidTable row exists (the projection row is not already an orphan)."""

    def valid(rows: list) -> list:
        truth = truth_rows(job, [(row.messageid, row.mailboxid, row.uid) for row in rows])
        return [row for row, found in zip(rows, truth, strict=True) if found is not None]

    return valid


def _with_projection(job: Injection) -> Callable[[list], list]:
    """Keeps the imapUidTable rows that messageIdTable holds for the same message."""

    def valid(rows: list) -> list:
        projection = projection_rows(job, [(row.mailboxid, row.uid) for row in rows])
        return [
            row
            for row, found in zip(rows, projection, strict=True)
            if found is not None and found.messageid == row.messageid
        ]

    return valid


def _messages(job: Injection) -> list:
    """Chosen messageIdTable rows (whole: their values go to the manifest) whose truth exists."""
    return job.pick(f"SELECT * FROM {job.keyspace}.messageidtable", _projection_key, valid=_with_truth(job))


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
                "before": row_values(row),
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
                "before": {"flagseen": row.flagseen, "userflags": plain(row.userflags)},
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
                "before": {column: plain(getattr(row, column)) for column in changes},
                "after": changes,
            }
        )
    return broken


def projection_orphan(job: Injection) -> list[dict]:
    """Delete half-applied: imapUidTable deleted, the messageIdTable delete failed, so the index updates that follow
    never ran either: the counters, the quota and the flag indexes still count the message."""
    broken = []
    for row in job.pick(f"SELECT * FROM {job.keyspace}.imapuidtable", truth_key, valid=_with_projection(job)):
        job.write(
            f"DELETE FROM {job.keyspace}.imapuidtable WHERE messageid = ? AND mailboxid = ? AND uid = ?",
            truth_key(row),
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
                "before": row_values(row),
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
                "after": {key: plain(value) for key, value in values.items()},
            }
        )
    return broken


def truth_malformed(job: Injection) -> list[dict]:
    """imapUidTable rows no James writes: uid 0, no modSeq, no flags. The truth-health gate must stop the repair."""
    broken = []
    query = f"SELECT messageid, mailboxid, uid FROM {job.keyspace}.imapuidtable"
    chosen = job.pick(query, truth_key, where=lambda r: r.uid > 0)
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
    for row in job.pick(f"SELECT * FROM {job.keyspace}.imapuidtable", truth_key, where=healthy):
        columns = ("modseq", *FLAGS)
        job.write(
            f"DELETE {', '.join(columns)} FROM {job.keyspace}.imapuidtable "
            "WHERE messageid = ? AND mailboxid = ? AND uid = ?",
            truth_key(row),
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


register(
    {
        "projection-missing": Damage(
            "messageIdTable row missing (message added, projection write failed)",
            ("messageidtable",),
            projection_missing,
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
    }
)
