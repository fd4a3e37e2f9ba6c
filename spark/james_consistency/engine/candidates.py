"""The candidates of a run: one row per projection key the scan found inconsistent (and a random sample of
consistent keys, kept for the verify), with what the live re-check needs to find the truth again."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from james_consistency.engine.diff import ACTUAL_PREFIX, EXPECTED_PREFIX, PRESENCE
from james_consistency.engine.spec import ProjectionSpec

# The kind of a consistent key kept as a sample: re-checked by a verify that reuses the check's scan.
SAMPLED = "sampled"
LOCATED = "located_"


def with_sample(found: DataFrame, fraction: float, seed: int) -> DataFrame:
    """The diff's inconsistent rows, and a random `fraction` of its consistent rows marked SAMPLED (in the same pass:
    a verify that reuses the scan re-checks both, so it sees more than the keys the repair touched)."""
    sampled = F.col("kind").isNull() & (F.rand(seed) < F.lit(fraction))
    return found.where(F.col("kind").isNotNull() | sampled).withColumn(
        "kind", F.coalesce(F.col("kind"), F.lit(SAMPLED))
    )


def _kind() -> "F.Column":
    """A key's kind: an inconsistency's when it has one, SAMPLED only for a key with nothing else."""
    return F.coalesce(F.first(F.when(F.col("kind") != SAMPLED, F.col("kind")), ignorenulls=True), F.lit(SAMPLED))


def candidates_by_key(spec: ProjectionSpec, found: DataFrame, truth: DataFrame) -> DataFrame:
    """One candidate per projection key, carrying its kind, every value of the scan's hint columns seen at that key
    (arrays: a broken truth may hold two rows for one key, and the re-check must see both), and the sample identity.

    Hints come from both sides of the diff, or, for a projection without them, from the spec's locator over every
    truth row at the key (grouped per key before the join: a per-mailbox projection has many truth rows per key)."""
    locate = spec.hints.locate if spec.hints else None
    if locate is None:
        return _with_hints_from_the_diff(spec, found)
    return _with_located_hints(spec, found, locate(truth))


def _expected_rows() -> "F.Column":
    """How many truth rows derive a row at the key (more than one: a broken truth)."""
    return F.count(F.col(EXPECTED_PREFIX + PRESENCE)).alias("expected_rows_at_key")


def _with_hints_from_the_diff(spec: ProjectionSpec, found: DataFrame) -> DataFrame:
    hints = [
        F.array_distinct(
            F.flatten(F.collect_list(F.array(F.col(EXPECTED_PREFIX + name), F.col(ACTUAL_PREFIX + name))))
        ).alias(name + "_seen")
        for name in spec.hint_columns
    ]
    identity = [
        F.first(F.coalesce(F.col(EXPECTED_PREFIX + name), F.col(ACTUAL_PREFIX + name)), ignorenulls=True).alias(name)
        for name in spec.sample.columns
        if name not in spec.key
    ]
    return found.groupBy(*spec.key).agg(_kind().alias("kind"), _expected_rows(), *hints, *identity)


def _with_located_hints(spec: ProjectionSpec, found: DataFrame, located: DataFrame) -> DataFrame:
    per_key = found.groupBy(*spec.key).agg(_kind().alias("kind"), _expected_rows())
    located = located.select(*spec.key, *(F.col(name).alias(LOCATED + name) for name in spec.hint_columns))
    empty = F.array().cast("array<string>")
    return (
        per_key.join(located, on=list(spec.key), how="left")
        .groupBy(*spec.key)
        .agg(
            _kind().alias("kind"),
            F.first("expected_rows_at_key").alias("expected_rows_at_key"),
            *(
                F.coalesce(F.array_distinct(F.collect_list(LOCATED + name)), empty).alias(name + "_seen")
                for name in spec.hint_columns
            ),
            *(
                F.first(LOCATED + name, ignorenulls=True).alias(name)
                for name in spec.sample.columns
                if name not in spec.key
            ),
        )
    )
