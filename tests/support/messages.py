"""Hand-made James message rows for tests, written and read back with plain CQL (no project code)."""

import uuid
from datetime import UTC, datetime

from cassandra.util import uuid_from_time

FLAGS = ("flaganswered", "flagdeleted", "flagdraft", "flagflagged", "flagrecent", "flagseen", "flaguser")


def timeuuid(n: int) -> uuid.UUID:
    """A stable version-1 UUID per number (James ids are timeuuids)."""
    return uuid_from_time(1_700_000_000 + n, node=0x1234, clock_seq=n % 16384)


def message(generation: str, mailbox: uuid.UUID, uid: int, number: int, **overrides) -> dict:
    """One truth row of imapUidTable as James writes it."""
    row = {
        "messageid": timeuuid(10_000 + number),
        "mailboxid": mailbox,
        "uid": uid,
        "modseq": 100 + uid,
        **{flag: False for flag in FLAGS},
        "flagseen": uid % 3 != 0,
        "userflags": {"$Forwarded"} if uid % 4 == 0 else None,
    }
    if generation == "3.9":
        row.update(
            threadid=row["messageid"],
            internaldate=datetime(2026, 1, 1, 12, 0, uid % 60, tzinfo=UTC),
            save_date=datetime(2026, 1, 1, 12, 0, uid % 60, tzinfo=UTC),
            bodystartoctet=400 + uid,
            fullcontentoctets=2000 + uid,
            headercontent=f"header-blob-{number}",
        )
    row.update(overrides)
    return row


def insert(cql, keyspace: str, table: str, row: dict) -> None:
    columns = list(row)
    cql.execute(
        f"INSERT INTO {keyspace}.{table} ({', '.join(columns)}) VALUES ({', '.join('%s' for _ in columns)})",
        [row[column] for column in columns],
    )


def platform(cql, keyspace: str, generation: str, mailboxes: int = 2, per_mailbox: int = 15) -> list[dict]:
    """A consistent platform: every truth row also in messageIdTable. Returns the truth rows."""
    rows = []
    for m in range(mailboxes):
        mailbox = timeuuid(m + 1)
        for uid in range(1, per_mailbox + 1):
            row = message(generation, mailbox, uid, m * 1000 + uid)
            insert(cql, keyspace, "imapuidtable", row)
            insert(cql, keyspace, "messageidtable", row)
            rows.append(row)
    return rows


def _plain(row) -> dict:
    values = row._asdict()
    return {k: (frozenset(v) if v is not None and k == "userflags" else v) for k, v in values.items()}


def projection(cql, keyspace: str) -> dict:
    """messageIdTable, keyed by (mailboxId, uid)."""
    return {(r["mailboxid"], r["uid"]): r for r in map(_plain, cql.execute(f"SELECT * FROM {keyspace}.messageidtable"))}


def truth(cql, keyspace: str) -> dict:
    """imapUidTable, keyed by (mailboxId, uid), as the projection should hold it."""
    return {(r["mailboxid"], r["uid"]): r for r in map(_plain, cql.execute(f"SELECT * FROM {keyspace}.imapuidtable"))}


def write_times(cql, keyspace: str) -> dict:
    return {
        (r.mailboxid, r.uid): r.written
        for r in cql.execute(f"SELECT mailboxid, uid, WRITETIME(modseq) AS written FROM {keyspace}.messageidtable")
    }


def break_every_kind(cql, keyspace, generation, rows):
    """One inconsistency of each kind James's partial writes leave behind; returns what the repair must find."""
    by_uid = {(row["mailboxid"], row["uid"]): row for row in rows}
    mailbox = rows[0]["mailboxid"]
    # missing: the messageIdTable write failed after the imapUidTable one.
    cql.execute(f"DELETE FROM {keyspace}.messageidtable WHERE mailboxid = %s AND uid = %s", (mailbox, 1))
    cql.execute(f"DELETE FROM {keyspace}.messageidtable WHERE mailboxid = %s AND uid = %s", (mailbox, 2))
    # outdated, flags: a flag and a keyword set only in the projection, a flag cleared only there.
    stale = dict(by_uid[(mailbox, 4)], flagflagged=True, flagseen=False, userflags={"$Forwarded", "stale-label"})
    insert(cql, keyspace, "messageidtable", stale)
    # outdated, other columns: modSeq (and in 3.9 the size and the header blob) differ.
    other = {"modseq": 7}
    if generation == "3.9":
        other.update(fullcontentoctets=1, headercontent="old-blob")
    insert(cql, keyspace, "messageidtable", dict(by_uid[(mailbox, 5)], **other))
    # orphan: the message was deleted from the truth, the projection delete failed.
    insert(cql, keyspace, "messageidtable", message(generation, mailbox, 500, 9_500))
    # orphan at a wrong uid: a real message of the truth, projected at a uid it does not have (James keeps it).
    insert(cql, keyspace, "messageidtable", dict(by_uid[(mailbox, 6)], uid=600))
    return {"missing": 2, "outdated": 2, "orphan": 2}


def corrupt_the_truth(cql, keyspace, rows):
    """A truth row James would never write (uid 0, no modSeq), beside a missing projection row that a repair would
    add: the truth-health gate must stop the run before that write."""
    mailbox = rows[0]["mailboxid"]
    cql.execute(f"DELETE FROM {keyspace}.messageidtable WHERE mailboxid = %s AND uid = 3", (mailbox,))
    insert(cql, keyspace, "imapuidtable", message("3.9", mailbox, 0, 8_000, modseq=None))
