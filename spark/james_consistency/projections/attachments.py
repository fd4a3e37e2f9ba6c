"""Attachment integrity: every attachment a message references has its attachmentV2 row, with a blob id, and the
reference James keeps between the attachment and its message.

Truth: the attachment list of the message metadata table (`messageV3` in James 3.6-3.9, plus `messageV2` where an
un-migrated one remains; `messageV2` in 3.5), one row per (message, attachment), joined with the attachmentV2 row
(present? blob id?) and the mailboxes holding the message (imapUidTable).
Projection, the reference James writes with the attachment:
- 3.6-3.9 (CassandraAttachmentDAOV2.storeAttachment): attachmentV2.message_id, written with the row; a row without
  it (written before AttachmentMessageIdMigration) gets it back the way the migration writes it (an UPDATE of
  message_id alone, here only on a row that exists);
- 3.5 (CassandraAttachmentMapper.storeAttachmentWithIndex): one attachmentMessageId row per (attachment, message),
  INSERTed after the attachmentV2 row.
Nothing is ever deleted or overwritten: attachment rows no message references (JMAP uploads, owned through
attachmentOwners) are not this check's business, and a reference already there is kept. A message whose attachment
row is gone, or has no blob id, cannot be fixed from the data (the content is lost): it is reported with the message
id, the attachment id and the mailbox ids holding the message, and the report is PARTIAL.
"""

import hashlib
import json
import uuid

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from james_consistency.engine import before_images
from james_consistency.engine.apply import ApplyContext, ProjectionWriter
from james_consistency.engine.diff import ACTUAL_PREFIX, EXPECTED_PREFIX, PRESENCE
from james_consistency.engine.live import Query, one, prepared
from james_consistency.engine.spec import (
    CandidateHints,
    Projection,
    ProjectionSpec,
    ReportNames,
    Sample,
    Truth,
    UnreadableTruth,
    Writing,
)
from james_consistency.projections.health import truth_health

MISSING_ROW = "missing-attachment-row"
NO_BLOB_ID = "attachment-without-blob-id"


def attachment_uuid(attachment_id: str | None) -> str | None:
    """AttachmentId.asUUID(): Java's UUID.nameUUIDFromBytes of the id's UTF-8 bytes (an MD5, version 3)."""
    if attachment_id is None:
        return None
    return str(uuid.UUID(bytes=hashlib.md5(attachment_id.encode("utf-8")).digest(), version=3))


def attachment_truth_problems() -> dict:
    return {
        "null_messageid": F.col("messageid").isNull(),
        "null_attachment_id": F.col("attachmentid").isNull(),
    }


def _message_tables(generation: str, keyspace_tables: frozenset | None) -> tuple[str, ...]:
    if generation == "3.5":
        return ("messageV2",)
    if keyspace_tables is not None and "messagev2" in keyspace_tables:
        return ("messageV3", "messageV2")
    return ("messageV3",)


def _read_truth(generation: str, keyspace_tables: frozenset | None):
    def read_truth(read) -> DataFrame:
        references = None
        for table in _message_tables(generation, keyspace_tables):
            exploded = read(table, ("messageid", "attachments")).select(
                F.col("messageid").cast("string").alias("messageid"),
                F.explode("attachments").alias("attachment"),
            )
            part = exploded.select("messageid", F.col("attachment.id").alias("attachmentid"))
            references = part if references is None else references.unionByName(part)
        # Built per scan: a used UDF object holds the JVM function and cannot travel to the executors with the spec.
        as_uuid = F.udf(attachment_uuid, StringType())
        references = references.distinct().withColumn("idasuuid", as_uuid("attachmentid"))
        # Presence is a column of the row itself, not a literal: Spark folds a literal of the outer join's optional
        # side into the filters above it, and an absent row then looked present.
        rows = read("attachmentV2", ("idasuuid", "blobid")).select(
            F.col("idasuuid").cast("string").alias("idasuuid"),
            F.col("idasuuid").cast("string").alias("row_present"),
            F.col("blobid"),
        )
        holders = (
            read("imapUidTable", ("messageid", "mailboxid"))
            .groupBy(F.col("messageid").cast("string").alias("messageid"))
            .agg(F.array_sort(F.collect_set(F.col("mailboxid").cast("string"))).alias("mailboxids"))
        )
        return references.join(rows, on="idasuuid", how="left").join(holders, on="messageid", how="left")

    return read_truth


def _usable(truth: DataFrame) -> DataFrame:
    return truth.where(F.col("row_present").isNotNull() & F.col("blobid").isNotNull())


def unfixable(truth: DataFrame) -> DataFrame:
    """(attachment uuid, problem as JSON) per message reference whose attachment row is gone or has no blob id."""
    missing = F.col("row_present").isNull()
    problem = F.to_json(
        F.struct(
            F.when(missing, F.lit(MISSING_ROW)).otherwise(F.lit(NO_BLOB_ID)).alias("kind"),
            F.col("messageid").alias("messageId"),
            F.col("attachmentid").alias("attachmentId"),
            F.coalesce(F.col("mailboxids"), F.array().cast("array<string>")).alias("mailboxIds"),
        )
    )
    return truth.where(F.col("attachmentid").isNotNull() & (missing | F.col("blobid").isNull())).select(
        F.col("idasuuid").alias("mailbox"), problem.alias("problem")
    )


def finish_report(report: dict) -> None:
    """The unfixable references, under James's names, instead of the engine's generic unreadable-truth errors."""
    errors = []
    for error in report.get("errors", []):
        if error.get("kind") != "unreadable-truth":
            errors.append(error)
            continue
        detail = json.loads(error["error"])
        what = "has no attachmentV2 row" if detail["kind"] == MISSING_ROW else "has an attachmentV2 row without blob id"
        errors.append(
            {
                "kind": detail["kind"],
                "messageId": detail["messageId"],
                "attachmentId": detail["attachmentId"],
                "mailboxIds": detail["mailboxIds"],
                "error": f"attachment {detail['attachmentId']} of message {detail['messageId']} {what}: "
                "its content cannot be rebuilt, nothing was changed",
            }
        )
    report["errors"] = errors
    report["unfixableAttachmentReferences"] = report.get("unreadableTruth", 0)


# ---- the live re-check -------------------------------------------------------------------------------------------


def _message_references(session, context: ApplyContext, generation, message_id, attachment_uuid_text):
    """Steps (see engine.live): the attachment id, when the message (now) references the attachment of that uuid."""
    for table in ("messagev2",) if generation == "3.5" else ("messagev3", "messagev2"):
        try:
            statement = prepared(
                session,
                f"SELECT attachments FROM {context.keyspace}.{table} WHERE messageid = ?",
                context.truth_consistency,
            )
        except Exception:  # noqa: BLE001 - messageV2 may be gone from a migrated 3.6+ keyspace
            continue
        row = one((yield Query(statement, [message_id])))
        for attachment in (row["attachments"] or []) if row else []:
            if attachment_uuid(attachment.id) == attachment_uuid_text:
                return attachment.id
    return None


def _attachment_row(session, context: ApplyContext, idasuuid):
    statement = prepared(
        session, f"SELECT blobid FROM {context.keyspace}.attachmentv2 WHERE idasuuid = ?", context.truth_consistency
    )
    return one((yield Query(statement, [idasuuid])))


class MessageIdColumnWriter(ProjectionWriter):
    """attachmentV2.message_id, filled only where the row exists without it (never a new, partial row: the UPDATE
    is conditional), never changed nor removed."""

    undo_rule = before_images.LWT

    def written(self, expected: dict, current: dict | None) -> dict:
        return {**(current or {}), "message_id": expected["message_id"]}

    def upsert_cql(self, table: str, where: str) -> str:
        return f"UPDATE {table} SET message_id = ? WHERE {where} IF EXISTS"

    def upsert_values(self, row: dict, timestamp: int) -> list:
        return [row["message_id"], row["idasuuid"]]

    def consistent(self, expected: dict | None, current: dict | None) -> bool:
        return expected is None or current is None or current.get("message_id") is not None

    def remove(self, key: dict, timestamp: int, current: dict | None):
        raise AssertionError("attachment integrity never deletes")


class AddOnlyWriter(ProjectionWriter):
    """attachmentMessageId rows are added as James INSERTs them, never rewritten nor removed."""

    def consistent(self, expected: dict | None, current: dict | None) -> bool:
        return expected is None or current is not None

    def remove(self, key: dict, timestamp: int, current: dict | None):
        raise AssertionError("attachment integrity never deletes")


def _common(generation: str, keyspace_tables) -> dict:
    tables = _message_tables(generation, keyspace_tables)
    return {
        "name": "attachments",
        "truth": Truth(
            tables[0],
            read=_read_truth(generation, keyspace_tables),
            extra_tables=(*tables[1:], "attachmentV2", "imapUidTable"),
        ),
        "health": truth_health("attachments_truth_health", attachment_truth_problems),
        "finish_report": finish_report,
    }


def attachment_message_ids(truth: DataFrame) -> DataFrame:
    """3.6-3.9: the message id each usable attachment row holds (the smallest of the messages referencing it)."""
    return (
        _usable(truth).groupBy("idasuuid").agg(F.min("messageid").alias("message_id")).select("idasuuid", "message_id")
    )


def attachment_message_id_rows(truth: DataFrame) -> DataFrame:
    """3.5: one attachmentMessageId row per reference to a usable attachment row."""
    return _usable(truth).select(F.col("idasuuid").alias("attachmentidasuuid"), "messageid", "attachmentid")


def _recheck_message_id(generation: str):
    def recheck(session, context: ApplyContext, key: dict, candidate, current) -> dict | None:
        if (yield from _attachment_row(session, context, key["idasuuid"])) is None:
            return None
        for seen in sorted(value for value in candidate["message_id_seen"] if value is not None):
            message_id = uuid.UUID(seen)
            if (yield from _message_references(session, context, generation, message_id, str(key["idasuuid"]))):
                return {"idasuuid": key["idasuuid"], "message_id": message_id}
        return None

    return recheck


def _recheck_attachment_message_id(session, context: ApplyContext, key: dict, candidate, current) -> dict | None:
    if (yield from _attachment_row(session, context, key["attachmentidasuuid"])) is None:
        return None
    attachment_id = yield from _message_references(
        session, context, "3.5", uuid.UUID(key["messageid"]), str(key["attachmentidasuuid"])
    )
    if attachment_id is None:
        return None
    return {
        "attachmentidasuuid": key["attachmentidasuuid"],
        "messageid": key["messageid"],
        "attachmentid": attachment_id,
    }


def attachment_projection(generation: str, keyspace_tables: frozenset | None = None) -> ProjectionSpec:
    if generation == "3.5":
        return _attachment_message_id_projection(keyspace_tables)
    return ProjectionSpec(
        projection=Projection(
            "attachmentV2",
            key=("idasuuid",),
            columns=("idasuuid", "message_id"),
            cql_types={"idasuuid": "uuid", "message_id": "timeuuid"},
            # Only a row without message id is fixed: rows no message references and references already held are
            # kept.
            equivalent=lambda: (
                F.col(EXPECTED_PREFIX + PRESENCE).isNull()
                | F.col(ACTUAL_PREFIX + PRESENCE).isNull()
                | F.col(ACTUAL_PREFIX + "message_id").isNotNull()
            ),
            # Nothing this check does takes anything away: it only adds missing references.
            destructive_kinds=(),
        ),
        derive=attachment_message_ids,
        recheck=_recheck_message_id(generation),
        report_names=ReportNames(
            processed_truth="processedMessageAttachmentEntries",
            processed_projection="processedAttachmentV2Entries",
            added="addedAttachmentMessageIds",
            updated="updatedAttachmentMessageIds",
            removed="removedAttachmentMessageIds",
        ),
        hints=CandidateHints(("message_id",)),
        sample=Sample(("idasuuid", "message_id"), {"idasuuid": "attachmentIdAsUuid", "message_id": "messageId"}),
        unreadable=UnreadableTruth(unfixable, scope_column="idasuuid"),
        writing=Writing(MessageIdColumnWriter),
        **_common(generation, keyspace_tables),
    )


def _attachment_message_id_projection(keyspace_tables) -> ProjectionSpec:
    return ProjectionSpec(
        projection=Projection(
            "attachmentMessageId",
            key=("attachmentidasuuid", "messageid"),
            columns=("attachmentidasuuid", "messageid", "attachmentid"),
            cql_types={"attachmentidasuuid": "uuid", "messageid": "text"},
            # Add-only: attachmentMessageId rows no message holds (any more) and existing rows are kept as they are.
            equivalent=lambda: F.col(EXPECTED_PREFIX + PRESENCE).isNull() | F.col(ACTUAL_PREFIX + PRESENCE).isNotNull(),
            destructive_kinds=(),
        ),
        derive=attachment_message_id_rows,
        recheck=_recheck_attachment_message_id,
        report_names=ReportNames(
            processed_truth="processedMessageAttachmentEntries",
            processed_projection="processedAttachmentMessageIdEntries",
            added="addedAttachmentMessageIdEntries",
            updated="updatedAttachmentMessageIdEntries",
            removed="removedAttachmentMessageIdEntries",
        ),
        sample=Sample(
            ("attachmentidasuuid", "messageid", "attachmentid"),
            {"attachmentidasuuid": "attachmentIdAsUuid", "messageid": "messageId", "attachmentid": "attachmentId"},
        ),
        unreadable=UnreadableTruth(unfixable, scope_column="attachmentidasuuid"),
        writing=Writing(AddOnlyWriter),
        **_common("3.5", keyspace_tables),
    )
