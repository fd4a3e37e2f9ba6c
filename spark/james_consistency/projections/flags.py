"""applicableFlag: the keywords (user flags) used in a mailbox, one set per mailbox, rebuilt from imapUidTable.

James only ever adds keywords to it (IMAP clients offer them back to the user), so by default the repair only adds
the missing ones; removing keywords no message uses any more is an option. Fixes are set-element updates
(`userflags + {...}`, `userflags - {...}`), never a rewrite of the whole set: a keyword a user adds meanwhile stays.
"""

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from james_consistency.engine import before_images
from james_consistency.engine.apply import ApplyContext, to_cql_value
from james_consistency.engine.diff import ACTUAL_PREFIX, EXPECTED_PREFIX
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

TRUTH_COLUMNS = ("messageid", "mailboxid", "uid", "modseq", "userflags")


def used_keywords(truth: DataFrame) -> DataFrame:
    """One row per mailbox using at least one keyword: (mailboxid, userflags sorted)."""
    return (
        truth.select("mailboxid", F.explode("userflags").alias("flag"))
        .groupBy("mailboxid")
        .agg(F.array_sort(F.collect_set("flag")).alias("userflags"))
    )


def missing_none() -> Column:
    """Add-only: the projection is right when it holds every keyword in use (more is allowed)."""
    expected = F.coalesce(F.col(EXPECTED_PREFIX + "userflags"), F.array().cast("array<string>"))
    actual = F.coalesce(F.col(ACTUAL_PREFIX + "userflags"), F.array().cast("array<string>"))
    return F.size(F.array_except(expected, actual)) == 0


def _flags(row: dict | None) -> set[str]:
    return set((row or {}).get("userflags") or ())


class FlagSetWriter:
    """Adds (and, when allowed, removes) single keywords of a mailbox's set, stamped before the re-read."""

    undo_rule = before_images.SET

    def __init__(self, session, context: ApplyContext, spec: ProjectionSpec, remove_unused: bool):
        table = f"{context.keyspace}.applicableflag"
        self.session = session
        self.remove_unused = remove_unused
        self.select = prepared(
            session, f"SELECT mailboxid, userflags FROM {table} WHERE mailboxid = ?", context.projection_consistency
        )
        self.add = prepared(
            session,
            f"UPDATE {table} USING TIMESTAMP ? SET userflags = userflags + ? WHERE mailboxid = ?",
            context.write_consistency,
        )
        self.subtract = prepared(
            session,
            f"UPDATE {table} USING TIMESTAMP ? SET userflags = userflags - ? WHERE mailboxid = ?",
            context.write_consistency,
        )

    def read(self, key: dict):
        return one((yield Query(self.select, [key["mailboxid"]])))

    def consistent(self, expected: dict | None, current: dict | None) -> bool:
        if self.remove_unused:
            return _flags(expected) == _flags(current)
        return _flags(expected) <= _flags(current)

    def written(self, expected: dict, current: dict | None) -> dict:
        """The mailbox's keywords once the missing ones are added (and the unused ones taken out, when allowed)."""
        flags = _flags(current) | _flags(expected)
        if self.remove_unused:
            flags &= _flags(expected)
        return {**expected, "userflags": flags or None}

    def write(self, expected: dict, timestamp: int, current: dict | None):
        mailbox = expected["mailboxid"]
        missing = _flags(expected) - _flags(current)
        if missing:
            yield Query(self.add, [timestamp, missing, mailbox])
        unused = _flags(current) - _flags(expected)
        if self.remove_unused and unused:
            yield Query(self.subtract, [timestamp, unused, mailbox])

    def remove(self, key: dict, timestamp: int, current: dict | None):
        if self.remove_unused and _flags(current):
            yield Query(self.subtract, [timestamp, _flags(current), key["mailboxid"]])


def live_keywords(session, context: ApplyContext, mailbox, message_ids, include_projection: bool):
    """Steps (see engine.live): the keywords the truth rows of these messages in the mailbox carry now. With
    `include_projection`, also those of messageIdTable's partition (a message added after the scan): removal must err on
    the side of keeping."""
    select = prepared(
        session,
        f"SELECT userflags FROM {context.keyspace}.imapuidtable WHERE messageid = ? AND mailboxid = ?",
        context.message_truth_consistency,
    )
    used: set[str] = set()
    for rows in (yield Together(tuple(Query(select, [message_id, mailbox]) for message_id in message_ids))):
        for row in rows:
            used |= set(row["userflags"] or ())
    if include_projection:
        partition = prepared(
            session,
            f"SELECT userflags FROM {context.keyspace}.messageidtable WHERE mailboxid = ?",
            context.projection_consistency,
        )
        for row in (yield Query(partition, [mailbox])):
            used |= set(row["userflags"] or ())
    return used


@dataclass(frozen=True)
class FlagOptions:
    """The flags target's own options (RunOptions.target_options): also remove keywords no message of the mailbox uses
    any more (James itself only ever adds them)."""

    remove_unused: bool = False


def applicable_flag_projection(generation: str, remove_unused: bool = False) -> ProjectionSpec:
    def recheck(session, context: ApplyContext, key: dict, candidate, current) -> dict | None:
        hinted = {to_cql_value(value, "timeuuid") for value in candidate["messageid_seen"] if value is not None}
        used = yield from live_keywords(session, context, key["mailboxid"], hinted, include_projection=remove_unused)
        return {"mailboxid": key["mailboxid"], "userflags": used} if used else None

    def locate(truth: DataFrame) -> DataFrame:
        return truth.where(F.size("userflags") > 0).select("mailboxid", "messageid")

    def writer(session, context, spec):
        return FlagSetWriter(session, context, spec, remove_unused)

    return ProjectionSpec(
        name="flags",
        truth=Truth("imapUidTable", TRUTH_COLUMNS),
        projection=Projection(
            "applicableFlag",
            key=("mailboxid",),
            columns=("mailboxid", "userflags"),
            cql_types={"mailboxid": "timeuuid"},
            equivalent=None if remove_unused else missing_none,
            # Adding keywords takes nothing away; only their removal is judged by the plan-safety gate.
            destructive_kinds=("outdated", "orphan") if remove_unused else (),
        ),
        derive=used_keywords,
        recheck=recheck,
        report_names=ReportNames(
            processed_truth="processedImapUidEntries",
            processed_projection="processedMailboxEntries",
            added="addedApplicableFlagEntries",
            updated="updatedApplicableFlagEntries",
            removed="removedApplicableFlagEntries",
        ),
        health=MESSAGE_TRUTH_HEALTH,
        hints=CandidateHints(("messageid",), locate=locate),
        sample=Sample(("mailboxid",), {"mailboxid": "mailboxId"}),
        writing=Writing(writer),
        finish_report=lambda report: report.update(removeUnusedFlags=remove_unused),
    )
