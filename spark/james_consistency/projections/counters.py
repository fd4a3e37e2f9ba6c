"""mailboxCounters (messages and unseen messages per mailbox) and the users' current quotas (messages and octets per
quota root: quotaCurrentValue's MAILBOX rows in James 3.9, currentQuota in 3.5), computed from the truth
(imapUidTable; the mailbox table for mailboxes with no message, which get zero; the path registrations for the owner
of a mailbox whose row is lost).

Cassandra counters cannot be set, only incremented: a fix reads the counter, recounts the truth, reads the counter
again and adds (expected - current), only if the counter did not move meanwhile (mail activity: reported, left for
the next run). Counters are still not concurrency-safe (James's ADR-0023): a message whose imapUidTable row is
written but whose own increment has not landed yet is counted twice. A re-run converges; the report says so.
A counter increment is never retried (a timed-out increment may have been applied): it is reported as failed.
"""

from collections.abc import Callable, Iterable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from james_consistency.engine import before_images
from james_consistency.engine.apply import ApplyContext, to_cql_value
from james_consistency.engine.diff import ACTUAL_PREFIX, EXPECTED_PREFIX
from james_consistency.engine.live import Query, Steps, Together, one, prepared
from james_consistency.engine.spec import (
    CandidateHints,
    Projection,
    ProjectionSpec,
    ReportNames,
    Sample,
    Truth,
    Writing,
)
from james_consistency.projections.health import truth_health

CONCURRENCY_NOTE = (
    "Counters are not concurrency-safe (James ADR-0023): mail delivered or read during the run may leave a counter "
    "off by the messages in flight; a re-run converges. Counters that moved during their re-check were left alone "
    "and are listed as failed."
)
REPORT_NAMES = ReportNames(
    processed_truth="processedTruthRows",
    processed_projection="processedCounterEntries",
    added="addedCounterEntries",
    updated="updatedCounterEntries",
    removed="removedCounterEntries",
)


class CounterMoved(Exception):
    """The counter changed between its two reads around the recount: mail activity; left for the next run."""


def counter_problems() -> dict:
    """Message rows of the truth that cannot be counted (empty mailboxes have a row with no message)."""
    message = F.col("messageid").isNotNull()
    return {
        "null_uid": message & F.col("uid").isNull(),
        "uid_below_1": message & (F.col("uid") < 1),
    }


def quota_problems() -> dict:
    message = F.col("messageid").isNotNull()
    return {
        **counter_problems(),
        "null_size": message & F.col("fullcontentoctets").isNull(),
        "negative_size": message & (F.col("fullcontentoctets") < 0),
    }


def all_zero_equivalent(value_columns: tuple[str, ...]):
    """An absent counter row reads as zero: expected and actual compare with nulls as 0."""

    def equivalent():
        condition = F.lit(True)
        for column in value_columns:
            expected = F.coalesce(F.col(EXPECTED_PREFIX + column), F.lit(0))
            actual = F.coalesce(F.col(ACTUAL_PREFIX + column), F.lit(0))
            condition = condition & (expected == actual)
        return condition

    return equivalent


class CounterWriter:
    """Adds the difference to counter columns, after checking the counter did not move since it was first read."""

    undo_rule = before_images.COUNTER

    def __init__(self, session, context: ApplyContext, spec: ProjectionSpec):
        table = f"{context.keyspace}.{spec.projection_table.lower()}"
        where = " AND ".join(f"{column} = ?" for column in spec.key)
        self.session, self.spec = session, spec
        self.select = prepared(
            session, f"SELECT {', '.join(spec.columns)} FROM {table} WHERE {where}", context.projection_consistency
        )
        increments = ", ".join(f"{column} = {column} + ?" for column in spec.value_columns)
        self.increment = prepared(session, f"UPDATE {table} SET {increments} WHERE {where}", context.write_consistency)
        self.delete = prepared(session, f"DELETE FROM {table} WHERE {where}", context.write_consistency)

    def _key_values(self, row: dict) -> list:
        return [row[column] for column in self.spec.key]

    def values(self, row: dict | None) -> tuple[int, ...]:
        return tuple(int((row or {}).get(column) or 0) for column in self.spec.value_columns)

    def read(self, key: dict):
        return one((yield Query(self.select, self._key_values(key))))

    def consistent(self, expected: dict | None, current: dict | None) -> bool:
        return self.values(expected) == self.values(current)

    def written(self, expected: dict, current: dict | None) -> dict:
        return expected

    def _unmoved(self, key: dict, current: dict | None):
        now = yield from self.read(key)
        if self.values(now) != self.values(current):
            raise CounterMoved(f"counter moved from {self.values(current)} to {self.values(now)} during the re-check")

    def write(self, expected: dict, timestamp: int, current: dict | None):
        yield from self._unmoved(expected, current)
        deltas = [new - old for new, old in zip(self.values(expected), self.values(current), strict=True)]
        # Not retried: a timed-out increment may have been applied, and a second one would double it.
        yield Query(self.increment, [*deltas, *self._key_values(expected)], retried=False)

    def remove(self, key: dict, timestamp: int, current: dict | None):
        yield from self._unmoved(key, current)
        yield Query(self.delete, self._key_values(key), retried=False)


# ---- the live recount, in the executors ---------------------------------------------------------------------------


def _rows(statement, arguments: Iterable[tuple]):
    """Steps (see engine.live): the rows of one statement bound to each of the arguments, read at once."""
    return [row for rows in (yield Together(tuple(Query(statement, values) for values in arguments))) for row in rows]


def live_messages(session, context: ApplyContext, generation: str, mailboxes: set, hinted: set):
    """Steps (see engine.live): the truth rows (mailboxid, uid, flagseen, fullcontentoctets) of the given mailboxes now:
    every message the scan saw there, and every message their messageIdTable partitions list now (mail delivered after
    the scan), each read back from imapUidTable. Sizes come from the truth row (3.9) or messageV2 (3.5)."""
    keyspace = context.keyspace
    listing = prepared(
        session, f"SELECT messageid FROM {keyspace}.messageidtable WHERE mailboxid = ?", context.projection_consistency
    )
    message_ids = set(hinted)
    for row in (yield from _rows(listing, [(mailbox,) for mailbox in mailboxes])):
        message_ids.add(row["messageid"])
    size = ", fullcontentoctets" if generation == "3.9" else ""
    truth = prepared(
        session,
        f"SELECT messageid, mailboxid, uid, flagseen{size} FROM {keyspace}.imapuidtable WHERE messageid = ?",
        context.message_truth_consistency,
    )
    rows = [row for row in (yield from _rows(truth, [(m,) for m in message_ids])) if row["mailboxid"] in mailboxes]
    if generation != "3.9" and rows:
        sizes = prepared(
            session,
            f"SELECT messageid, fullcontentoctets FROM {keyspace}.messagev2 WHERE messageid = ?",
            context.truth_consistency,
        )
        octets = {
            row["messageid"]: row["fullcontentoctets"]
            for row in (yield from _rows(sizes, [(m,) for m in {row["messageid"] for row in rows}]))
        }
        rows = [{**row, "fullcontentoctets": octets.get(row["messageid"])} for row in rows]
    return rows


def _hinted(candidate, column: str, cql_type: str) -> set:
    return {to_cql_value(value, cql_type) for value in candidate[column + "_seen"] if value is not None}


def _read_messages(generation: str, read, size: bool) -> DataFrame:
    columns = ("messageid", "mailboxid", "uid", "flagseen")
    if generation == "3.9":
        return read("imapUidTable", columns + (("fullcontentoctets",) if size else ()))
    messages = read("imapUidTable", columns)
    if not size:
        return messages
    return messages.join(read("messageV2", ("messageid", "fullcontentoctets")), on="messageid", how="left")


# ---- mailboxCounters ------------------------------------------------------------------------------------------------


def mailbox_counters(truth: DataFrame) -> DataFrame:
    """Per mailbox: its messages and the unseen ones (a message not flagged Seen is unseen; an empty mailbox's row
    with no message counts nothing)."""
    return truth.groupBy("mailboxid").agg(
        F.count("messageid").alias("count"),
        F.count(F.when(F.col("messageid").isNotNull() & ~F.coalesce("flagseen", F.lit(False)), 1)).alias("unseen"),
    )


def _read_counters_truth(generation: str):
    def read_truth(read) -> DataFrame:
        # Full join: a mailbox whose row was lost (an orphan path, for the offline mailbox repair) still has messages,
        # so its counter is recounted, not removed as a deleted mailbox's.
        mailboxes = read("mailbox", ("id",)).select(F.col("id").alias("mailboxid"))
        return mailboxes.join(_read_messages(generation, read, size=False), on="mailboxid", how="full")

    return read_truth


def _recount_mailbox(generation: str):
    def recheck(session, context: ApplyContext, key: dict, candidate, current) -> dict | None:
        mailbox = key["mailboxid"]
        hinted = _hinted(candidate, "messageid", "timeuuid")
        rows = yield from live_messages(session, context, generation, {mailbox}, hinted)
        exists = prepared(session, f"SELECT id FROM {context.keyspace}.mailbox WHERE id = ?", context.truth_consistency)
        if not rows and one((yield Query(exists, [mailbox]))) is None:
            return None  # deleted: no mailbox row and no message
        unseen = sum(1 for row in rows if not row["flagseen"])
        return {"mailboxid": mailbox, "count": len(rows), "unseen": unseen}

    return recheck


def _counters_report(report: dict) -> None:
    report["processedMailboxes"] = report.get("expectedProjectionRows", 0)
    report["failedMailboxes"] = sorted({error["mailboxId"] for error in report.get("errors", [])})
    report["concurrencyNote"] = CONCURRENCY_NOTE


def mailbox_counters_projection(generation: str) -> ProjectionSpec:
    return ProjectionSpec(
        name="counters",
        truth=Truth("imapUidTable", read=_read_counters_truth(generation), extra_tables=("mailbox",)),
        projection=Projection(
            "mailboxCounters",
            key=("mailboxid",),
            columns=("mailboxid", "count", "unseen"),
            cql_types={"mailboxid": "timeuuid"},
            equivalent=all_zero_equivalent(("count", "unseen")),
        ),
        derive=mailbox_counters,
        recheck=_recount_mailbox(generation),
        report_names=REPORT_NAMES,
        health=truth_health("counters_truth_health", counter_problems),
        hints=CandidateHints(("messageid",), locate=lambda truth: truth.select("mailboxid", "messageid")),
        sample=Sample(("mailboxid",), {"mailboxid": "mailboxId"}),
        writing=Writing(CounterWriter),
        finish_report=_counters_report,
    )


# ---- quotas -------------------------------------------------------------------------------------------------------


def quota_root(namespace, user) -> str:
    return f"{namespace}&{user}"


def live_usage(session, context: ApplyContext, generation: str, root: str, candidate):
    """Steps (see engine.live): (messages, octets) of a quota root now: its mailboxes are the ones its path
    registrations list and the ones the scan saw, each checked to still belong to the user (by its mailbox row, or, for
    a mailbox whose row is lost, by its path registration); their messages as in `live_messages`."""
    namespace, _, user = root.partition("&")
    path_table = "mailboxpathv3" if generation == "3.9" else "mailboxpathv2"
    paths = prepared(
        session,
        f"SELECT mailboxid FROM {context.keyspace}.{path_table} WHERE namespace = ? AND user = ?",
        context.truth_consistency,
    )
    registered = {row["mailboxid"] for row in (yield Query(paths, [namespace, user]))}
    mailboxes = _hinted(candidate, "mailboxid", "timeuuid") | registered
    owner = prepared(
        session, f"SELECT id, mailboxbase FROM {context.keyspace}.mailbox WHERE id = ?", context.truth_consistency
    )
    rows = {row["id"]: row for row in (yield from _rows(owner, [(mailbox,) for mailbox in mailboxes]))}
    owners = {mailbox: _owner(row["mailboxbase"]) for mailbox, row in rows.items()}
    # A mailbox row without a whole owner counts for the user its path registration names, as a lost row does.
    owned = {mailbox for mailbox, owner in owners.items() if owner == root} | {
        mailbox for mailbox in registered if owners.get(mailbox) is None
    }
    rows = yield from live_messages(session, context, generation, owned, _hinted(candidate, "messageid", "timeuuid"))
    return len(rows), sum(int(row["fullcontentoctets"] or 0) for row in rows)


def _owner(base) -> str | None:
    """The quota root of a mailbox row's owner; None when the row does not name both namespace and user."""
    if base is None or base.namespace is None or base.user is None:
        return None
    return quota_root(base.namespace, base.user)


def _root_column(namespace: str, user: str):
    """A quota root from two columns; null unless both are there (concat_ws would skip a null and make '#private')."""
    return F.when(F.col(namespace).isNotNull() & F.col(user).isNotNull(), F.concat_ws("&", namespace, user))


def quota_owners(mailboxes: DataFrame, paths: DataFrame) -> DataFrame:
    """(mailboxid, quotaroot) of every mailbox with an owner, from the mailbox rows (id, mailboxbase) and the path
    registrations (namespace, user, mailboxid)."""
    by_row = mailboxes.select(
        F.col("id").alias("mailboxid"),
        _root_column("mailboxbase.namespace", "mailboxbase.user").alias("row_root"),
    )
    # A mailbox whose row was lost (an orphan path) still holds the user's messages: its path registration names
    # the user (as James's quota recompute, which lists a user's mailboxes by path, counts it). The row wins when
    # there is one; distinct: a mailbox registered under two paths counts once.
    by_path = paths.select("mailboxid", _root_column("namespace", "user").alias("path_root"))
    return (
        by_row.join(by_path, on="mailboxid", how="full")
        .select("mailboxid", F.coalesce("row_root", "path_root").alias("quotaroot"))
        .where(F.col("quotaroot").isNotNull())  # no owner anywhere: nobody's quota
        .distinct()
    )


def quota_usage(truth: DataFrame) -> DataFrame:
    """Per quota root: its messages and their octets (a message of unknown size counts no octet)."""
    return truth.groupBy("quotaroot").agg(
        F.count("messageid").alias("messagecount"),
        F.coalesce(F.sum("fullcontentoctets"), F.lit(0)).cast("long").alias("storage"),
    )


def quota_current_values(truth: DataFrame) -> DataFrame:
    """quotaCurrentValue's MAILBOX rows: a `count` and a `size` row per quota root."""
    per_type = F.explode(
        F.array(
            F.struct(F.lit("count").alias("quotatype"), F.col("messagecount").alias("currentvalue")),
            F.struct(F.lit("size").alias("quotatype"), F.col("storage").alias("currentvalue")),
        )
    )
    return (
        quota_usage(truth)
        .select(F.col("quotaroot").alias("identifier"), F.lit("MAILBOX").alias("quotacomponent"), per_type)
        .select("identifier", "quotacomponent", "col.quotatype", "col.currentvalue")
    )


def quota_value_hints(truth: DataFrame) -> DataFrame:
    """Every message and mailbox of a quota root, at both of its quotaCurrentValue rows."""
    return truth.select(
        F.col("quotaroot").alias("identifier"),
        F.lit("MAILBOX").alias("quotacomponent"),
        F.explode(F.array(F.lit("count"), F.lit("size"))).alias("quotatype"),
        "messageid",
        "mailboxid",
    )


QUOTA_TYPES = frozenset({"count", "size"})


class RootRecounts:
    """One live recount of a quota root serves both of its rows (count and size), whichever order they are re-checked
    in; each row takes it once, so a row re-checked again is recounted. The engine re-checks a root's rows in one task
    (group_columns), where they usually come one after the other; at most `waiting` roots wait for their other row
    (most never see it: it was consistent, so it is no candidate)."""

    def __init__(self, waiting: int = 1024):
        self.waiting = waiting
        self._recounted: dict[str, tuple[tuple[int, int], frozenset]] = {}

    def usage(self, root: str, quotatype: str, recount: Callable[[], Steps]):
        """Steps (see engine.live): the root's (messages, octets), recounted by `recount()` steps when needed."""
        usage, served = self._recounted.pop(root, (None, frozenset()))
        if usage is None or quotatype in served:
            usage, served = (yield from recount()), frozenset()
        served |= {quotatype}
        if not QUOTA_TYPES <= served:
            self._recounted[root] = (usage, served)
            if len(self._recounted) > self.waiting:
                del self._recounted[next(iter(self._recounted))]  # the root waiting longest
        return usage


def _quota_path_table(generation: str) -> str:
    return "mailboxPathV3" if generation == "3.9" else "mailboxPathV2"


def _read_quota_truth(generation: str):
    def read_truth(read) -> DataFrame:
        owners = quota_owners(
            read("mailbox", ("id", "mailboxbase")),
            read(_quota_path_table(generation), ("namespace", "user", "mailboxid")),
        )
        return owners.join(_read_messages(generation, read, size=True), on="mailboxid", how="left")

    return read_truth


def _quotas_report(rows_per_root: int):
    def finish_report(report: dict) -> None:
        report["recomputeSingleQuotaComponentResults"] = [
            {
                "quotaComponent": "MAILBOX",
                "processedIdentifierCount": report.get("expectedProjectionRows", 0) // rows_per_root,
                "failedIdentifiers": sorted({error["quotaRoot"] for error in report.get("errors", [])}),
            }
        ]
        report["concurrencyNote"] = CONCURRENCY_NOTE

    return finish_report


def quota_projection(generation: str, keyspace_tables: frozenset[str] | None = None) -> ProjectionSpec:
    """Current quotas recounted from the messages. The table is found in the keyspace, not deduced from the message
    tables' generation: James 3.6 to 3.8 write 3.9's message rows but still keep quotas in `currentQuota` (its
    `quotaCurrentValue` came with the generic quota schema); without the table list, 3.9 means quotaCurrentValue."""
    if keyspace_tables is None:
        current_value_table = generation == "3.9"
    else:
        current_value_table = "quotacurrentvalue" in keyspace_tables
    common = dict(
        name="quotas",
        truth=Truth(
            "imapUidTable",
            read=_read_quota_truth(generation),
            extra_tables=("mailbox", _quota_path_table(generation)) + (() if generation == "3.9" else ("messageV2",)),
        ),
        report_names=REPORT_NAMES,
        health=truth_health("quotas_truth_health", quota_problems),
    )
    if current_value_table:
        return _quota_current_value_projection(generation, common)
    return _current_quota_projection(generation, common)


def _quota_current_value_projection(generation: str, common: dict) -> ProjectionSpec:
    recounts = RootRecounts()

    def recheck(session, context: ApplyContext, key: dict, candidate, current) -> dict | None:
        root = key["identifier"]
        messages, octets = yield from recounts.usage(
            root, key["quotatype"], lambda: live_usage(session, context, generation, root, candidate)
        )
        return {**key, "currentvalue": messages if key["quotatype"] == "count" else octets}

    return ProjectionSpec(
        **common,
        projection=Projection(
            "quotaCurrentValue",
            key=("identifier", "quotacomponent", "quotatype"),
            columns=("identifier", "quotacomponent", "quotatype", "currentvalue"),
            cql_types={"identifier": "text", "quotacomponent": "text", "quotatype": "text"},
            # SIEVE and JMAP_UPLOADS usage is not computed from messages: never touched.
            view=lambda projection: projection.where(F.col("quotacomponent") == "MAILBOX"),
            equivalent=all_zero_equivalent(("currentvalue",)),
        ),
        derive=quota_current_values,
        recheck=recheck,
        hints=CandidateHints(("messageid", "mailboxid"), locate=quota_value_hints),
        sample=Sample(("identifier", "quotatype"), {"identifier": "quotaRoot", "quotatype": "quotaType"}),
        writing=Writing(CounterWriter, group_columns=("identifier",)),
        finish_report=_quotas_report(rows_per_root=2),
    )


def _current_quota_projection(generation: str, common: dict) -> ProjectionSpec:
    def recheck(session, context: ApplyContext, key: dict, candidate, current) -> dict | None:
        messages, octets = yield from live_usage(session, context, generation, key["quotaroot"], candidate)
        return {"quotaroot": key["quotaroot"], "messagecount": messages, "storage": octets}

    return ProjectionSpec(
        **common,
        projection=Projection(
            "currentQuota",
            key=("quotaroot",),
            columns=("quotaroot", "messagecount", "storage"),
            cql_types={"quotaroot": "text"},
            equivalent=all_zero_equivalent(("messagecount", "storage")),
        ),
        derive=quota_usage,
        recheck=recheck,
        hints=CandidateHints(
            ("messageid", "mailboxid"), locate=lambda truth: truth.select("quotaroot", "messageid", "mailboxid")
        ),
        sample=Sample(("quotaroot",), {"quotaroot": "quotaRoot"}),
        writing=Writing(CounterWriter),
        finish_report=_quotas_report(rows_per_root=1),
    )
