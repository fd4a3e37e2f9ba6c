"""The low-priority per-mailbox indexes, rebuilt from the truth (imapUidTable), not from messageIdTable as James
does: messageDeleted (uids flagged \\Deleted), firstUnseen (every uid not \\Seen), mailboxRecents (uids flagged
\\Recent). Each is one row per (mailboxId, uid) with no other column: fixes add and delete single rows, never
"empty the partition, then refill it"."""

from collections.abc import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from james_consistency.engine.apply import ApplyContext
from james_consistency.engine.spec import CandidateHints, Projection, ProjectionSpec, ReportNames, Sample, Truth
from james_consistency.errors import NotApplicable
from james_consistency.projections.health import MESSAGE_TRUTH_HEALTH
from james_consistency.projections.messages import live_truth_at

TRUTH_COLUMNS = ("messageid", "mailboxid", "uid", "modseq", "flagdeleted", "flagseen", "flagrecent")


def _index_projection(
    name: str, table: str, uid_column: str, qualifies: Callable[[], Column], holds: Callable[[dict], bool]
) -> ProjectionSpec:
    key = ("mailboxid", uid_column)

    def derive(truth: DataFrame) -> DataFrame:
        return truth.where(qualifies()).select("mailboxid", F.col("uid").alias(uid_column))

    def locate(truth: DataFrame) -> DataFrame:
        return truth.select("mailboxid", F.col("uid").alias(uid_column), "messageid")

    def recheck(session, context: ApplyContext, candidate_key: dict, candidate, current) -> dict | None:
        mailbox, uid = candidate_key["mailboxid"], candidate_key[uid_column]
        row = yield from live_truth_at(session, context, mailbox, uid, candidate["messageid_seen"], TRUTH_COLUMNS)
        return {"mailboxid": mailbox, uid_column: uid} if row is not None and holds(row) else None

    return ProjectionSpec(
        name=name,
        truth=Truth("imapUidTable", TRUTH_COLUMNS, partition_local=True),
        projection=Projection(table, key=key, columns=key, cql_types={"mailboxid": "timeuuid", uid_column: "bigint"}),
        derive=derive,
        recheck=recheck,
        report_names=ReportNames(
            processed_truth="processedImapUidEntries",
            processed_projection=f"processed{table[0].upper()}{table[1:]}Entries",
            added="addedEntries",
            updated="updatedEntries",
            removed="removedEntries",
        ),
        health=MESSAGE_TRUTH_HEALTH,
        hints=CandidateHints(("messageid",), locate=locate),
        sample=Sample(
            ("mailboxid", uid_column, "messageid"),
            {"mailboxid": "mailboxId", "messageid": "messageId", uid_column: "uid"},
        ),
    )


def deleted_projection(generation: str) -> ProjectionSpec:
    return _index_projection(
        "deleted",
        "messageDeleted",
        "uid",
        lambda: F.col("flagdeleted"),
        lambda row: bool(row["flagdeleted"]),
    )


def unseen_projection(generation: str) -> ProjectionSpec:
    return _index_projection(
        "unseen",
        "firstUnseen",
        "uid",
        lambda: ~F.coalesce(F.col("flagseen"), F.lit(False)),
        lambda row: not row["flagseen"],
    )


# Why `recent` has nothing to do where James no longer handles IMAP Recent (the report's reason).
RECENT_NOT_HANDLED = (
    "James is configured with james.mailbox.handleRecent=false (JAMES_HANDLE_RECENT=0): it neither reads nor writes "
    "mailboxRecents, so it is neither checked nor written"
)


def recent_projection(generation: str, handle_recent: bool = True) -> ProjectionSpec:
    """mailboxRecents, where James handles IMAP Recent (NotApplicable where it does not: James master's
    `-Djames.mailbox.handleRecent=false` turns its DAO into a no-op that neither reads, writes nor purges the table,
    and leaves messages' flagRecent as it was)."""
    if not handle_recent:
        raise NotApplicable(RECENT_NOT_HANDLED)
    return _index_projection(
        "recent",
        "mailboxRecents",
        "recent_mesage_uid",
        lambda: F.col("flagrecent"),
        lambda row: bool(row["flagrecent"]),
    )
