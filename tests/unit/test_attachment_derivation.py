"""Attachment integrity derived from the message metadata: the reference each attachment row must hold, the
references that cannot be fixed (content lost), and what counts as consistent (add-only: nothing is deleted)."""

import json

from james_consistency.engine.diff import compare, inconsistencies
from james_consistency.projections import attachments, projection_spec
from james_consistency.projections.attachments import attachment_uuid, finish_report
from pyspark.testing.utils import assertDataFrameEqual

MESSAGES = "messageid string, attachments array<struct<id: string, name: string>>"
ROWS = "idasuuid string, blobid string"
HOLDERS = "messageid string, mailboxid string"
A1, A2, A3 = attachment_uuid("a1"), attachment_uuid("a2"), attachment_uuid("a3")


def reader(tables: dict):
    """The engine's read_table contract, served from local DataFrames."""
    return lambda table, columns: tables[table].select(*columns)


def test_an_attachment_row_is_keyed_by_java_name_uuid_from_bytes_of_its_id():
    # UUID.nameUUIDFromBytes("abc".getBytes(UTF_8)): MD5 900150983cd24fb0d6963f7d28e17f72, version 3, IETF variant.
    assert attachment_uuid("abc") == "90015098-3cd2-3fb0-9696-3f7d28e17f72"
    assert attachment_uuid(None) is None


def tables(spark, metadata_table: str) -> dict:
    return {
        metadata_table: spark.createDataFrame(
            [
                ("m2", [("a1", "invoice.pdf"), ("a2", "photo.jpg")]),
                ("m1", [("a1", "invoice.pdf")]),  # a1 shared by two messages
                ("m3", [("a3", "notes.txt")]),
                ("m4", None),  # no attachment
            ],
            MESSAGES,
        ),
        "attachmentV2": spark.createDataFrame([(A1, "blob-1"), (A3, None), (attachment_uuid("upload"), "b")], ROWS),
        "imapUidTable": spark.createDataFrame([("m2", "box-2"), ("m2", "box-1"), ("m1", "box-1")], HOLDERS),
    }


def test_from_36_each_attachment_row_holds_the_id_of_a_message_that_references_it(spark):
    spec = projection_spec("attachments", "3.9")
    truth = spec.truth.scan(reader(tables(spark, "messageV3")))

    expected = spark.createDataFrame([(A1, "m1")], "idasuuid string, message_id string")
    assertDataFrameEqual(spec.derive(truth), expected)


def test_in_35_each_reference_is_an_attachment_message_id_row(spark):
    spec = projection_spec("attachments", "3.5")
    truth = spec.truth.scan(reader(tables(spark, "messageV2")))

    expected = spark.createDataFrame(
        [(A1, "m1", "a1"), (A1, "m2", "a1")], "attachmentidasuuid string, messageid string, attachmentid string"
    )
    assertDataFrameEqual(spec.derive(truth), expected)


def test_a_reference_to_a_lost_row_or_a_row_without_blob_is_unfixable_with_the_mailboxes_holding_the_message(spark):
    spec = projection_spec("attachments", "3.9")
    truth = spec.truth.scan(reader(tables(spark, "messageV3")))

    expected = spark.createDataFrame(
        [
            (
                A2,
                '{"kind":"missing-attachment-row","messageId":"m2","attachmentId":"a2","mailboxIds":["box-1","box-2"]}',
            ),
            (
                A3,
                '{"kind":"attachment-without-blob-id","messageId":"m3","attachmentId":"a3","mailboxIds":[]}',
            ),
        ],
        "mailbox string, problem string",
    )
    assertDataFrameEqual(spec.unreadable.find(truth), expected)


def test_a_36_migrated_keyspace_still_reads_the_references_of_messages_left_in_message_v2(spark):
    spec = projection_spec("attachments", "3.9", keyspace_tables=frozenset({"messagev3", "messagev2"}))
    served = tables(spark, "messageV3")
    served["messageV2"] = spark.createDataFrame([("m0", [("a1", "invoice.pdf")])], MESSAGES)
    truth = spec.truth.scan(reader(served))

    assertDataFrameEqual(spec.derive(truth), spark.createDataFrame([(A1, "m0")], "idasuuid string, message_id string"))


def test_only_a_row_without_message_id_is_fixed_nothing_is_ever_removed(spark):
    spec = projection_spec("attachments", "3.9")
    schema = "idasuuid string, message_id string"
    expected = spark.createDataFrame([("u1", "m1"), ("u2", "m2"), ("u3", "m3")], schema)
    actual = spark.createDataFrame([("u1", None), ("u2", "m9"), ("u4", None)], schema)

    found = inconsistencies(compare(expected, actual, spec.key, spec.value_columns, spec.projection.equivalent()))

    assert spec.projection.destructive_kinds == ()
    assertDataFrameEqual(found.select("idasuuid", "kind"), [("u1", "outdated")])


def test_in_35_only_missing_reference_rows_are_added(spark):
    spec = projection_spec("attachments", "3.5")
    schema = "attachmentidasuuid string, messageid string, attachmentid string"
    expected = spark.createDataFrame([("u1", "m1", "a1"), ("u2", "m2", "a2")], schema)
    actual = spark.createDataFrame([("u1", "m1", "other"), ("u9", "m9", "a9")], schema)

    found = inconsistencies(compare(expected, actual, spec.key, spec.value_columns, spec.projection.equivalent()))

    assertDataFrameEqual(found.select("attachmentidasuuid", "kind"), [("u2", "missing")])


def test_the_report_names_each_unfixable_reference_as_james_would(spark):
    detail = {"kind": "missing-attachment-row", "messageId": "m2", "attachmentId": "a2", "mailboxIds": ["box-1"]}
    report = {
        "unreadableTruth": 1,
        "errors": [
            {"attachmentIdAsUuid": A2, "kind": "unreadable-truth", "error": json.dumps(detail)},
            {"kind": "recheck-failed", "error": "timeout"},
        ],
    }

    finish_report(report)

    assert report["unfixableAttachmentReferences"] == 1
    assert report["errors"] == [
        {
            "kind": "missing-attachment-row",
            "messageId": "m2",
            "attachmentId": "a2",
            "mailboxIds": ["box-1"],
            "error": "attachment a2 of message m2 has no attachmentV2 row: its content cannot be rebuilt, "
            "nothing was changed",
        },
        {"kind": "recheck-failed", "error": "timeout"},
    ]


def test_the_attachment_truth_health_counts_references_without_a_message_or_an_attachment_id(spark):
    spec = projection_spec("attachments", "3.9")
    truth = spark.createDataFrame(
        [("m1", "a1"), (None, "a2"), ("m3", None), ("m4", None)], "messageid string, attachmentid string"
    )

    assert spec.health.suite == "attachments_truth_health"
    assertDataFrameEqual(
        truth.agg(*spec.health.metrics()),
        spark.createDataFrame([(1, 2)], "null_messageid long, null_attachment_id long"),
    )


TRUTH = "idasuuid string, messageid string, attachmentid string, row_present string, blobid string"


def test_only_references_to_an_attachment_row_with_a_blob_id_are_projected(spark):
    truth = spark.createDataFrame(
        [
            ("u1", "m2", "a1", "u1", "blob-1"),
            ("u1", "m1", "a1", "u1", "blob-1"),  # two messages: the 3.6+ row holds the smallest id
            ("u2", "m3", "a2", None, None),  # the attachment row is gone
            ("u3", "m4", "a3", "u3", None),  # the row has no blob id
        ],
        TRUTH,
    )

    assertDataFrameEqual(
        attachments.attachment_message_ids(truth),
        spark.createDataFrame([("u1", "m1")], "idasuuid string, message_id string"),
    )
    assertDataFrameEqual(
        attachments.attachment_message_id_rows(truth),
        spark.createDataFrame(
            [("u1", "m2", "a1"), ("u1", "m1", "a1")], "attachmentidasuuid string, messageid string, attachmentid string"
        ),
    )
