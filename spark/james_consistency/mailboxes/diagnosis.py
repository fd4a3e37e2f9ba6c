"""Diagnosis of mailbox <-> path registration, as pure DataFrame functions over the two full scans.

Inputs (see `mailbox_entries`, `path_entries`, `message_references`):
    mailboxes  mailboxId, namespace, user, name           one row per `mailbox` row
    paths      namespace, user, name, mailboxId, written   one row per path registration (written = WRITETIME)
    messages   mailboxId, messages                         imapUidTable rows per mailbox id (the message truth)

Output: one finding per inconsistency, with a `kind`:

    orphan-mailbox             a mailbox row whose id no path registers (its own path is free)
    orphan-path                a path registration whose id has no mailbox row (the id has no other path)
    one-id-two-paths           a mailbox id registered under two paths or more (a rename half-applied)
    two-ids-one-path           two mailbox rows or more claiming one path (conflict: merged only when asked)
    path-points-to-another-id  a mailbox row whose path is registered to another id, its own id registered nowhere
                               (a ghost: reported)
    mailbox-path-outdated      a mailbox row whose id is registered under one other path while its own is free
    mailbox-registered-elsewhere  a mailbox row whose path is registered to another id while its own id is
                               registered under one other path (realigned onto it)

The path table is the truth, as in James 3.9.x and master: every kind but the two conflicts has one right answer
(see `policy`). A conflict is left only where James leaves one: a ghost row squatting a path another id owns, its own
id registered nowhere (alone, or beside the owner's row: two ids on one path, which a merge resolves).

Each mailbox row and path row is judged once: a path claimed twice is reported as two-ids-one-path only, an id
registered twice as one-id-two-paths only. Findings carry what the policy and the approver need: the registered id
at the path, the id's registrations (with their write times), the claimants with their message counts and
registrations, and the message count of the id (for an orphan path: do messages still reference it?).
"""

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

ORPHAN_MAILBOX = "orphan-mailbox"
ORPHAN_PATH = "orphan-path"
ONE_ID_TWO_PATHS = "one-id-two-paths"
TWO_IDS_ONE_PATH = "two-ids-one-path"
PATH_POINTS_TO_ANOTHER_ID = "path-points-to-another-id"
MAILBOX_PATH_OUTDATED = "mailbox-path-outdated"
MAILBOX_REGISTERED_ELSEWHERE = "mailbox-registered-elsewhere"

KINDS = (
    ORPHAN_MAILBOX,
    ORPHAN_PATH,
    ONE_ID_TWO_PATHS,
    TWO_IDS_ONE_PATH,
    PATH_POINTS_TO_ANOTHER_ID,
    MAILBOX_PATH_OUTDATED,
    MAILBOX_REGISTERED_ELSEWHERE,
)
# Conflicts are never resolved by a guess: reported for an admin (two ids under one path: merged only when asked).
CONFLICTS = (TWO_IDS_ONE_PATH, PATH_POINTS_TO_ANOTHER_ID)
FIXABLE = tuple(kind for kind in KINDS if kind not in CONFLICTS)

PATH = ("namespace", "user", "name")
PATH_STRUCT = "struct<namespace: string, user: string, name: string, written: bigint>"
CLAIMANT_STRUCT = "struct<mailboxId: string, messages: bigint, registrations: bigint>"


def path_string(namespace: Column, user: Column, name: Column) -> Column:
    """James's MailboxPath.asString(): `#private:bob@domain.tld:INBOX`."""
    return F.concat_ws(":", namespace, user, name)


# ---- the scans ------------------------------------------------------------------------------------------------


def mailbox_entries(raw: DataFrame) -> DataFrame:
    """The `mailbox` table (id, mailboxbase, name) as mailboxId, namespace, user, name."""
    return raw.select(
        F.col("id").cast("string").alias("mailboxId"),
        F.col("mailboxbase.namespace").alias("namespace"),
        F.col("mailboxbase.user").alias("user"),
        F.col("name"),
    )


def path_entries(raw: DataFrame) -> DataFrame:
    """The path table (namespace, user, mailboxname, mailboxid, written) as namespace, user, name, mailboxId,
    written."""
    return raw.select(
        "namespace",
        "user",
        F.col("mailboxname").alias("name"),
        F.col("mailboxid").cast("string").alias("mailboxId"),
        F.col("written").cast("long").alias("written"),
    )


def message_references(truth: DataFrame) -> DataFrame:
    """imapUidTable rows per mailbox id: the messages that still reference it."""
    return truth.groupBy(F.col("mailboxid").cast("string").alias("mailboxId")).agg(F.count(F.lit(1)).alias("messages"))


def malformed_mailboxes(mailboxes: DataFrame) -> Column:
    return F.col("namespace").isNull() | F.col("user").isNull() | F.col("name").isNull()


def malformed_paths(paths: DataFrame) -> Column:
    return F.col("mailboxId").isNull()


def health_metrics(mailboxes: DataFrame, paths: DataFrame) -> tuple[list[Column], list[Column]]:
    """Aggregates for the health gate: rows the diagnosis cannot judge (left alone, but they stop a repair)."""
    return (
        [
            F.count(F.lit(1)).alias("mailbox_rows"),
            F.count(F.when(malformed_mailboxes(mailboxes), 1)).alias("malformed_mailbox_rows"),
        ],
        [
            F.count(F.lit(1)).alias("path_rows"),
            F.count(F.when(malformed_paths(paths), 1)).alias("malformed_path_rows"),
        ],
    )


# ---- the diagnosis --------------------------------------------------------------------------------------------


def registrations(paths: DataFrame) -> DataFrame:
    """Per mailbox id: how many paths register it, and which (sorted, with their write times)."""
    return paths.groupBy("mailboxId").agg(
        F.count(F.lit(1)).alias("registrations"),
        F.sort_array(F.collect_list(F.struct(*PATH, "written"))).alias("paths"),
    )


def claims(mailboxes: DataFrame) -> DataFrame:
    """Per path: how many mailbox rows claim it, and which ids."""
    return mailboxes.groupBy(*PATH).agg(
        F.count(F.lit(1)).alias("claims"), F.sort_array(F.collect_list("mailboxId")).alias("claimantIds")
    )


def registered_elsewhere(mailboxes: DataFrame, at_path: DataFrame, registered: DataFrame) -> DataFrame:
    """Mailbox rows whose path is registered to another id while their own id is registered under exactly one other
    path: the row is stale and is realigned onto that registration, as James master's same-mailbox resolution does
    (`realignStaleProjection`), without any merge.

    As in James, whether another row claims that registration does not matter: two ids swapped between two paths
    (row a at A, row b at B, A -> b, B -> a) are both realigned, each onto its registration; a row claiming the
    registration whose own id is registered nowhere is left with the realigned row on one path, two ids on one path
    for the next pass (a ghost, merged with `merge`)."""
    return (
        mailboxes.join(at_path, list(PATH))
        .where(F.col("registeredId") != F.col("mailboxId"))
        .join(registered.where(F.col("registrations") == 1), "mailboxId")
        .select(
            F.lit(MAILBOX_REGISTERED_ELSEWHERE).alias("kind"),
            "mailboxId",
            *PATH,
            "registeredId",
            "registrations",
            "paths",
        )
    )


def diagnose(mailboxes: DataFrame, paths: DataFrame, messages: DataFrame) -> DataFrame:
    """Every inconsistency between the mailbox rows and the path registrations (see the module's kinds)."""
    mailboxes = mailboxes.where(~malformed_mailboxes(mailboxes))
    paths = paths.where(~malformed_paths(paths))
    registered = registrations(paths)
    at_path = registered_ids(paths)
    row_path = row_paths(mailboxes)
    realignable = registered_elsewhere(mailboxes, at_path, registered)
    # A realignable row is judged as that kind only: it no longer claims the path it names (so the registered
    # owner left alone there is consistent, not one of two ids on one path).
    mailboxes = mailboxes.join(realignable.select("mailboxId"), "mailboxId", "left_anti")
    claimed = claims(mailboxes)
    findings = (
        mailbox_findings(mailboxes, at_path, claimed, registered)
        .unionByName(realignable, allowMissingColumns=True)
        .unionByName(orphan_paths(paths, row_path, registered), allowMissingColumns=True)
        .unionByName(ids_under_two_paths(registered, row_path), allowMissingColumns=True)
        .unionByName(two_ids(claimed, at_path, registered, messages), allowMissingColumns=True)
    )
    return with_context(findings, row_path, messages)


def registered_ids(paths: DataFrame) -> DataFrame:
    """Per path: the id registered there, as registeredId."""
    return paths.select(*PATH, F.col("mailboxId").alias("registeredId"))


def row_paths(mailboxes: DataFrame) -> DataFrame:
    """Per mailbox id: the path its mailbox row names, as the struct mailboxRowPath."""
    return mailboxes.select("mailboxId", F.struct(*PATH).alias("mailboxRowPath"))


def _registration_count() -> Column:
    """An id's registrations, 0 for an id no path registers."""
    return F.coalesce(F.col("registrations"), F.lit(0).cast("long"))


def mailbox_findings(mailboxes: DataFrame, at_path: DataFrame, claimed: DataFrame, registered: DataFrame) -> DataFrame:
    """The kinds judged from a mailbox row: orphan-mailbox, mailbox-path-outdated and path-points-to-another-id. A row
    on a path two rows claim, or whose id two paths register, is left to two-ids-one-path and one-id-two-paths."""
    judged = (
        mailboxes.join(at_path, list(PATH), "left")
        .join(claimed.select(*PATH, "claims"), list(PATH), "left")
        .join(registered, "mailboxId", "left")
        .withColumn("registrations", _registration_count())
    )
    mailbox_kind = (
        F.when((F.col("claims") > 1) | (F.col("registrations") > 1), F.lit(None))
        .when(F.col("registeredId").isNull() & (F.col("registrations") == 0), F.lit(ORPHAN_MAILBOX))
        .when(F.col("registeredId").isNull(), F.lit(MAILBOX_PATH_OUTDATED))
        .when(F.col("registeredId") != F.col("mailboxId"), F.lit(PATH_POINTS_TO_ANOTHER_ID))
    )
    return (
        judged.withColumn("kind", mailbox_kind)
        .where(F.col("kind").isNotNull())
        .select("kind", "mailboxId", *PATH, "registeredId", "registrations", "paths")
    )


def orphan_paths(paths: DataFrame, row_path: DataFrame, registered: DataFrame) -> DataFrame:
    """Path registrations whose id has no mailbox row and no other registration (an id registered twice is
    one-id-two-paths)."""
    return (
        paths.join(row_path, "mailboxId", "left_anti")
        .join(registered.select("mailboxId", "registrations"), "mailboxId")
        .where(F.col("registrations") == 1)
        .select(
            F.lit(ORPHAN_PATH).alias("kind"),
            "mailboxId",
            *PATH,
            F.col("mailboxId").alias("registeredId"),
            "registrations",
            F.array(F.struct(*PATH, "written")).alias("paths"),
        )
    )


def ids_under_two_paths(registered: DataFrame, row_path: DataFrame) -> DataFrame:
    """Ids registered under two paths or more, at the path their mailbox row names (none when the row is lost)."""
    return (
        registered.where(F.col("registrations") > 1)
        .join(row_path, "mailboxId", "left")
        .select(
            F.lit(ONE_ID_TWO_PATHS).alias("kind"),
            "mailboxId",
            *(F.col("mailboxRowPath")[part].alias(part) for part in PATH),
            F.col("mailboxId").alias("registeredId"),
            "registrations",
            "paths",
            "mailboxRowPath",
        )
    )


def claimants(claimed: DataFrame, registered: DataFrame, messages: DataFrame) -> DataFrame:
    """Per path two mailbox rows or more claim: the claimants (sorted), each with its message count and
    registrations."""
    return (
        claimed.where(F.col("claims") > 1)
        .select(*PATH, F.explode("claimantIds").alias("claimantId"))
        .join(messages.withColumnRenamed("mailboxId", "claimantId"), "claimantId", "left")
        .join(registered.select(F.col("mailboxId").alias("claimantId"), "registrations"), "claimantId", "left")
        .groupBy(*PATH)
        .agg(
            F.sort_array(
                F.collect_list(
                    F.struct(
                        F.col("claimantId").alias("mailboxId"),
                        F.coalesce(F.col("messages"), F.lit(0).cast("long")).alias("messages"),
                        _registration_count().alias("registrations"),
                    )
                )
            ).alias("claimants")
        )
    )


def two_ids(claimed: DataFrame, at_path: DataFrame, registered: DataFrame, messages: DataFrame) -> DataFrame:
    """Paths two mailbox rows or more claim, with their claimants, under the id the path registers (if any)."""
    return (
        claimants(claimed, registered, messages)
        .join(at_path, list(PATH), "left")
        .select(
            F.lit(TWO_IDS_ONE_PATH).alias("kind"),
            F.col("registeredId").alias("mailboxId"),
            *PATH,
            "registeredId",
            "claimants",
        )
    )


def with_context(findings: DataFrame, row_path: DataFrame, messages: DataFrame) -> DataFrame:
    """The findings in their final shape: the path as James writes it, the path the id's mailbox row names, the
    message count of the id, and empty lists rather than nulls."""
    with_rows = findings.join(
        row_path.withColumnRenamed("mailboxRowPath", "rowPathOfId"), "mailboxId", "left"
    ).withColumn("mailboxRowPath", F.coalesce(F.col("mailboxRowPath"), F.col("rowPathOfId")))
    return with_rows.join(messages, "mailboxId", "left").select(
        "kind",
        "mailboxId",
        *PATH,
        path_string(*(F.col(part) for part in PATH)).alias("mailboxPath"),
        "registeredId",
        "mailboxRowPath",
        F.coalesce(F.col("paths"), F.array().cast(f"array<{PATH_STRUCT}>")).alias("paths"),
        F.coalesce(F.col("claimants"), F.array().cast(f"array<{CLAIMANT_STRUCT}>")).alias("claimants"),
        F.coalesce(F.col("messages"), F.lit(0).cast("long")).alias("messages"),
    )


def kind_counts(findings: DataFrame) -> list[Column]:
    """Aggregates: the number of findings of each kind (for an Observation or a one-row agg)."""
    return [F.count(F.when(F.col("kind") == kind, 1)).alias(kind) for kind in KINDS]
