"""Hand-made James mailbox and path rows for tests, written and read back with plain CQL (no project code)."""

import json

from support.messages import insert, message, timeuuid

NAMESPACE = "#private"


def path_table(generation: str) -> str:
    return "mailboxpathv3" if generation == "3.9" else "mailboxpathv2"


def add_mailbox_row(cql, keyspace: str, mailbox_id, user: str, name: str, uidvalidity: int = 7) -> None:
    cql.execute(
        f"INSERT INTO {keyspace}.mailbox (id, mailboxbase, name, uidvalidity) VALUES (%s, {{namespace: %s, user: %s}}, "
        "%s, %s)",
        (mailbox_id, NAMESPACE, user, name, uidvalidity),
    )


def add_path(cql, keyspace: str, generation: str, user: str, name: str, mailbox_id, written: int | None = None):
    """A path registration; `written` (microseconds) sets its WRITETIME."""
    using = f" USING TIMESTAMP {written}" if written else ""
    if generation == "3.9":
        cql.execute(
            f"INSERT INTO {keyspace}.mailboxpathv3 (namespace, user, mailboxname, mailboxid, uidvalidity) "
            f"VALUES (%s, %s, %s, %s, 7){using}",
            (NAMESPACE, user, name, mailbox_id),
        )
    else:
        cql.execute(
            f"INSERT INTO {keyspace}.mailboxpathv2 (namespace, user, mailboxname, mailboxid) VALUES (%s, %s, %s, %s)"
            + using,
            (NAMESPACE, user, name, mailbox_id),
        )


def add_mailbox(cql, keyspace: str, generation: str, mailbox_id, user: str, name: str) -> None:
    """A consistent mailbox, as James creates it: the path first, then the mailbox row."""
    add_path(cql, keyspace, generation, user, name, mailbox_id)
    add_mailbox_row(cql, keyspace, mailbox_id, user, name)


def add_messages(cql, keyspace: str, generation: str, mailbox_id, count: int, first_number: int) -> list[dict]:
    """`count` messages at uids 1..count in both message tables, and the mailbox's uid and modseq generators."""
    rows = []
    for uid in range(1, count + 1):
        row = message(generation, mailbox_id, uid, first_number + uid)
        insert(cql, keyspace, "imapuidtable", row)
        insert(cql, keyspace, "messageidtable", row)
        rows.append(row)
    cql.execute(f"INSERT INTO {keyspace}.messagecounter (mailboxid, nextuid) VALUES (%s, %s)", (mailbox_id, count))
    cql.execute(f"INSERT INTO {keyspace}.modseq (mailboxid, nextmodseq) VALUES (%s, %s)", (mailbox_id, 100 + count))
    return rows


def set_acl(cql, keyspace: str, generation: str, mailbox_id, entries: dict[str, str]) -> None:
    if generation == "3.9":
        event = {
            "eventId": 0,
            "aggregateKey": str(mailbox_id),
            "type": "acl-updated",
            "aclDiff": {"oldAcl": {"entries": {}}, "newAcl": {"entries": entries}},
        }
        cql.execute(
            f"INSERT INTO {keyspace}.eventstore (aggregateid, eventid, event) VALUES (%s, 0, %s)",
            (str(mailbox_id), json.dumps(event)),
        )
    else:
        cql.execute(
            f"INSERT INTO {keyspace}.acl (id, acl, version) VALUES (%s, %s, 0)",
            (mailbox_id, json.dumps({"entries": entries})),
        )


def acl(cql, keyspace: str, generation: str, mailbox_id) -> dict[str, str]:
    if generation == "3.9":
        row = cql.execute(
            f"SELECT event FROM {keyspace}.eventstore WHERE aggregateid = %s ORDER BY eventid DESC LIMIT 1",
            (str(mailbox_id),),
        ).one()
        return json.loads(row.event)["aclDiff"]["newAcl"]["entries"] if row else {}
    row = cql.execute(f"SELECT acl FROM {keyspace}.acl WHERE id = %s", (mailbox_id,)).one()
    return json.loads(row.acl)["entries"] if row else {}


def mailbox_rows(cql, keyspace: str) -> dict:
    """mailbox table: id -> 'user:name'."""
    return {
        row.id: f"{row.mailboxbase.user}:{row.name}"
        for row in cql.execute(f"SELECT id, mailboxbase, name FROM {keyspace}.mailbox")
    }


def paths(cql, keyspace: str, generation: str) -> dict:
    """path table: 'user:name' -> mailbox id."""
    return {
        f"{row.user}:{row.mailboxname}": row.mailboxid
        for row in cql.execute(f"SELECT user, mailboxname, mailboxid FROM {keyspace}.{path_table(generation)}")
    }


def write_times(cql, keyspace: str, generation: str) -> dict:
    """Every row of both tables with its write time: equal before and after means nothing was written."""
    table = path_table(generation)
    mailbox = {
        ("mailbox", row.id): row.written
        for row in cql.execute(f"SELECT id, WRITETIME(name) AS written FROM {keyspace}.mailbox")
    }
    registered = {
        (table, row.user, row.mailboxname): row.written
        for row in cql.execute(f"SELECT user, mailboxname, WRITETIME(mailboxid) AS written FROM {keyspace}.{table}")
    }
    return {**mailbox, **registered}


# One platform with every kind of inconsistency, and what the repair must leave.
IDS = {
    name: timeuuid(500 + number)
    for number, name in enumerate("consistent sent orphan archive old work dave dave2 loopa loopb frank".split())
}


def break_every_mailbox_kind(cql, keyspace: str, generation: str) -> dict:
    """Every inconsistency between mailbox and path, each on its own user; returns the ids by role."""
    ids = IDS
    add_mailbox(cql, keyspace, generation, ids["consistent"], "bob", "INBOX")
    add_mailbox(cql, keyspace, generation, ids["sent"], "bob", "Sent")
    add_messages(cql, keyspace, generation, ids["consistent"], 2, 100)
    # orphan mailbox: the row stays, its path registration is gone.
    add_mailbox_row(cql, keyspace, ids["orphan"], "alice", "Drafts")
    # orphan path, still referenced by messages (James master re-creates the mailbox row).
    add_path(cql, keyspace, generation, "alice", "Archive", ids["archive"])
    add_messages(cql, keyspace, generation, ids["archive"], 3, 200)
    # orphan path, no message (ADR-0020: deleted, so the user can create it again).
    add_path(cql, keyspace, generation, "alice", "Old", ids["old"])
    # one id under two paths: a rename that stopped after registering the new path (written later).
    add_path(cql, keyspace, generation, "carol", "Work", ids["work"], written=1_700_000_000_000_000)
    add_path(cql, keyspace, generation, "carol", "Work-renamed", ids["work"], written=1_700_000_100_000_000)
    add_mailbox_row(cql, keyspace, ids["work"], "carol", "Work")
    # two ids claiming one path: dave's INBOX registered to one, a second row claims it too.
    add_mailbox(cql, keyspace, generation, ids["dave"], "dave", "INBOX")
    add_mailbox_row(cql, keyspace, ids["dave2"], "dave", "INBOX")
    add_messages(cql, keyspace, generation, ids["dave"], 3, 300)
    add_messages(cql, keyspace, generation, ids["dave2"], 2, 400)
    # a loop: two ids swapped between two paths.
    add_mailbox_row(cql, keyspace, ids["loopa"], "erin", "A")
    add_mailbox_row(cql, keyspace, ids["loopb"], "erin", "B")
    add_path(cql, keyspace, generation, "erin", "A", ids["loopb"])
    add_path(cql, keyspace, generation, "erin", "B", ids["loopa"])
    # a mailbox row whose id is registered under one other path, its own path free.
    add_mailbox_row(cql, keyspace, ids["frank"], "frank", "Old")
    add_path(cql, keyspace, generation, "frank", "New", ids["frank"])
    return ids


# ---- rows written with James's own statements (copied from its DAOs; `?` markers, prepared as James does) ----------


def _execute(cql, statement: str, values: list):
    return cql.execute(cql.prepare(statement), values)


def james_save_mailbox(cql, keyspace: str, mailbox_id, user: str, name: str, uidvalidity: int = 7) -> None:
    """CassandraMailboxDAO.save (3.5.0, 3.8.1 and master alike): a plain INSERT of the mailbox row."""
    _execute(
        cql,
        f"INSERT INTO {keyspace}.mailbox (id, name, uidValidity, mailboxBase) "
        "VALUES (?, ?, ?, {namespace: ?, user: ?})",
        [mailbox_id, name, uidvalidity, NAMESPACE, user],
    )


def james_save_path(cql, keyspace: str, generation: str, user: str, name: str, mailbox_id, uidvalidity: int = 7):
    """CassandraMailboxPathV3DAO.save (3.8.1, master) / CassandraMailboxPathV2DAO.save (3.5.0): INSERT IF NOT EXISTS."""
    if generation == "3.9":
        return _execute(
            cql,
            f"INSERT INTO {keyspace}.mailboxPathV3 (namespace, user, mailboxName, mailboxId, uidValidity) "
            "VALUES (?, ?, ?, ?, ?) IF NOT EXISTS",
            [NAMESPACE, user, name, mailbox_id, uidvalidity],
        ).one()[0]
    return _execute(
        cql,
        f"INSERT INTO {keyspace}.mailboxPathV2 (namespace, user, mailboxName, mailboxId) VALUES (?, ?, ?, ?) "
        "IF NOT EXISTS",
        [NAMESPACE, user, name, mailbox_id],
    ).one()[0]


def _james_next(cql, keyspace: str, table: str, column: str, mailbox_id, first: int) -> int:
    """CassandraUidProvider.nextUid / CassandraModSeqProvider.nextModSeq: read the last value given (LWT profile:
    SERIAL), `UPDATE ... IF <column> = <read>`, or `INSERT ... IF NOT EXISTS` when the mailbox has no row yet."""
    from cassandra import ConsistencyLevel

    select = cql.prepare(f"SELECT {column} FROM {keyspace}.{table} WHERE mailboxId = ?")
    select.consistency_level = ConsistencyLevel.SERIAL
    for _ in range(10):
        row = cql.execute(select, [mailbox_id]).one()
        if row is None:
            statement = f"INSERT INTO {keyspace}.{table} ({column}, mailboxId) VALUES (?, ?) IF NOT EXISTS"
            if _execute(cql, statement, [first, mailbox_id]).one()[0]:
                return first
            continue
        last = getattr(row, column.lower())
        statement = f"UPDATE {keyspace}.{table} SET {column} = ? WHERE mailboxId = ? IF {column} = ?"
        if _execute(cql, statement, [last + 1, mailbox_id, last]).one()[0]:
            return last + 1
    raise AssertionError(f"{table}: no compare-and-set succeeded")


def james_set_counter(cql, keyspace: str, table: str, column: str, mailbox_id, value: int) -> None:
    """Move a generator with James's own compare-and-set (CassandraUidProvider/CassandraModSeqProvider update), e.g.
    back below the mailbox's highest uid, as a restore of an older backup or a broken LWT consensus leaves it."""
    from cassandra import ConsistencyLevel

    select = cql.prepare(f"SELECT {column} FROM {keyspace}.{table} WHERE mailboxId = ?")
    select.consistency_level = ConsistencyLevel.SERIAL
    last = getattr(cql.execute(select, [mailbox_id]).one(), column.lower())
    statement = f"UPDATE {keyspace}.{table} SET {column} = ? WHERE mailboxId = ? IF {column} = ?"
    assert _execute(cql, statement, [value, mailbox_id, last]).one()[0]


def james_add_message(cql, keyspace: str, generation: str, mailbox_id, number: int) -> dict:
    """A message appended as StoreMessageIdManager.save -> CassandraMessageIdMapper.insertMetadata writes it: a modseq
    and a uid from the generators, then imapUidTable (CassandraMessageIdToImapUidDAO.insert: INSERT IF NOT EXISTS in
    3.8.1/master, whose default message.write.strong.consistency.unsafe is true; a plain INSERT in 3.5.0), then
    messageIdTable (CassandraMessageIdDAO.insert: an UPDATE keyed by mailboxId and uid in 3.8.1/master, a plain INSERT
    in 3.5.0). Returns the row as written."""
    from cassandra.query import UNSET_VALUE

    modseq = _james_next(cql, keyspace, "modseq", "nextModseq", mailbox_id, 1)
    uid = _james_next(cql, keyspace, "messageCounter", "nextUid", mailbox_id, 1)
    row = message(generation, mailbox_id, uid, number, modseq=modseq)
    flags = [row[flag] for flag in ("flaganswered", "flagdeleted", "flagdraft", "flagflagged", "flagrecent")]
    flags += [row["flagseen"], row["flaguser"]]
    user_flags = row["userflags"] or UNSET_VALUE
    flag_columns = "flagAnswered, flagDeleted, flagDraft, flagFlagged, flagRecent, flagSeen, flagUser"
    if generation == "3.9":
        details = [
            row[column]
            for column in ("internaldate", "save_date", "bodystartoctet", "fullcontentoctets", "headercontent")
        ]
        _execute(
            cql,
            f"INSERT INTO {keyspace}.imapUidTable (messageId, mailboxId, uid, threadId, modSeq, {flag_columns}, "
            "userFlags, internalDate, save_date, bodyStartOctet, fullContentOctets, headerContent) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS",
            [row["messageid"], mailbox_id, uid, row["threadid"], modseq, *flags, user_flags, *details],
        )
        _execute(
            cql,
            f"UPDATE {keyspace}.messageIdTable SET threadId = ?, messageId = ?, modSeq = ?, flagAnswered = ?, "
            "flagDeleted = ?, flagDraft = ?, flagFlagged = ?, flagRecent = ?, flagSeen = ?, flagUser = ?, "
            "internalDate = ?, save_date = ?, bodyStartOctet = ?, fullContentOctets = ?, headerContent = ?, "
            "userFlags = userFlags + ? WHERE mailboxId = ? AND uid = ?",
            [row["threadid"], row["messageid"], modseq, *flags, *details, user_flags, mailbox_id, uid],
        )
        return row
    _execute(
        cql,
        f"INSERT INTO {keyspace}.imapUidTable (messageId, mailboxId, uid, modSeq, {flag_columns}, userFlags) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [row["messageid"], mailbox_id, uid, modseq, *flags, user_flags],
    )
    _execute(
        cql,
        f"INSERT INTO {keyspace}.messageIdTable (mailboxId, uid, modSeq, messageId, {flag_columns}, userFlags) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [mailbox_id, uid, modseq, row["messageid"], *flags, user_flags],
    )
    return row


def messages_of(cql, keyspace: str, table: str, mailbox_id) -> dict:
    """uid -> (messageId, modSeq) of one mailbox in imapUidTable or messageIdTable."""
    where = " ALLOW FILTERING" if table == "imapuidtable" else ""
    return {
        row.uid: (row.messageid, row.modseq)
        for row in cql.execute(
            f"SELECT uid, messageid, modseq FROM {keyspace}.{table} WHERE mailboxid = %s{where}", (mailbox_id,)
        )
    }


def counter(cql, keyspace: str, table: str, column: str, mailbox_id) -> int | None:
    row = cql.execute(f"SELECT {column} FROM {keyspace}.{table} WHERE mailboxid = %s", (mailbox_id,)).one()
    return None if row is None else getattr(row, column)
