"""ACL projections (James never built this repair: ADR-0021 / ADR-0044's corrective task).

Truth: the `newAcl` of each mailbox's last `acl-updated` event in eventStore (3.9), or the `acl` JSON (3.5).
Projections: aclv2 (3.9: one row per entry key, rights as a set of letters) and UserMailboxACL (positive entries of
individual users only, rights in canonical order). A mailbox whose truth cannot be read (unparsable JSON, unknown
event type) is reported and its projection rows are left untouched: it is never read as an empty ACL, which is
what James does and what would delete every right derived from it.
"""

import json

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from james_consistency.engine.apply import ApplyContext
from james_consistency.engine.live import prepared, with_retries
from james_consistency.engine.spec import ProjectionSpec, ReportNames
from james_consistency.errors import NotApplicable
from james_consistency.projections.health import (
    acl_event_problems,
    any_problem,
    counted_problems,
    legacy_acl_problems,
)

RIGHTS_ORDER = "aeiklprstwx"
SPECIAL_NAMES = ("owner", "anyone", "authenticated")
EVENT_SCHEMA = "type string, aclDiff struct<newAcl: struct<entries: map<string, string>>>"
LEGACY_SCHEMA = "entries map<string, string>"


class MalformedTruth(Exception):
    """The ACL truth of a mailbox cannot be read: its projection rows are left as they are."""


# ---- the truth, in Spark --------------------------------------------------------------------------------------


def acl_state(truth: DataFrame, generation: str) -> DataFrame:
    """(mailbox, entries map, problem) per mailbox of the truth; `problem` is null when the ACL was read.

    Whether an ACL can be read is decided by `acl_problem`, the very parser the re-check uses: Spark's `from_json`
    is lenient (a number, a list or null as rights, trailing garbage, single quotes all pass), and a mailbox the
    scan read but the re-check cannot would reach the plan as deletions and fail row by row instead of being
    reported and left alone. `from_json` only extracts the entries of the ACLs the parser accepted.
    """
    if generation == "3.9":
        last = truth.groupBy("aggregateid").agg(F.max_by("event", "eventid").alias("event"))
        parsed = F.from_json(F.col("event"), EVENT_SCHEMA)
        entries = parsed["aclDiff"]["newAcl"]["entries"]
        return last.select(
            F.col("aggregateid").alias("mailbox"),
            entries.alias("entries"),
            _problem_39(F.col("event")).alias("problem"),
        )
    parsed = F.from_json(F.col("acl"), LEGACY_SCHEMA)
    return truth.select(
        F.col("id").alias("mailbox"), parsed["entries"].alias("entries"), _problem_35(F.col("acl")).alias("problem")
    )


def acl_problem(text: str | None, generation: str) -> str | None:
    """Why one ACL truth (event or legacy JSON) cannot be read, or None when `parse_acl` reads it."""
    try:
        parse_acl(text, generation)
    except MalformedTruth as problem:
        return str(problem)
    return None


_problem_39 = F.udf(lambda text: acl_problem(text, "3.9"), StringType())
_problem_35 = F.udf(lambda text: acl_problem(text, "3.5"), StringType())


def _entries(truth: DataFrame, generation: str) -> DataFrame:
    readable = acl_state(truth, generation).where(F.col("problem").isNull())
    return readable.select("mailbox", F.explode("entries").alias("key", "rights"))


def canonical_rights(rights: Column) -> Column:
    """The rights letters present, in James's order (`lrs`, never `srl`)."""
    return F.concat(*(F.when(rights.contains(letter), F.lit(letter)).otherwise(F.lit("")) for letter in RIGHTS_ORDER))


def is_user_entry(key: Column) -> Column:
    return ~key.startswith("-") & ~key.startswith("$") & ~key.isin(*SPECIAL_NAMES)


def unreadable(truth: DataFrame, generation: str) -> DataFrame:
    return acl_state(truth, generation).where(F.col("problem").isNotNull()).select("mailbox", "problem")


# ---- the truth, live (re-check in the executors) ---------------------------------------------------------------


def parse_acl(text: str | None, generation: str) -> dict[str, str]:
    """The entries of one mailbox's ACL truth; MalformedTruth when it cannot be read."""
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
    if not isinstance(entries, dict) or not all(isinstance(v, str) for v in entries.values()):
        raise MalformedTruth("ACL without readable entries")
    return entries


def _member(document, name: str):
    """`document[name]` when `document` is a JSON object (hostile JSON puts lists and strings anywhere)."""
    return document.get(name) if isinstance(document, dict) else None


def live_entries(session, context: ApplyContext, generation: str, mailbox) -> dict[str, str]:
    """The mailbox's ACL as the truth holds it now (no event or no row: no entries)."""
    if generation == "3.9":
        statement = prepared(
            session,
            f"SELECT event FROM {context.keyspace}.eventstore WHERE aggregateid = ? ORDER BY eventid DESC LIMIT 1",
            context.truth_consistency,
        )
        row = with_retries(lambda: session.execute(statement, [str(mailbox)]).one())
        return parse_acl(row["event"], generation) if row else {}
    statement = prepared(session, f"SELECT acl FROM {context.keyspace}.acl WHERE id = ?", context.truth_consistency)
    row = with_retries(lambda: session.execute(statement, [mailbox]).one())
    return parse_acl(row["acl"], generation) if row else {}


def _canonical(rights: str) -> str:
    return "".join(letter for letter in RIGHTS_ORDER if letter in rights)


def _user_entry(key: str) -> bool:
    return not key.startswith(("-", "$")) and key not in SPECIAL_NAMES


# ---- the two projections ----------------------------------------------------------------------------------------


def _truth_table(generation: str) -> tuple[str, tuple[str, ...]]:
    if generation == "3.9":
        return "eventStore", ("aggregateid", "eventid", "event")
    return "acl", ("id", "acl")


def user_mailbox_acl_projection(generation: str) -> ProjectionSpec:
    truth_table, truth_columns = _truth_table(generation)

    def derive(truth: DataFrame) -> DataFrame:
        entries = _entries(truth, generation).where(is_user_entry(F.col("key")))
        return entries.select(
            F.col("key").alias("username"),
            F.col("mailbox").cast("string").alias("mailboxid"),
            canonical_rights(F.col("rights")).alias("rights"),
        ).where(F.col("rights") != "")

    def recheck(session, context: ApplyContext, key: dict, candidate) -> dict | None:
        entries = live_entries(session, context, generation, key["mailboxid"])
        rights = _canonical(entries.get(key["username"], "")) if _user_entry(key["username"]) else ""
        return {"username": key["username"], "mailboxid": key["mailboxid"], "rights": rights} if rights else None

    return ProjectionSpec(
        name="acl",
        truth_table=truth_table,
        projection_table="UserMailboxACL",
        key=("username", "mailboxid"),
        columns=("username", "mailboxid", "rights"),
        truth_columns=truth_columns,
        derive=derive,
        recheck=recheck,
        report_names=_report_names("UserMailboxACL"),
        sample_columns=("username", "mailboxid"),
        sample_names={"username": "userName", "mailboxid": "mailboxId"},
        cql_types={"username": "text", "mailboxid": "timeuuid"},
        truth_suite=f"acl_truth_health_{generation.replace('.', '')}",
        unreadable=lambda truth: unreadable(truth, generation),
        scope_column="mailboxid",
        **_truth_health(generation),
    )


def aclv2_projection(generation: str) -> ProjectionSpec:
    if generation != "3.9":
        raise NotApplicable("aclv2 exists only in the James 3.9 schema (3.5 keeps ACLs in `acl` JSON)")
    truth_table, truth_columns = _truth_table(generation)

    def derive(truth: DataFrame) -> DataFrame:
        letters = F.array_sort(F.array_distinct(F.filter(F.split(F.col("rights"), ""), lambda c: c != "")))
        return _entries(truth, generation).select(
            F.col("mailbox").cast("string").alias("id"), "key", letters.alias("rights")
        )

    def recheck(session, context: ApplyContext, key: dict, candidate) -> dict | None:
        rights = live_entries(session, context, generation, key["id"]).get(key["key"])
        return {"id": key["id"], "key": key["key"], "rights": set(rights)} if rights is not None else None

    return ProjectionSpec(
        name="aclv2",
        truth_table=truth_table,
        projection_table="aclv2",
        key=("id", "key"),
        columns=("id", "key", "rights"),
        truth_columns=truth_columns,
        derive=derive,
        recheck=recheck,
        report_names=_report_names("Aclv2"),
        sample_columns=("id", "key"),
        sample_names={"id": "mailboxId", "key": "entryKey"},
        cql_types={"id": "timeuuid", "key": "text"},
        truth_suite="acl_truth_health_39",
        unreadable=lambda truth: unreadable(truth, generation),
        scope_column="id",
        **_truth_health(generation),
    )


def _report_names(table: str) -> ReportNames:
    return ReportNames(
        processed_truth="processedMailboxAclEntries",
        processed_projection=f"processed{table}Entries",
        added=f"added{table}Entries",
        updated=f"updated{table}Entries",
        removed=f"removed{table}Entries",
    )


def _truth_health(generation: str) -> dict:
    problems = acl_event_problems if generation == "3.9" else legacy_acl_problems
    return {
        "truth_metrics": lambda: counted_problems(problems()),
        "truth_problem": lambda: any_problem(problems()),
    }
