"""The diff: pure DataFrame -> DataFrame functions, unit-testable on tiny local DataFrames."""

from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

MISSING = "missing"
OUTDATED = "outdated"
ORPHAN = "orphan"
KINDS = (MISSING, OUTDATED, ORPHAN)

EXPECTED_PREFIX = "expected_"
ACTUAL_PREFIX = "actual_"
PRESENCE = "__present"
DIGEST = "__digest"
# Values whose equality a hash cannot stand for: Spark refuses to hash maps, 0.0 = -0.0 with different hashes, and a
# struct's hash skips its null fields (a UDT whose null moved to another field would hash alike).
UNHASHED_TYPES = ("map<", "struct<", "float", "double")


def normalize_empty_collections(frame: DataFrame) -> DataFrame:
    """Cassandra stores an empty set as no value: compare an empty array and null as the same thing."""
    columns = []
    for name, data_type in frame.dtypes:
        if data_type.startswith("array"):
            columns.append(F.when(F.size(F.col(name)) > 0, F.array_sort(F.col(name))).alias(name))
        else:
            columns.append(F.col(name))
    return frame.select(*columns)


def _prefixed(frame: DataFrame, prefix: str, key: tuple[str, ...]) -> DataFrame:
    return frame.select(
        *(F.col(name) for name in key),
        *(F.col(name).alias(prefix + name) for name in frame.columns if name not in key),
        F.lit(True).alias(prefix + PRESENCE),
    )


def rows_differ(value_columns: tuple[str, ...]) -> Column:
    """True when any value column differs, nulls compared as values."""
    if not value_columns:
        return F.lit(False)
    differences = [~F.col(EXPECTED_PREFIX + name).eqNullSafe(F.col(ACTUAL_PREFIX + name)) for name in value_columns]
    return reduce(lambda left, right: left | right, differences)


def digested(
    frame: DataFrame, key: tuple[str, ...], value_columns: tuple[str, ...], carried: tuple[str, ...] = ()
) -> tuple[DataFrame, tuple[str, ...]]:
    """The rows as the diff needs them, narrower: the key, the `carried` value columns (what the candidates and the
    report read), and one 64-bit hash (`__digest`, xxhash64) standing for every value column. Returns the frame and
    the value columns to compare it by: the digest, and any column a hash cannot stand for, kept as it is.

    The join then moves a key and a few columns per row instead of whole rows. Each column's hash is preceded by
    whether it is null (Spark's hash skips nulls, so (null, x) and (x, null) would otherwise hash alike); two rows
    that differ share a digest with a probability of 2^-64. Maps, structs and floating values are compared as they
    are (UNHASHED_TYPES).
    """
    frame = normalize_empty_collections(frame)
    as_is = _unhashed(frame, value_columns)
    hashed = [name for name in value_columns if name not in as_is]
    if not hashed:
        return frame.select(*key, *dict.fromkeys((*carried, *as_is))), as_is
    parts = [part for name in hashed for part in (F.col(name).isNull(), F.col(name))]
    narrow = frame.select(*key, *dict.fromkeys((*carried, *as_is)), F.xxhash64(*parts).alias(DIGEST))
    return narrow, (DIGEST, *as_is)


def compared_by(narrow: DataFrame, value_columns: tuple[str, ...]) -> tuple[str, ...]:
    """The columns to compare rows `digested` already narrowed by: what `digested` returned with them."""
    as_is = _unhashed(narrow, value_columns)
    return (DIGEST, *as_is) if DIGEST in narrow.columns else as_is


def _unhashed(frame: DataFrame, value_columns: tuple[str, ...]) -> tuple[str, ...]:
    types = dict(frame.dtypes)
    return tuple(
        name for name in value_columns if name in types and any(word in types[name] for word in UNHASHED_TYPES)
    )


def compare(
    expected: DataFrame,
    actual: DataFrame,
    key: tuple[str, ...],
    value_columns: tuple[str, ...],
    equivalent: Column | None = None,
) -> DataFrame:
    """Full outer join of expected and actual projection rows on the projection key, with a `kind` column:

    - missing: an expected row with no actual row at its key;
    - outdated: both exist and differ in any value column (the fix rewrites the whole row);
    - orphan: an actual row with no expected row at its key (the fix deletes it);
    - null: both exist and are equal, or `equivalent` (a condition over the prefixed columns) holds.
    Columns: the key, `expected_<column>` and `actual_<column>` for every value column, `kind`.
    """
    joined = _prefixed(normalize_empty_collections(expected), EXPECTED_PREFIX, key).join(
        _prefixed(normalize_empty_collections(actual), ACTUAL_PREFIX, key), on=list(key), how="full_outer"
    )
    has_expected = F.col(EXPECTED_PREFIX + PRESENCE).isNotNull()
    has_actual = F.col(ACTUAL_PREFIX + PRESENCE).isNotNull()
    kind = (
        F.when(has_expected & ~has_actual, F.lit(MISSING))
        .when(~has_expected & has_actual, F.lit(ORPHAN))
        .when(rows_differ(value_columns), F.lit(OUTDATED))
    )
    if equivalent is not None:
        kind = F.when(~F.coalesce(equivalent, F.lit(False)), kind)
    return joined.withColumn("kind", kind)


def inconsistencies(compared: DataFrame) -> DataFrame:
    """Only the rows that need a fix."""
    return compared.where(F.col("kind").isNotNull())


def plan_metrics(compared: DataFrame) -> list[Column]:
    """Aggregate expressions counting, in the same pass as the diff, what was processed and found."""
    has_expected = F.col(EXPECTED_PREFIX + PRESENCE).isNotNull()
    has_actual = F.col(ACTUAL_PREFIX + PRESENCE).isNotNull()
    return [
        F.count(F.when(has_expected, 1)).alias("expected_rows"),
        F.count(F.when(has_actual, 1)).alias("projection_rows"),
        *(F.count(F.when(F.col("kind") == kind, 1)).alias(kind) for kind in KINDS),
    ]
