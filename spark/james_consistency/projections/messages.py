"""messageIdTable, the projection of imapUidTable (the source of truth, ADR-0022) keyed by (mailboxId, uid).

The expected projection row is the truth row itself: every column equal, flags and keywords included, but flagRecent
where James does not handle IMAP Recent (JAMES_HANDLE_RECENT=0): it then never reads that column, so a difference
there is no inconsistency, and the repair neither compares nor writes it.
"""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from james_consistency.cassandra.schema import table
from james_consistency.engine.apply import ApplyContext, to_cql_value
from james_consistency.engine.joined import LIVE_PROJECTION, LIVE_TRUTH, LiveTables, driver_row, live_struct
from james_consistency.engine.live import Query, Together, one, prepared
from james_consistency.engine.spec import (
    CandidateHints,
    Projection,
    ProjectionSpec,
    ReportNames,
    Sample,
    Truth,
    Writing,
)
from james_consistency.projections.health import MESSAGE_TRUTH_HEALTH

REPORT_NAMES = ReportNames(
    processed_truth="processedImapUidEntries",
    processed_projection="processedMessageIdEntries",
    added="addedMessageIdEntries",
    updated="updatedMessageIdEntries",
    removed="removedMessageIdEntries",
)


class AmbiguousTruth(Exception):
    """Two messages of the truth claim the same (mailboxId, uid): nothing is written for that key."""


def message_columns(generation: str, handle_recent: bool = True) -> tuple[str, ...]:
    """messageIdTable's columns the repair compares and writes (flagRecent only where James handles Recent)."""
    columns = tuple(name.lower() for name, _ in table(generation, "messageIdTable").columns)
    return columns if handle_recent else tuple(name for name in columns if name != "flagrecent")


def message_projection(generation: str, handle_recent: bool = True) -> ProjectionSpec:
    columns = message_columns(generation, handle_recent)
    cql_types = {name.lower(): cql_type for name, cql_type in table(generation, "messageIdTable").columns}

    def derive(truth: DataFrame) -> DataFrame:
        return truth.select(*columns)

    def recheck(session, context: ApplyContext, key: dict, candidate, current) -> dict | None:
        if context.joined_reads_from is not None:
            truth_rows = [driver_row(row, cql_types) for row in candidate[LIVE_TRUTH] or ()]
            return single_truth(truth_rows, key["mailboxid"], key["uid"])
        return (
            yield from live_truth_at(
                session, context, key["mailboxid"], key["uid"], candidate["messageid_seen"], columns, projected=current
            )
        )

    def joined_truth(candidates: DataFrame, live: LiveTables) -> DataFrame:
        return with_live_truth(candidates, live, columns, cql_types)

    return ProjectionSpec(
        name="messages",
        truth=Truth("imapUidTable", columns, partition_local=True),
        projection=Projection("messageIdTable", key=("mailboxid", "uid"), columns=columns, cql_types=cql_types),
        derive=derive,
        recheck=recheck,
        report_names=REPORT_NAMES,
        health=MESSAGE_TRUTH_HEALTH,
        hints=CandidateHints(("messageid",)),
        sample=Sample(("mailboxid", "messageid", "uid"), {"mailboxid": "mailboxId", "messageid": "messageId"}),
        writing=Writing(joined_truth=joined_truth),
        mirrored_truth=True,
    )


def with_live_truth(candidates: DataFrame, live: LiveTables, columns, cql_types) -> DataFrame:
    """The candidates (with LIVE_PROJECTION), each with the imapUidTable rows now at its (mailboxId, uid)
    (LIVE_TRUTH), found through the same messageIds as `live_truth_at`: the ones the scan saw there and the one
    messageIdTable holds now. A key is never read with a null messageId (an invalid request)."""
    prefix = "live_t_"
    message_ids = F.array_distinct(
        F.filter(
            F.concat(
                F.coalesce("messageid_seen", F.array().cast("array<string>")), F.array(LIVE_PROJECTION + ".messageid")
            ),
            lambda message_id: message_id.isNotNull(),
        )
    )
    keys = candidates.select("mailboxid", "uid", F.explode(message_ids).alias("live_messageid"))
    truth = live.truth("imapuidtable", prefix)
    on = [
        keys["live_messageid"] == truth[prefix + "messageid"],
        keys["mailboxid"] == truth[prefix + "mailboxid"],
        keys["uid"] == truth[prefix + "uid"],
    ]
    found = (
        keys.join(truth, on, "inner")
        .groupBy("mailboxid", "uid")
        .agg(F.collect_list(live_struct(prefix, columns, cql_types, "messageid")).alias(LIVE_TRUTH))
    )
    return candidates.join(found, ["mailboxid", "uid"], "left")


NOT_READ = object()


def live_truth_at(
    session, context: ApplyContext, mailbox, uid, message_ids_seen, columns, projected=NOT_READ
) -> dict | None:
    """Steps (see engine.live): the imapUidTable row at (mailboxId, uid) now, found through every messageId that may
    hold it: the ones the scan saw there and the one messageIdTable holds now (a message added after the scan).
    `projected` is the messageIdTable row at the key when the caller has just read it live (None: there is none),
    saving that read. AmbiguousTruth when several messages claim the uid."""
    current_projection = projected
    if projected is NOT_READ:
        select_projection = prepared(
            session,
            f"SELECT messageid FROM {context.keyspace}.messageidtable WHERE mailboxid = ? AND uid = ?",
            context.projection_consistency,
        )
        current_projection = one((yield Query(select_projection, [mailbox, uid])))
    message_ids = {to_cql_value(value, "timeuuid") for value in message_ids_seen if value is not None}
    # A projection row may carry no messageId: James's flag update is an UPDATE of the flag columns, which creates a
    # partial row where the row was missing (an add that failed after the truth write). Querying the truth with a
    # null messageId is an invalid request: every re-check of that key failed, and the repair never converged.
    if current_projection is not None and current_projection["messageid"] is not None:
        message_ids.add(current_projection["messageid"])
    select_truth = prepared(
        session,
        f"SELECT {', '.join(columns)} FROM {context.keyspace}.imapuidtable "
        "WHERE messageid = ? AND mailboxid = ? AND uid = ?",
        context.message_truth_consistency,
    )
    found = yield Together(tuple(Query(select_truth, [message_id, mailbox, uid]) for message_id in message_ids))
    return single_truth([row for rows in found for row in rows], mailbox, uid)


def single_truth(truth_rows: list[dict], mailbox, uid) -> dict | None:
    if len(truth_rows) > 1:
        raise AmbiguousTruth(
            f"messages {sorted(str(row['messageid']) for row in truth_rows)} all claim uid {uid} in mailbox {mailbox}"
        )
    return truth_rows[0] if truth_rows else None
