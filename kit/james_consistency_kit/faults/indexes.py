"""Faults of the per-mailbox indexes: messageDeleted, firstUnseen and mailboxRecents missing a qualifying uid or
holding one that no longer qualifies, and applicableFlag missing a keyword."""

from collections.abc import Callable

from james_consistency_kit.faults.base import Damage, Injection, register
from james_consistency_kit.faults.messages import truth_key

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
        for row in job.pick(query, truth_key, where=lambda r: r.uid > 0 and not qualifies(r)):
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
        keyword = keywords[job.digest((row.mailboxid, "keyword")) % len(keywords)]
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


register(
    {
        "deleted-missing": Damage(
            "messageDeleted lacks a \\Deleted message", ("messagedeleted",), _index_missing("messagedeleted")
        ),
        "deleted-stale": Damage(
            "messageDeleted holds a message not \\Deleted",
            ("messagedeleted", "imapuidtable"),
            _index_stale("messagedeleted"),
        ),
        "unseen-missing": Damage(
            "firstUnseen lacks an unseen message", ("firstunseen",), _index_missing("firstunseen")
        ),
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
    }
)
