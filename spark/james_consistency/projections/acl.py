"""ACL projections (James never built this repair: ADR-0021 / ADR-0044's corrective task).

Truth: the `newAcl` of each mailbox's last `acl-updated` event in eventStore (3.9), or the `acl` JSON (3.5).
eventStore holds every event-sourced aggregate of James; only those keyed by a bare mailbox id (a UUID) are mailbox
ACLs, the others (`BlobStoreStorageStrategyConfiguration`, `Task/<id>`, `FilteringRule/<user>`, `DLPRule/<domain>`,
`QuotaThreasholdEvents/...`) are not this repair's business and are not read.
Projections: aclv2 (3.9: one row per entry key, rights as a set of letters) and UserMailboxACL (positive entries of
individual users only, rights in canonical order), both holding the rights as James reads them (`c` is `kx`, `d` is
`etx`). A mailbox whose truth James cannot read (unparsable JSON, unknown event type, an unknown right letter, an
entry key without a name, 3.5 JSON with fields James does not know) is reported and its projection rows are left
untouched: it is never read as an empty ACL, which is what James 3.5 does and what would delete every right derived
from it.
"""

import json
import re

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import MapType, StringType, StructField, StructType

from james_consistency.cassandra.acl_rights import RIGHTS_ORDER
from james_consistency.engine.apply import ApplyContext, UpdateWriter
from james_consistency.engine.live import Query, one, prepared
from james_consistency.engine.spec import (
    Projection,
    ProjectionSpec,
    ReportNames,
    Sample,
    Truth,
    TruthHealth,
    UnreadableTruth,
    Writing,
)
from james_consistency.errors import NotApplicable
from james_consistency.projections.health import acl_event_problems, legacy_acl_problems, truth_health

# MailboxACL.SpecialName: `anybody` up to James 3.8, `anyone` since 3.9; a keyspace may hold either.
SPECIAL_NAMES = ("owner", "anyone", "anybody", "authenticated")
# MailboxACL.Rfc4314Rights: the obsolete RFC 2086 rights James still reads, as the rights they stand for.
OBSOLETE_RIGHTS = {"c": "kx", "d": "etx"}
# A mailbox ACL aggregate is keyed by CassandraId.serialize(): a UUID's canonical (lower-case) form.
MAILBOX_ID_PATTERN = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"


def is_mailbox_acl_aggregate(aggregate_id: str) -> bool:
    """Whether an eventStore aggregate id is a mailbox's ACL (not FilteringRule/..., Task/..., ...)."""
    return re.fullmatch(MAILBOX_ID_PATTERN, aggregate_id) is not None


READ_SCHEMA = StructType(
    [StructField("entries", MapType(StringType(), StringType())), StructField("problem", StringType())]
)


class MalformedTruth(Exception):
    """The ACL truth of a mailbox cannot be read: its projection rows are left as they are."""


# ---- the truth, in Spark --------------------------------------------------------------------------------------


def mailbox_acl_events(events: DataFrame) -> DataFrame:
    """The eventStore rows of mailbox ACL aggregates only (keyed by a mailbox id)."""
    return events.where(F.col("aggregateid").rlike(MAILBOX_ID_PATTERN))


def acl_state(truth: DataFrame, generation: str) -> DataFrame:
    """(mailbox, entries map, problem) per mailbox of the truth; `problem` is null when the ACL was read.

    Both are computed by `parse_acl`, the very parser the re-check uses (one Python function per ACL, run in the
    executors): a scan more lenient than the re-check (Spark's `from_json` accepts numbers, lists or null as rights,
    trailing garbage, single quotes) would plan deletions the re-check cannot carry out, instead of reporting the
    mailbox and leaving it alone.
    """
    if generation == "3.9":
        last = truth.groupBy("aggregateid").agg(F.max_by("event", "eventid").alias("event"))
        read = last.select(F.col("aggregateid").alias("mailbox"), _read_39(F.col("event")).alias("read"))
    else:
        read = truth.select(F.col("id").alias("mailbox"), _read_35(F.col("acl")).alias("read"))
    return read.select("mailbox", "read.entries", "read.problem")


def acl_problem(text: str | None, generation: str) -> str | None:
    """Why one ACL truth (event or legacy JSON) cannot be read, or None when `parse_acl` reads it."""
    return _read(text, generation)[1]


def _read(text: str | None, generation: str) -> tuple[dict[str, str] | None, str | None]:
    try:
        return parse_acl(text, generation), None
    except MalformedTruth as problem:
        return None, str(problem)


# Marked nondeterministic only so that Spark evaluates it once per ACL: it otherwise inlines the call into each of
# the two fields taken from its result, and parses every ACL twice.
_read_39 = F.udf(lambda text: _read(text, "3.9"), READ_SCHEMA).asNondeterministic()
_read_35 = F.udf(lambda text: _read(text, "3.5"), READ_SCHEMA).asNondeterministic()


def _entries(truth: DataFrame, generation: str) -> DataFrame:
    readable = acl_state(truth, generation).where(F.col("problem").isNull())
    return readable.select("mailbox", F.explode("entries").alias("key", "rights"))


def unreadable(truth: DataFrame, generation: str) -> DataFrame:
    return acl_state(truth, generation).where(F.col("problem").isNotNull()).select("mailbox", "problem")


# ---- the truth, live (re-check in the executors) ---------------------------------------------------------------


def parse_acl(text: str | None, generation: str) -> dict[str, str]:
    """The entries of one mailbox's ACL truth as James reads them (rights in canonical order, `c` and `d`
    expanded); MalformedTruth when James cannot read it."""
    try:
        document = json.loads(text) if text is not None else None
    except (ValueError, RecursionError):
        raise MalformedTruth("unparsable ACL JSON") from None
    if generation == "3.9":
        if not isinstance(document, dict) or document.get("type") != "acl-updated":
            kind = document.get("type") if isinstance(document, dict) else None
            raise MalformedTruth(f"unknown event type {kind}" if kind else "unparsable ACL event JSON")
        entries = _member(_member(_member(document, "aclDiff"), "newAcl"), "entries")
    else:
        entries = document.get("entries") if isinstance(document, dict) else None
        # MailboxACLJsonConverter (3.5) uses a default ObjectMapper: any other field fails the read, and James then
        # uses an EMPTY ACL.
        if isinstance(document, dict) and set(document) - {"entries"}:
            raise MalformedTruth(f"ACL JSON with fields James does not know: {sorted(set(document) - {'entries'})}")
    if not isinstance(entries, dict) or not all(isinstance(v, str) for v in entries.values()):
        raise MalformedTruth("ACL without readable entries")
    return {_entry_key(key): james_rights(rights) for key, rights in entries.items()}


def _member(document, name: str):
    """`document[name]` when `document` is a JSON object (hostile JSON puts lists and strings anywhere)."""
    return document.get(name) if isinstance(document, dict) else None


def _entry_key(key: str) -> str:
    """MailboxACL.EntryKey.deserialize: an optional `-`, an optional `$`, then a name that must not be empty."""
    if key.removeprefix("-").removeprefix("$") == "":
        raise MalformedTruth(f"ACL entry key without a name: {key!r}")
    return key


def james_rights(rights: str) -> str:
    """MailboxACL.Rfc4314Rights as James reads them, serialized again: the letters in canonical order, `c` and `d`
    expanded; MalformedTruth for any other letter (James then cannot read the whole ACL)."""
    letters = set()
    for letter in rights:
        if letter in OBSOLETE_RIGHTS:
            letters.update(OBSOLETE_RIGHTS[letter])
        elif letter in RIGHTS_ORDER:
            letters.add(letter)
        else:
            raise MalformedTruth(f"unknown ACL right {letter!r}")
    return "".join(letter for letter in RIGHTS_ORDER if letter in letters)


def live_entries(session, context: ApplyContext, generation: str, mailbox):
    """Steps (see engine.live): the mailbox's ACL as the truth holds it now (no event or no row: no entries)."""
    if generation == "3.9":
        statement = prepared(
            session,
            f"SELECT event FROM {context.keyspace}.eventstore WHERE aggregateid = ? ORDER BY eventid DESC LIMIT 1",
            context.truth_consistency,
        )
        row = one((yield Query(statement, [str(mailbox)])))
        return parse_acl(row["event"], generation) if row else {}
    statement = prepared(session, f"SELECT acl FROM {context.keyspace}.acl WHERE id = ?", context.truth_consistency)
    row = one((yield Query(statement, [mailbox])))
    return parse_acl(row["acl"], generation) if row else {}


def is_user_entry(key: str) -> bool:
    """A positive entry of an individual user (no `-`, no `$`, not a special name): what UserMailboxACL keeps."""
    return not key.startswith(("-", "$")) and key not in SPECIAL_NAMES


def is_user_key(key: Column) -> Column:
    """`is_user_entry` over a column."""
    return ~key.startswith("-") & ~key.startswith("$") & ~key.isin(*SPECIAL_NAMES)


# ---- the two projections ----------------------------------------------------------------------------------------


def _truth_table(generation: str) -> tuple[str, tuple[str, ...]]:
    if generation == "3.9":
        return "eventStore", ("aggregateid", "eventid", "event")
    return "acl", ("id", "acl")


def _truth(generation: str) -> Truth:
    """Where the truth is read: eventStore holds every aggregate of James, of which only mailbox ACLs are kept."""
    truth_table, truth_columns = _truth_table(generation)
    if generation == "3.9":
        return Truth(
            truth_table,
            truth_columns,
            read=lambda read: mailbox_acl_events(read(truth_table, truth_columns)),
            partition_local=True,
        )
    return Truth(truth_table, truth_columns, partition_local=True)


def _health(generation: str) -> TruthHealth:
    """Every eventStore figure is about ACL aggregates (the others are filtered out before)."""
    problems = acl_event_problems if generation == "3.9" else legacy_acl_problems
    return truth_health(f"acl_truth_health_{generation.replace('.', '')}", problems)


def user_mailbox_acl_projection(generation: str) -> ProjectionSpec:
    def derive(truth: DataFrame) -> DataFrame:
        entries = _entries(truth, generation).where(is_user_key(F.col("key")))
        return entries.select(
            F.col("key").alias("username"), F.col("mailbox").cast("string").alias("mailboxid"), "rights"
        ).where(F.col("rights") != "")

    def recheck(session, context: ApplyContext, key: dict, candidate, current) -> dict | None:
        entries = yield from live_entries(session, context, generation, key["mailboxid"])
        rights = entries.get(key["username"], "") if is_user_entry(key["username"]) else ""
        return {"username": key["username"], "mailboxid": key["mailboxid"], "rights": rights} if rights else None

    return ProjectionSpec(
        name="acl",
        truth=_truth(generation),
        projection=Projection(
            "UserMailboxACL",
            key=("username", "mailboxid"),
            columns=("username", "mailboxid", "rights"),
            cql_types={"username": "text", "mailboxid": "timeuuid"},
        ),
        derive=derive,
        recheck=recheck,
        report_names=_report_names("UserMailboxACL"),
        health=_health(generation),
        sample=Sample(("username", "mailboxid"), {"username": "userName", "mailboxid": "mailboxId"}),
        unreadable=UnreadableTruth(lambda truth: unreadable(truth, generation), scope_column="mailboxid"),
    )


def aclv2_projection(generation: str) -> ProjectionSpec:
    if generation != "3.9":
        raise NotApplicable("aclv2 exists only in the James 3.9 schema (3.5 keeps ACLs in `acl` JSON)")

    def derive(truth: DataFrame) -> DataFrame:
        # An entry without rights has no aclv2 row: James only adds and removes set elements there.
        letters = F.array_sort(F.filter(F.split(F.col("rights"), ""), lambda letter: letter != ""))
        return (
            _entries(truth, generation)
            .where(F.col("rights") != "")
            .select(F.col("mailbox").cast("string").alias("id"), "key", letters.alias("rights"))
        )

    def recheck(session, context: ApplyContext, key: dict, candidate, current) -> dict | None:
        rights = (yield from live_entries(session, context, generation, key["id"])).get(key["key"])
        return {"id": key["id"], "key": key["key"], "rights": set(rights)} if rights else None

    return ProjectionSpec(
        name="aclv2",
        truth=_truth(generation),
        projection=Projection(
            "aclv2", key=("id", "key"), columns=("id", "key", "rights"), cql_types={"id": "timeuuid", "key": "text"}
        ),
        derive=derive,
        recheck=recheck,
        report_names=_report_names("Aclv2"),
        health=_health(generation),
        sample=Sample(("id", "key"), {"id": "mailboxId", "key": "entryKey"}),
        unreadable=UnreadableTruth(lambda truth: unreadable(truth, generation), scope_column="id"),
        # James writes aclv2 only by UPDATE (CassandraACLDAOV2): a row the repair INSERTed would keep its row marker
        # and outlive James's removal of the entry's rights, as an entry with no rights.
        writing=Writing(UpdateWriter),
    )


def _report_names(table: str) -> ReportNames:
    return ReportNames(
        processed_truth="processedMailboxAclEntries",
        processed_projection=f"processed{table}Entries",
        added=f"added{table}Entries",
        updated=f"updated{table}Entries",
        removed=f"removed{table}Entries",
    )
