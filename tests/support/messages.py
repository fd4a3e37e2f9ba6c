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
