"""The James Cassandra schema, both generations, as declared by James (unquoted names: Cassandra lower-cases them).

Generation "3.9" is the current release (ADR-0022 message tables with full rows, event-sourced ACLs, mailboxPathV3,
quotaCurrentValue); generation "3.5" is the seed documents' schema (short message rows, `acl` JSON, mailboxPathV2,
currentQuota). Both share the per-mailbox projections, counters and generators.
"""

from dataclasses import dataclass

from james_consistency.errors import OperatorError

GENERATIONS = ("3.9", "3.5")

FLAG_COLUMNS = (
    "flagAnswered",
    "flagDeleted",
    "flagDraft",
    "flagFlagged",
    "flagRecent",
    "flagSeen",
    "flagUser",
)


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[tuple[str, str], ...]
    partition_key: tuple[str, ...]
    clustering: tuple[tuple[str, str], ...] = ()
    static: tuple[str, ...] = ()

    def create_statement(self, keyspace: str) -> str:
        column_lines = [
            f"{name} {cql_type}{' static' if name in self.static else ''}" for name, cql_type in self.columns
        ]
        partition = ", ".join(self.partition_key)
        if len(self.partition_key) > 1:
            partition = f"({partition})"
        key = ", ".join([partition, *(name for name, _ in self.clustering)])
        statement = (
            f"CREATE TABLE IF NOT EXISTS {keyspace}.{self.name} (\n    "
            + ",\n    ".join([*column_lines, f"PRIMARY KEY ({key})"])
            + "\n)"
        )
        if self.clustering:
            order = ", ".join(f"{name} {direction}" for name, direction in self.clustering)
            statement += f" WITH CLUSTERING ORDER BY ({order})"
        return statement


_FLAGS = tuple((flag, "boolean") for flag in FLAG_COLUMNS)
_MESSAGE_METADATA_39 = (
    ("threadId", "timeuuid"),
    ("modSeq", "bigint"),
    *_FLAGS,
    ("userFlags", "set<text>"),
    ("internalDate", "timestamp"),
    ("save_date", "timestamp"),
    ("bodyStartOctet", "int"),
    ("fullContentOctets", "bigint"),
    ("headerContent", "text"),
)
_MESSAGE_METADATA_35 = (("modSeq", "bigint"), *_FLAGS, ("userFlags", "set<text>"))


def _message_tables(metadata: tuple[tuple[str, str], ...]) -> list[Table]:
    return [
        Table(
            "imapUidTable",
            (("messageId", "timeuuid"), ("mailboxId", "timeuuid"), ("uid", "bigint"), *metadata),
            ("messageId",),
            (("mailboxId", "ASC"), ("uid", "ASC")),
        ),
        Table(
            "messageIdTable",
            (("mailboxId", "timeuuid"), ("uid", "bigint"), ("messageId", "timeuuid"), *metadata),
            ("mailboxId",),
            (("uid", "ASC"),),
        ),
    ]


_SHARED_TABLES = [
    Table(
        "mailbox",
        (
            ("id", "timeuuid"),
            ("mailboxbase", "frozen<mailboxbase>"),
            ("name", "text"),
            ("uidvalidity", "bigint"),
        ),
        ("id",),
    ),
    Table(
        "UserMailboxACL",
        (("userName", "text"), ("mailboxid", "timeuuid"), ("rights", "text")),
        ("userName",),
        (("mailboxid", "ASC"),),
    ),
    Table("applicableFlag", (("mailboxId", "timeuuid"), ("userFlags", "set<text>")), ("mailboxId",)),
    Table(
        "messageDeleted",
        (("mailboxId", "timeuuid"), ("uid", "bigint")),
        ("mailboxId",),
        (("uid", "ASC"),),
    ),
    Table(
        "firstUnseen",
        (("mailboxId", "timeuuid"), ("uid", "bigint")),
        ("mailboxId",),
        (("uid", "ASC"),),
    ),
    Table(
        "mailboxRecents",
        (("mailboxId", "timeuuid"), ("recent_mesage_uid", "bigint")),
        ("mailboxId",),
        (("recent_mesage_uid", "ASC"),),
    ),
    Table(
        "mailboxCounters",
        (("mailboxId", "timeuuid"), ("count", "counter"), ("unseen", "counter")),
        ("mailboxId",),
    ),
    Table("messageCounter", (("mailboxId", "timeuuid"), ("nextUid", "bigint")), ("mailboxId",)),
    Table("modseq", (("mailboxId", "timeuuid"), ("nextModseq", "bigint")), ("mailboxId",)),
    Table(
        "attachmentV2",
        (
            ("idAsUUID", "uuid"),
            ("id", "text"),
            ("blobId", "text"),
            ("type", "text"),
            ("message_id", "timeuuid"),
            ("size", "bigint"),
        ),
        ("idAsUUID",),
    ),
]

_TABLES_39 = [
    *_message_tables(_MESSAGE_METADATA_39),
    *_SHARED_TABLES,
    Table(
        "mailboxPathV3",
        (
            ("namespace", "text"),
            ("user", "text"),
            ("mailboxName", "text"),
            ("mailboxId", "timeuuid"),
            ("uidvalidity", "bigint"),
        ),
        ("namespace", "user"),
        (("mailboxName", "ASC"),),
    ),
    Table(
        "eventStore",
        (("aggregateId", "text"), ("eventId", "int"), ("snapshot", "int"), ("event", "text")),
        ("aggregateId",),
        (("eventId", "ASC"),),
        static=("snapshot",),
    ),
    Table(
        "aclv2",
        (("id", "timeuuid"), ("key", "text"), ("rights", "set<text>")),
        ("id",),
        (("key", "ASC"),),
    ),
    Table(
        "quotaCurrentValue",
        (
            ("identifier", "text"),
            ("quotaComponent", "text"),
            ("quotaType", "text"),
            ("currentValue", "counter"),
        ),
        ("identifier",),
        (("quotaComponent", "ASC"), ("quotaType", "ASC")),
    ),
    Table(
        "quotaLimit",
        (
            ("quotaScope", "text"),
            ("identifier", "text"),
            ("quotaComponent", "text"),
            ("quotaType", "text"),
            ("quotaLimit", "bigint"),
        ),
        ("quotaScope", "identifier"),
        (("quotaComponent", "ASC"), ("quotaType", "ASC")),
    ),
    # James 3.9.0's messageV3 (it also has the attachments and MIME property columns, which the seeded schema
    # leaves out). James master (JAMES-4198) neither writes nor reads textualLineCount and the MIME property
    # columns, and creates messageV3 without them: no repair reads them (attachments reads messageId and attachments).
    Table(
        "messageV3",
        (
            ("messageId", "timeuuid"),
            ("internalDate", "timestamp"),
            ("bodyStartOctet", "int"),
            ("fullContentOctets", "bigint"),
            ("bodyOctets", "bigint"),
            ("textualLineCount", "bigint"),  # 3.9.0 only: dropped by James master (JAMES-4198)
            ("bodyContent", "text"),
            ("headerContent", "text"),
        ),
        ("messageId",),
    ),
]

_TABLES_35 = [
    *_message_tables(_MESSAGE_METADATA_35),
    *_SHARED_TABLES,
    Table(
        "mailboxPathV2",
        (("namespace", "text"), ("user", "text"), ("mailboxName", "text"), ("mailboxId", "timeuuid")),
        ("namespace", "user"),
        (("mailboxName", "ASC"),),
    ),
    Table("acl", (("id", "timeuuid"), ("acl", "text"), ("version", "bigint")), ("id",)),
    Table(
        "currentQuota",
        (("quotaRoot", "text"), ("messageCount", "counter"), ("storage", "counter")),
        ("quotaRoot",),
    ),
    Table(
        "messageV2",
        (
            ("messageId", "timeuuid"),
            ("internalDate", "timestamp"),
            ("bodyStartOctet", "int"),
            ("fullContentOctets", "bigint"),
            ("bodyOctets", "bigint"),
            ("textualLineCount", "bigint"),
            ("bodyContent", "text"),
            ("headerContent", "text"),
        ),
        ("messageId",),
    ),
]

TABLES = {"3.9": _TABLES_39, "3.5": _TABLES_35}

MAILBOXBASE_TYPE = "CREATE TYPE IF NOT EXISTS {keyspace}.mailboxbase (namespace text, user text)"


def tables(generation: str) -> list[Table]:
    if generation not in TABLES:
        raise OperatorError(f"unknown schema generation '{generation}': choose one of {', '.join(GENERATIONS)}")
    return TABLES[generation]


def table(generation: str, name: str) -> Table:
    for candidate in tables(generation):
        if candidate.name.lower() == name.lower():
            return candidate
    raise KeyError(name)


def validate_keyspace_name(keyspace: str) -> str:
    if not keyspace or not keyspace.replace("_", "").isalnum() or not keyspace[0].isalpha() or len(keyspace) > 48:
        raise OperatorError(
            f"invalid keyspace name '{keyspace}': use letters, digits and underscores, starting with a letter"
        )
    return keyspace.lower()


def replication_options(replication_factor: int = 1, datacenter: str | None = None) -> str:
    """The keyspace's replication map: SimpleStrategy, or NetworkTopologyStrategy in one data center (a ring)."""
    if replication_factor < 1:
        raise OperatorError(f"replication factor {replication_factor}: a keyspace needs at least 1 replica")
    if datacenter is None:
        return f"{{'class': 'SimpleStrategy', 'replication_factor': {replication_factor}}}"
    if not datacenter.replace("_", "").replace("-", "").isalnum():
        raise OperatorError(f"invalid data center name '{datacenter}'")
    return f"{{'class': 'NetworkTopologyStrategy', '{datacenter}': {replication_factor}}}"


def create_schema(
    session, keyspace: str, generation: str = "3.9", replication_factor: int = 1, datacenter: str | None = None
) -> list[str]:
    """Create the keyspace, the mailboxbase type and every table of the generation. Idempotent."""
    keyspace = validate_keyspace_name(keyspace)
    statements = [
        f"CREATE KEYSPACE IF NOT EXISTS {keyspace} WITH replication = "
        f"{replication_options(replication_factor, datacenter)}",
        MAILBOXBASE_TYPE.format(keyspace=keyspace),
        *(t.create_statement(keyspace) for t in tables(generation)),
    ]
    existing = detect_generation(session, keyspace)
    if existing is not None and existing != generation:
        raise OperatorError(
            f"keyspace '{keyspace}' already holds the James {existing} schema; "
            f"use another keyspace for generation {generation}"
        )
    for statement in statements:
        session.execute(statement, timeout=60)
    return [t.name for t in tables(generation)]


def detect_generation(session, keyspace: str) -> str | None:
    """'3.9' when imapUidTable has full rows (threadId), '3.5' for short rows, None without imapUidTable."""
    rows = session.execute(
        "SELECT column_name FROM system_schema.columns WHERE keyspace_name = %s AND table_name = 'imapuidtable'",
        (keyspace,),
    )
    columns = {row.column_name for row in rows}
    if not columns:
        return None
    return "3.9" if "threadid" in columns else "3.5"
