"""The low-priority per-mailbox indexes, rebuilt from the truth (imapUidTable), not from messageIdTable as James
does: messageDeleted (uids flagged \\Deleted), firstUnseen (every uid not \\Seen), mailboxRecents (uids flagged
\\Recent). Each is one row per (mailboxId, uid) with no other column: fixes add and delete single rows, never
"empty the partition, then refill it"."""

from collections.abc import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from james_consistency.engine.apply import ApplyContext, to_cql_value
from james_consistency.engine.live import prepared, with_retries
from james_consistency.engine.spec import ProjectionSpec, ReportNames
from james_consistency.projections.health import any_problem, counted_problems, message_truth_problems
from james_consistency.projections.messages import AmbiguousTruth

TRUTH_COLUMNS = ("messageid", "mailboxid", "uid", "modseq", "flagdeleted", "flagseen", "flagrecent")


def _index_projection(
    name: str, table: str, uid_column: str, qualifies: Callable[[], Column], holds: Callable[[dict], bool]
) -> ProjectionSpec:
    key = ("mailboxid", uid_column)

    def derive(truth: DataFrame) -> DataFrame:
        return truth.where(qualifies()).select("mailboxid", F.col("uid").alias(uid_column))

    def locate(truth: DataFrame) -> DataFrame:
        return truth.select("mailboxid", F.col("uid").alias(uid_column), "messageid")

    def recheck(session, context: ApplyContext, candidate_key: dict, candidate) -> dict | None:
        """The truth at this (mailboxId, uid) now: through the messageIds the scan saw there and the one
        messageIdTable holds now (a message added after the scan)."""
        mailbox, uid = candidate_key["mailboxid"], candidate_key[uid_column]
        current = with_retries(
            lambda: session.execute(
                prepared(
                    session,
                    f"SELECT messageid FROM {context.keyspace}.messageidtable WHERE mailboxid = ? AND uid = ?",
                    context.projection_consistency,
                ),
                [mailbox, uid],
            ).one()
        )
        message_ids = {to_cql_value(v, "timeuuid") for v in candidate["messageid_seen"] if v is not None}
        if current is not None:
            message_ids.add(current["messageid"])
        select_truth = prepared(
            session,
            f"SELECT {', '.join(TRUTH_COLUMNS)} FROM {context.keyspace}.imapuidtable "
            "WHERE messageid = ? AND mailboxid = ? AND uid = ?",
            context.truth_consistency,
        )
        rows = [
            row
            for message_id in message_ids
            if (
                row := with_retries(
                    lambda message_id=message_id: session.execute(select_truth, [message_id, mailbox, uid]).one()
                )
            )
            is not None
        ]
        if len(rows) > 1:
            raise AmbiguousTruth(f"several messages claim uid {uid} in mailbox {mailbox}")
        if rows and holds(rows[0]):
            return {"mailboxid": mailbox, uid_column: uid}
        return None

    return ProjectionSpec(
        name=name,
        truth_table="imapUidTable",
        projection_table=table,
        key=key,
        columns=key,
        truth_columns=TRUTH_COLUMNS,
        derive=derive,
        recheck=recheck,
        report_names=ReportNames(
            processed_truth="processedImapUidEntries",
            processed_projection=f"processed{table[0].upper()}{table[1:]}Entries",
            added="addedEntries",
            updated="updatedEntries",
            removed="removedEntries",
        ),
        hint_columns=("messageid",),
        sample_columns=("mailboxid", uid_column, "messageid"),
        sample_names={"mailboxid": "mailboxId", "messageid": "messageId", uid_column: "uid"},
        cql_types={"mailboxid": "timeuuid", uid_column: "bigint", "messageid": "timeuuid"},
        locate=locate,
        truth_suite="messages_truth_health",
        truth_metrics=lambda: counted_problems(message_truth_problems()),
        truth_problem=lambda: any_problem(message_truth_problems()),
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


def recent_projection(generation: str) -> ProjectionSpec:
    return _index_projection(
        "recent",
        "mailboxRecents",
        "recent_mesage_uid",
        lambda: F.col("flagrecent"),
        lambda row: bool(row["flagrecent"]),
    )
