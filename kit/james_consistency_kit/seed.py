"""`james-consistency seed`: a consistent James platform, written the way James writes it.

Messages (the bulk) are generated as a Spark DataFrame and written through the connector to both message tables,
the message metadata table and the per-mailbox projections; counters go through the connector as increments.
Mailboxes, paths and ACLs (a few rows per mailbox) are written with the Python driver. Everything is derived from
the random seed with hash functions, so two runs with the same seed write the same platform.
"""

import json
import time
import uuid
from dataclasses import dataclass

from cassandra.concurrent import execute_concurrent_with_args
from james_consistency.cassandra.acl_rights import RIGHTS_ORDER
from james_consistency.cassandra.cql import CassandraSettings, close, connect
from james_consistency.cassandra.schema import create_schema, detect_generation, validate_keyspace_name
from james_consistency.errors import OperatorError
from james_consistency.runtime.spark_env import local_session, refresh_connector_schema
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

DOMAIN = "domain.tld"
NAMESPACE = "#private"
STANDARD_MAILBOXES = ("INBOX", "Sent", "Drafts", "Trash", "Archive", "Spam")
# 100-ns ticks since 1582-10-15 of 2026-01-01T00:00:00Z: the clock of every generated timeuuid.
BASE_TICKS = (1_767_225_600 * 10_000_000) + 0x01B21DD213814000
EPOCH_2026_MS = 1_767_225_600_000

# Which node field a generated timeuuid carries: keeps mailbox, message and thread ids apart.
MAILBOX_NODE, MESSAGE_NODE = 0x01, 0x02


def drop_keyspace(settings: CassandraSettings, keyspace: str) -> None:
    """The keyspace dropped, so that it is seeded afresh (the demo's, a shrunk bench keyspace)."""
    session = connect(settings)
    try:
        session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)
    finally:
        close(session)


def user_name(index: int) -> str:
    return f"user{index:05d}@{DOMAIN}"


def mailbox_name(index: int) -> str:
    return STANDARD_MAILBOXES[index] if index < len(STANDARD_MAILBOXES) else f"INBOX.folder{index:03d}"


def timeuuid(ticks: int, node: int, seed: int) -> uuid.UUID:
    """A version-1 UUID for a 60-bit timestamp: what the Spark expression `timeuuid_column` computes."""
    time_low = ticks & 0xFFFFFFFF
    time_mid = (ticks >> 32) & 0xFFFF
    time_hi = ((ticks >> 48) & 0x0FFF) | 0x1000
    clock_seq = 0x8000 | (seed & 0x3FFF)
    return uuid.UUID(f"{time_low:08x}-{time_mid:04x}-{time_hi:04x}-{clock_seq:04x}-{(node << 40) | seed:012x}")


def _hex(value: Column, width: int) -> Column:
    return F.lpad(F.lower(F.hex(value)), width, "0")


def timeuuid_column(ticks: Column, node: int, seed: int) -> Column:
    """Spark expression of `timeuuid()`, as a canonical string the connector writes to a timeuuid column."""
    clock_seq = 0x8000 | (seed & 0x3FFF)
    return F.concat_ws(
        "-",
        _hex(ticks.bitwiseAND(F.lit(0xFFFFFFFF)), 8),
        _hex(F.shiftright(ticks, 32).bitwiseAND(F.lit(0xFFFF)), 4),
        _hex(F.shiftright(ticks, 48).bitwiseAND(F.lit(0x0FFF)).bitwiseOR(F.lit(0x1000)), 4),
        F.lit(f"{clock_seq:04x}"),
        F.lit(f"{(node << 40) | seed:012x}"),
    )


def _chance(column: Column, salt: int, seed: int, percent: float) -> Column:
    """True for about `percent` % of rows, decided by a hash of the row (stable across runs and partitionings)."""
    return (F.pmod(F.xxhash64(column, F.lit(seed), F.lit(salt)), F.lit(10_000)) < int(percent * 100)).alias(
        f"chance{salt}"
    )


def _pick(column: Column, salt: int, seed: int, modulo: int) -> Column:
    return F.pmod(F.xxhash64(column, F.lit(seed), F.lit(salt)), F.lit(modulo))


@dataclass(frozen=True)
class Plan:
    keyspace: str
    generation: str
    users: int
    mailboxes_per_user: int
    messages_per_mailbox: int
    seed: int

    @property
    def mailboxes(self) -> int:
        return self.users * self.mailboxes_per_user

    @property
    def messages(self) -> int:
        return self.mailboxes * self.messages_per_mailbox

    def mailbox_id(self, index: int) -> uuid.UUID:
        return timeuuid(BASE_TICKS + index, MAILBOX_NODE, self.seed)


def messages_frame(spark: SparkSession, plan: Plan) -> DataFrame:
    """Every message of the platform with all the columns of the 3.9 message tables plus its owner's index."""
    per_mailbox = plan.messages_per_mailbox
    seed = plan.seed
    rows = spark.range(0, plan.messages, numPartitions=max(2, plan.messages // 200_000))
    index = F.col("id")
    mailbox_index = F.floor(index / per_mailbox).cast("long")
    uid = (index % per_mailbox + 1).cast("long")
    # Threads of one to three consecutive messages: the thread id is the first message's id.
    thread_start = index - F.pmod(uid - 1, F.lit(3))
    keywords = F.array_compact(
        F.array(
            F.when(_chance(index, 11, seed, 15), F.lit("$Forwarded")),
            F.when(_chance(index, 12, seed, 4), F.lit("$Junk")),
            F.when(
                _chance(index, 13, seed, 8),
                F.element_at(F.array(F.lit("work"), F.lit("family")), 1 + _pick(index, 14, seed, 2).cast("int")),
            ),
            F.when(_chance(index, 15, seed, 2), F.lit("$MDNSent")),
        )
    )
    internal_date_ms = F.lit(EPOCH_2026_MS) + index * 37_000
    return rows.select(
        timeuuid_column(F.lit(BASE_TICKS) + index * 16, MESSAGE_NODE, seed).alias("messageid"),
        timeuuid_column(F.lit(BASE_TICKS) + mailbox_index, MAILBOX_NODE, seed).alias("mailboxid"),
        uid.alias("uid"),
        timeuuid_column(F.lit(BASE_TICKS) + thread_start * 16, MESSAGE_NODE, seed).alias("threadid"),
        # Increasing with gaps, as flag changes of earlier messages consumed modSeqs.
        (uid * 2 + _pick(index, 23, seed, 2)).alias("modseq"),
        _chance(index, 1, seed, 10).alias("flaganswered"),
        _chance(index, 2, seed, 2).alias("flagdeleted"),
        _chance(index, 3, seed, 1).alias("flagdraft"),
        _chance(index, 4, seed, 5).alias("flagflagged"),
        _chance(index, 5, seed, 3).alias("flagrecent"),
        (~_chance(index, 6, seed, 20)).alias("flagseen"),
        F.lit(False).alias("flaguser"),
        F.when(F.size(keywords) > 0, keywords).alias("userflags"),
        F.timestamp_millis(internal_date_ms).alias("internaldate"),
        F.timestamp_millis(internal_date_ms + 1_500).alias("save_date"),
        (300 + _pick(index, 21, seed, 1_500)).cast("int").alias("bodystartoctet"),
        (2_000 + _pick(index, 22, seed, 120_000)).alias("fullcontentoctets"),
        F.concat(F.lit("header-blob-"), index.cast("string")).alias("headercontent"),
        F.floor(mailbox_index / plan.mailboxes_per_user).cast("long").alias("owner_index"),
    )


MESSAGE_COLUMNS_35 = (
    "messageid",
    "mailboxid",
    "uid",
    "modseq",
    "flaganswered",
    "flagdeleted",
    "flagdraft",
    "flagflagged",
    "flagrecent",
    "flagseen",
    "flaguser",
    "userflags",
)
MESSAGE_COLUMNS_39 = (
    *MESSAGE_COLUMNS_35,
    "threadid",
    "internaldate",
    "save_date",
    "bodystartoctet",
    "fullcontentoctets",
    "headercontent",
)


def _write(frame: DataFrame, keyspace: str, table: str) -> None:
    (
        frame.write.format("org.apache.spark.sql.cassandra")
        .options(keyspace=keyspace, table=table)
        # James leaves absent values unset: no tombstones for null columns.
        .option("spark.cassandra.output.ignoreNulls", "true")
        # Bulk load: unlogged batches of consecutive rows whatever their partition (imapUidTable has one row per
        # partition: grouping by partition would send them one by one; on a single replica set this is 3x faster).
        .option("spark.cassandra.output.batch.grouping.key", "none")
        .option("spark.cassandra.output.batch.size.bytes", "32768")
        .option("spark.cassandra.output.concurrent.writes", "16")
        .mode("append")
        .save()
    )


def write_messages(spark: SparkSession, plan: Plan) -> dict[str, int]:
    """Both message tables, message metadata, per-mailbox projections, counters and quotas, through Spark."""
    keyspace = plan.keyspace
    messages = messages_frame(spark, plan).cache()
    columns = MESSAGE_COLUMNS_39 if plan.generation == "3.9" else MESSAGE_COLUMNS_35
    written = {}
    for table in ("imapuidtable", "messageidtable"):
        _write(messages.select(*columns), keyspace, table)
        written[table] = plan.messages
    metadata_table = "messagev3" if plan.generation == "3.9" else "messagev2"
    _write(
        messages.select(
            "messageid",
            "internaldate",
            "bodystartoctet",
            "fullcontentoctets",
            (F.col("fullcontentoctets") - F.col("bodystartoctet")).alias("bodyoctets"),
            # 3.9.0 only: James master (JAMES-4198) writes no textualLineCount and has no such column.
            (F.col("fullcontentoctets") / 60).cast("long").alias("textuallinecount"),
            "headercontent",
            F.concat(F.lit("body-blob-"), F.col("messageid")).alias("bodycontent"),
        ),
        keyspace,
        metadata_table,
    )
    written[metadata_table] = plan.messages

    indexes = {
        "messagedeleted": messages.where("flagdeleted").select("mailboxid", "uid"),
        "firstunseen": messages.where("not flagseen").select("mailboxid", "uid"),
        "mailboxrecents": messages.where("flagrecent").select("mailboxid", F.col("uid").alias("recent_mesage_uid")),
    }
    for table, frame in indexes.items():
        _write(frame, keyspace, table)

    # One row per mailbox (small): counters, generators, keywords used, and the figures of the summary.
    per_mailbox = (
        messages.groupBy("mailboxid", "owner_index")
        .agg(
            F.count(F.lit(1)).alias("count"),
            F.sum(F.when(~F.col("flagseen"), 1).otherwise(0)).cast("long").alias("unseen"),
            F.sum(F.when(F.col("flagdeleted"), 1).otherwise(0)).cast("long").alias("deleted"),
            F.sum(F.when(F.col("flagrecent"), 1).otherwise(0)).cast("long").alias("recent"),
            F.sum("fullcontentoctets").alias("octets"),
            F.max("uid").alias("nextuid"),
            F.max("modseq").alias("nextmodseq"),
            F.array_sort(F.array_distinct(F.flatten(F.collect_list("userflags")))).alias("userflags"),
        )
        .cache()
    )
    _write(per_mailbox.where(F.size("userflags") > 0).select("mailboxid", "userflags"), keyspace, "applicableflag")
    _write(per_mailbox.select("mailboxid", "count", "unseen"), keyspace, "mailboxcounters")
    _write(per_mailbox.select("mailboxid", "nextuid"), keyspace, "messagecounter")
    _write(per_mailbox.select("mailboxid", "nextmodseq"), keyspace, "modseq")

    quota_roots = per_mailbox.groupBy("owner_index").agg(
        F.sum("count").alias("messages"), F.sum("octets").alias("octets")
    )
    # The owner's quota root, `#private&<user>` with the user named as `user_name` names it.
    quota_root = F.format_string(f"{NAMESPACE}&user%05d@{DOMAIN}", F.col("owner_index"))
    if plan.generation == "3.9":
        usage = quota_roots.select(
            quota_root.alias("identifier"),
            F.lit("MAILBOX").alias("quotacomponent"),
            F.explode(
                F.array(
                    F.struct(F.lit("count").alias("quotatype"), F.col("messages").alias("currentvalue")),
                    F.struct(F.lit("size").alias("quotatype"), F.col("octets").alias("currentvalue")),
                )
            ).alias("usage"),
        ).select("identifier", "quotacomponent", "usage.quotatype", "usage.currentvalue")
        _write(usage, keyspace, "quotacurrentvalue")
        written["quotacurrentvalue"] = plan.users * 2
    else:
        _write(
            quota_roots.select(
                quota_root.alias("quotaroot"), F.col("messages").alias("messagecount"), F.col("octets").alias("storage")
            ),
            keyspace,
            "currentquota",
        )
        written["currentquota"] = plan.users

    totals = per_mailbox.agg(
        F.sum("deleted").alias("messagedeleted"),
        F.sum("unseen").alias("firstunseen"),
        F.sum("recent").alias("mailboxrecents"),
        F.sum(F.when(F.size("userflags") > 0, 1).otherwise(0)).alias("applicableflag"),
    ).first()
    written.update({table: int(totals[table] or 0) for table in (*indexes, "applicableflag")})
    for table in ("mailboxcounters", "messagecounter", "modseq"):
        written[table] = plan.mailboxes
    per_mailbox.unpersist()
    messages.unpersist()
    return written


def _draw(plan: Plan, mailbox_index: int) -> int:
    return (mailbox_index * 2_654_435_761 + plan.seed * 97) % 100


def acl_entries(plan: Plan, mailbox_index: int) -> dict[str, str]:
    """The ACL of one mailbox beyond its owner (implicit): shares with users, a group, a negative right, `anyone`."""
    owner = mailbox_index // plan.mailboxes_per_user
    draw = _draw(plan, mailbox_index)
    entries: dict[str, str] = {}
    if plan.users > 1 and draw < 30:
        entries[user_name((owner + 1 + draw) % plan.users)] = "lr" if draw % 2 else "lrs"
    if plan.users > 2 and draw < 10:
        entries[user_name((owner + 2 + draw) % plan.users)] = "eilrstw"
    if draw % 10 == 3:
        entries["$team"] = "lr"
    if draw % 20 == 7 and plan.users > 1:
        entries[f"-{user_name((owner + 1 + draw) % plan.users)}"] = "w"
    if draw % 25 == 11:
        entries["anyone"] = "p"
    # Never an entry for the owner itself (a user sharing with him or herself).
    return {key: rights for key, rights in entries.items() if key.lstrip("-") != user_name(owner)}


def acl_history(plan: Plan, mailbox_index: int) -> list[dict[str, str]]:
    """The successive ACLs of a mailbox, one per `acl-updated` event; the last one is the current ACL.

    Some mailboxes had a share that was revoked later (two events), some an ACL emptied since (the last event's
    newAcl is empty): the projections must follow the last event, not the union of all of them."""
    entries = acl_entries(plan, mailbox_index)
    draw = _draw(plan, mailbox_index)
    owner = mailbox_index // plan.mailboxes_per_user
    former = user_name((owner + 3 + draw) % plan.users) if plan.users > 3 else None
    if entries and draw % 3 == 0 and former and former not in entries:
        return [{**entries, former: "lrstw"}, entries]
    if not entries and draw % 7 == 1 and former:
        return [{former: "lr"}, {}]
    return [entries] if entries else []


def is_user_entry(key: str) -> bool:
    """A positive entry of an individual user: what UserMailboxACL keeps."""
    return not key.startswith(("-", "$")) and key not in ("owner", "anyone", "authenticated")


def canonical_rights(rights: str) -> str:
    return "".join(right for right in RIGHTS_ORDER if right in rights)


def write_mailboxes(settings: CassandraSettings, plan: Plan) -> dict[str, int]:
    """mailbox, its path registration and its ACL (event + aclv2 + UserMailboxACL, or the 3.5 `acl` JSON)."""
    session = connect(settings, plan.keyspace)
    ks = plan.keyspace
    try:
        insert_mailbox = session.prepare(
            f"INSERT INTO {ks}.mailbox (id, mailboxbase, name, uidvalidity) VALUES (?, {{namespace: ?, user: ?}}, ?, ?)"
        )
        if plan.generation == "3.9":
            insert_path = session.prepare(
                f"INSERT INTO {ks}.mailboxpathv3 (namespace, user, mailboxname, mailboxid, uidvalidity) "
                "VALUES (?, ?, ?, ?, ?)"
            )
        else:
            insert_path = session.prepare(
                f"INSERT INTO {ks}.mailboxpathv2 (namespace, user, mailboxname, mailboxid) VALUES (?, ?, ?, ?)"
            )
        mailboxes, paths, events, aclv2, user_acl, legacy_acl = [], [], [], [], [], []
        for index in range(plan.mailboxes):
            mailbox_id = plan.mailbox_id(index)
            owner = user_name(index // plan.mailboxes_per_user)
            name = mailbox_name(index % plan.mailboxes_per_user)
            uidvalidity = 1 + (index * 7_919 + plan.seed) % (2**31 - 2)
            mailboxes.append((mailbox_id, NAMESPACE, owner, name, uidvalidity))
            if plan.generation == "3.9":
                paths.append((NAMESPACE, owner, name, mailbox_id, uidvalidity))
            else:
                paths.append((NAMESPACE, owner, name, mailbox_id))
            history = acl_history(plan, index)
            if not history:
                continue
            entries = history[-1]
            if plan.generation == "3.9":
                previous: dict[str, str] = {}
                for event_id, state in enumerate(history):
                    event = {
                        "eventId": event_id,
                        "aggregateKey": str(mailbox_id),
                        "type": "acl-updated",
                        "aclDiff": {"oldAcl": {"entries": previous}, "newAcl": {"entries": state}},
                    }
                    events.append((str(mailbox_id), event_id, json.dumps(event, separators=(",", ":"))))
                    previous = state
                aclv2 += [(mailbox_id, key, set(rights)) for key, rights in entries.items()]
            else:
                acl_json = json.dumps({"entries": entries}, separators=(",", ":"))
                legacy_acl.append((mailbox_id, acl_json, len(history)))
            user_acl += [
                (key, mailbox_id, canonical_rights(rights)) for key, rights in entries.items() if is_user_entry(key)
            ]
        statements = [(insert_mailbox, mailboxes), (insert_path, paths)]
        if plan.generation == "3.9":
            statements += [
                (
                    session.prepare(f"INSERT INTO {ks}.eventstore (aggregateid, eventid, event) VALUES (?, ?, ?)"),
                    events,
                ),
                (session.prepare(f"INSERT INTO {ks}.aclv2 (id, key, rights) VALUES (?, ?, ?)"), aclv2),
            ]
        else:
            statements.append(
                (session.prepare(f"INSERT INTO {ks}.acl (id, acl, version) VALUES (?, ?, ?)"), legacy_acl)
            )
        statements.append(
            (
                session.prepare(f"INSERT INTO {ks}.usermailboxacl (username, mailboxid, rights) VALUES (?, ?, ?)"),
                user_acl,
            )
        )
        for statement, rows in statements:
            for success, result in execute_concurrent_with_args(session, statement, rows, concurrency=64):
                if not success:
                    raise OperatorError(f"seeding failed writing {statement.query_string[:40]}...: {result}")
    finally:
        close(session)
    path_table = "mailboxpathv3" if plan.generation == "3.9" else "mailboxpathv2"
    written = {"mailbox": len(mailboxes), path_table: len(paths), "usermailboxacl": len(user_acl)}
    if plan.generation == "3.9":
        written.update(eventstore=len(events), aclv2=len(aclv2))
    else:
        written["acl"] = len(legacy_acl)
    return written


def seed_platform(
    settings: CassandraSettings,
    *,
    keyspace: str,
    users: int,
    mailboxes_per_user: int,
    messages_per_mailbox: int,
    random_seed: int = 42,
    generation: str | None = None,
    spark: SparkSession | None = None,
    replication_factor: int = 1,
    datacenter: str | None = None,
) -> dict:
    """Create the schema if needed and write a consistent platform. Refuses a keyspace that already holds messages
    (counters cannot be written twice)."""
    for name, value in (
        ("users", users),
        ("mailboxes per user", mailboxes_per_user),
        ("messages per mailbox", messages_per_mailbox),
    ):
        if value < 0:
            raise OperatorError(f"{name} is {value}: sizes must be 0 or more")
    if mailboxes_per_user > 999:
        raise OperatorError("at most 999 mailboxes per user")
    keyspace = validate_keyspace_name(keyspace)
    session = connect(settings)
    try:
        existing = detect_generation(session, keyspace)
        generation = generation or existing or "3.9"
        create_schema(session, keyspace, generation, replication_factor, datacenter=datacenter)
        if session.execute(f"SELECT uid FROM {keyspace}.imapuidtable LIMIT 1").one() is not None:
            raise OperatorError(
                f"keyspace '{keyspace}' already holds messages: seed a new keyspace (counters cannot be seeded twice)"
            )
    finally:
        close(session)

    plan = Plan(keyspace, generation, users, mailboxes_per_user, messages_per_mailbox, random_seed & 0xFFFFFF)
    started = time.perf_counter()
    # A caller's Spark session (in-process, e.g. a test's) is used and left running: `local_session` would hand back
    # that same session, and stopping it would stop the caller's.
    spark = spark or SparkSession.getActiveSession()
    own_session = spark is None
    if own_session:
        spark = local_session("james-consistency-seed", settings)
    try:
        written = write_mailboxes(settings, plan)
        refresh_connector_schema(spark)
        if plan.messages:
            written.update(write_messages(spark, plan))
    finally:
        if own_session:
            spark.stop()
    seconds = time.perf_counter() - started
    return {
        "keyspace": keyspace,
        "generation": generation,
        "users": users,
        "mailboxes": plan.mailboxes,
        "messages": plan.messages,
        "rows_written": written,
        "seconds": round(seconds, 1),
        "messages_per_second": round(plan.messages / seconds) if seconds else None,
        "rows_per_second": round(sum(written.values()) / seconds) if seconds else None,
    }
