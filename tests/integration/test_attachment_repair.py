"""Attachment integrity on keyspaces written by James itself (3.8.1 and 3.5.0 harnesses), then damaged.

The expectations are computed here with plain CQL from what James wrote, not with the project's code.
"""

import hashlib
import uuid

import pytest
from james_consistency.engine.run import RunOptions
from james_consistency.jobs.targets import run_target
from james_consistency_kit import james_harness
from support.james_platform import GENERATION_OF_VERSION, james_platform


def harness(version: str):
    reason = f"the James {version} harness is not built (make setup builds james/harness-{version})"
    return pytest.param(version, marks=pytest.mark.skipif(not james_harness.is_built(version), reason=reason))


def as_uuid(attachment_id: str) -> uuid.UUID:
    """Java's UUID.nameUUIDFromBytes, as James's AttachmentId.asUUID()."""
    return uuid.UUID(bytes=hashlib.md5(attachment_id.encode()).digest(), version=3)


def message_table(version: str) -> str:
    return "messagev3" if version == "3.8.1" else "messagev2"


def references(cql, keyspace, version) -> list[tuple[str, str]]:
    """(message id, attachment id) for every attachment a message references."""
    return sorted(
        (str(row.messageid), attachment.id)
        for row in cql.execute(f"SELECT messageid, attachments FROM {keyspace}.{message_table(version)}")
        for attachment in row.attachments or []
    )


def mailboxes_holding(cql, keyspace, message_id: str) -> list[str]:
    rows = cql.execute(f"SELECT mailboxid FROM {keyspace}.imapuidtable WHERE messageid = {message_id}")
    return sorted({str(row.mailboxid) for row in rows})


def attachment_rows(cql, keyspace) -> dict:
    return {row.idasuuid: row for row in cql.execute(f"SELECT * FROM {keyspace}.attachmentv2")}


def message_ids_of_attachments(cql, keyspace, version) -> dict:
    if version == "3.8.1":
        return {key: row.message_id for key, row in attachment_rows(cql, keyspace).items()}
    rows = cql.execute(f"SELECT attachmentidasuuid, messageid, attachmentid FROM {keyspace}.attachmentmessageid")
    return sorted((row.attachmentidasuuid, row.messageid, row.attachmentid) for row in rows)


def message_count(cql, keyspace, version) -> int:
    return len(list(cql.execute(f"SELECT messageid FROM {keyspace}.{message_table(version)}")))


@pytest.mark.parametrize("version", [harness("3.8.1"), harness("3.5.0")])
def test_missing_references_are_rewritten_and_lost_attachments_reported(
    cql, cassandra_settings, spark, new_keyspace, version
):
    keyspace = new_keyspace(f"attach{version.replace('.', '')}")
    james_platform(cql, cassandra_settings, keyspace, GENERATION_OF_VERSION[version])
    referenced = references(cql, keyspace, version)
    assert len(referenced) >= 4, referenced
    james_wrote = message_ids_of_attachments(cql, keyspace, version)

    # The references of two attachments are lost (a row written before AttachmentMessageIdMigration in 3.8.1, a
    # failed attachmentMessageId write in 3.5.0), the attachmentV2 row of a third is gone, a fourth has no blob id.
    (ref_message, ref_attachment), (other_message, other_attachment), (lost_message, lost_attachment) = referenced[:3]
    blobless_message, blobless_attachment = referenced[3]
    for message_id, attachment_id in ((ref_message, ref_attachment), (other_message, other_attachment)):
        if version == "3.8.1":
            cql.execute(f"DELETE message_id FROM {keyspace}.attachmentv2 WHERE idasuuid = {as_uuid(attachment_id)}")
        else:
            cql.execute(
                f"DELETE FROM {keyspace}.attachmentmessageid "
                f"WHERE attachmentidasuuid = {as_uuid(attachment_id)} AND messageid = '{message_id}'"
            )
    cql.execute(f"DELETE FROM {keyspace}.attachmentv2 WHERE idasuuid = {as_uuid(lost_attachment)}")
    cql.execute(f"DELETE blobid FROM {keyspace}.attachmentv2 WHERE idasuuid = {as_uuid(blobless_attachment)}")
    broken = message_ids_of_attachments(cql, keyspace, version)
    messages_before = message_count(cql, keyspace, version)
    attachments_before = set(attachment_rows(cql, keyspace))

    check = run_target(spark, cassandra_settings, RunOptions("attachments", keyspace, mode="check"))
    fixable_kind = "outdated" if version == "3.8.1" else "missing"
    assert check["inconsistencies"][fixable_kind] == 2, check["inconsistencies"]
    assert check["status"] == "PARTIAL"
    assert message_ids_of_attachments(cql, keyspace, version) == broken, "a dry run wrote something"

    repair = run_target(spark, cassandra_settings, RunOptions("attachments", keyspace, mode="repair"))
    fixed_field = "updatedAttachmentMessageIds" if version == "3.8.1" else "addedAttachmentMessageIdEntries"
    assert repair[fixed_field] == 2
    assert repair["status"] == "PARTIAL"
    assert repair["unfixableAttachmentReferences"] == 2
    reported = sorted(
        (error["kind"], error["messageId"], error["attachmentId"], tuple(error["mailboxIds"]))
        for error in repair["errors"]
    )
    assert reported == sorted(
        [
            (
                "missing-attachment-row",
                lost_message,
                lost_attachment,
                tuple(mailboxes_holding(cql, keyspace, lost_message)),
            ),
            (
                "attachment-without-blob-id",
                blobless_message,
                blobless_attachment,
                tuple(mailboxes_holding(cql, keyspace, blobless_message)),
            ),
        ]
    )
    assert all(error["mailboxIds"] for error in repair["errors"]), "every message is held by a mailbox"

    # The references are back as James wrote them; nothing was deleted.
    after = message_ids_of_attachments(cql, keyspace, version)
    if version == "3.8.1":
        expected = {key: value for key, value in james_wrote.items() if key != as_uuid(lost_attachment)}
        assert after == expected
        assert after[as_uuid(ref_attachment)] == uuid.UUID(ref_message)
    else:
        assert after == james_wrote
    assert message_count(cql, keyspace, version) == messages_before
    assert set(attachment_rows(cql, keyspace)) == attachments_before

    again = run_target(spark, cassandra_settings, RunOptions("attachments", keyspace, mode="repair"))
    assert sum(again["inconsistencies"].values()) == 0
    assert again["unfixableAttachmentReferences"] == 2
    assert message_ids_of_attachments(cql, keyspace, version) == after


@pytest.mark.end_to_end
@pytest.mark.parametrize("version", [harness("3.8.1")])
def test_attachments_james_deleted_under_a_kept_message_are_reported_and_nothing_is_deleted(
    cql, cassandra_settings, spark, new_keyspace, version
):
    """James's DeleteMessageListener deletes a message's attachments before its messageV3 row: when that last delete
    fails, the row stays and references attachments that are gone (held by no mailbox any more)."""
    keyspace = new_keyspace("attachlost")
    on_keyspace = ["--keyspace", keyspace]
    james_harness.run(
        version,
        "seed",
        [*on_keyspace, "--users", "1", "--mailboxes-per-user", "1", "--messages-per-mailbox", "4"],
        cassandra_settings,
    )
    manifest = james_harness.run(
        version,
        "break",
        [*on_keyspace, "--kind", "attachment-row-missing", "--rate", "1", "--operations", "3"],
        cassandra_settings,
    )
    lost = sorted((entry["messageId"], entry["attachmentId"]) for entry in manifest["inconsistencies"])
    assert lost, manifest
    messages_before = message_count(cql, keyspace, version)
    attachments_before = attachment_rows(cql, keyspace)

    report = run_target(spark, cassandra_settings, RunOptions("attachments", keyspace, mode="repair"))

    assert report["status"] == "PARTIAL"
    assert sum(report["inconsistencies"].values()) == 0
    assert report["unfixableAttachmentReferences"] == len(lost)
    assert sorted((error["messageId"], error["attachmentId"]) for error in report["errors"]) == lost
    assert {error["kind"] for error in report["errors"]} == {"missing-attachment-row"}
    for error in report["errors"]:
        assert error["mailboxIds"] == mailboxes_holding(cql, keyspace, error["messageId"]) == []
    assert message_count(cql, keyspace, version) == messages_before
    assert attachment_rows(cql, keyspace) == attachments_before
