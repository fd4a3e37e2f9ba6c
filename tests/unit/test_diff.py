"""The diff as a pure DataFrame function, on tiny local DataFrames."""

from james_consistency.engine.diff import (
    ACTUAL_PREFIX,
    DIGEST,
    EXPECTED_PREFIX,
    compare,
    digested,
    inconsistencies,
    normalize_empty_collections,
    plan_metrics,
)
from james_consistency.engine.projection_scan import diff_with_truth
from james_consistency.projections import projection_spec
from pyspark.sql import functions as F
from pyspark.testing.utils import assertDataFrameEqual

KEY = ("mailboxid", "uid")
VALUES = ("messageid", "flagseen", "userflags")
SCHEMA = "mailboxid string, uid long, messageid string, flagseen boolean, userflags array<string>"


def kinds(spark, expected_rows, actual_rows):
    expected = spark.createDataFrame(expected_rows, SCHEMA)
    actual = spark.createDataFrame(actual_rows, SCHEMA)
    found = inconsistencies(compare(expected, actual, KEY, VALUES))
    return {(row["mailboxid"], row["uid"]): row["kind"] for row in found.collect()}


def test_each_kind_is_classified(spark):
    expected = [("m", 1, "a", True, None), ("m", 2, "b", False, ["x"]), ("m", 3, "c", True, None)]
    actual = [("m", 2, "b", False, ["x", "only-in-projection"]), ("m", 3, "c", True, None), ("m", 9, "c", True, None)]

    assert kinds(spark, expected, actual) == {("m", 1): "missing", ("m", 2): "outdated", ("m", 9): "orphan"}


def test_a_difference_in_any_column_is_outdated(spark):
    expected = [("m", 1, "a", True, None), ("m", 2, "b", True, None)]
    actual = [("m", 1, "a", None, None), ("m", 2, "other", True, None)]

    assert kinds(spark, expected, actual) == {("m", 1): "outdated", ("m", 2): "outdated"}


def test_empty_and_absent_keyword_sets_are_equal_and_order_does_not_matter(spark):
    expected = [("m", 1, "a", True, []), ("m", 2, "a", True, ["b", "a"])]
    actual = [("m", 1, "a", True, None), ("m", 2, "a", True, ["a", "b"])]

    assert kinds(spark, expected, actual) == {}


def test_plan_metrics_count_processed_rows_and_kinds(spark):
    expected = spark.createDataFrame([("m", 1, "a", True, None), ("m", 2, "b", True, None)], SCHEMA)
    actual = spark.createDataFrame([("m", 2, "b", False, None), ("m", 3, "c", True, None)], SCHEMA)
    compared = compare(expected, actual, KEY, VALUES)

    metrics = compared.agg(*plan_metrics(compared)).first().asDict()

    assert metrics == {"expected_rows": 2, "projection_rows": 2, "missing": 1, "outdated": 1, "orphan": 1}


# ---- the whole compared frame, with the expected rows beside the input ------------------------------------------

COMPARED = (
    "mailboxid string, uid long, expected_messageid string, expected_flagseen boolean, "
    "expected_userflags array<string>, actual_messageid string, actual_flagseen boolean, "
    "actual_userflags array<string>, kind string"
)
DOCUMENTED_COLUMNS = [
    *KEY,
    *(EXPECTED_PREFIX + name for name in VALUES),
    *(ACTUAL_PREFIX + name for name in VALUES),
    "kind",
]


def test_compare_pairs_both_sides_of_each_key_and_names_the_fix(spark):
    expected = spark.createDataFrame([("m", 1, "a", True, ["b", "a"]), ("m", 2, "b", False, [])], SCHEMA)
    actual = spark.createDataFrame([("m", 2, "b", True, None), ("m", 3, "c", None, ["x"])], SCHEMA)

    compared = compare(expected, actual, KEY, VALUES).select(*DOCUMENTED_COLUMNS)

    assertDataFrameEqual(
        compared,
        spark.createDataFrame(
            [
                ("m", 1, "a", True, ["a", "b"], None, None, None, "missing"),
                ("m", 2, "b", False, None, "b", True, None, "outdated"),
                ("m", 3, None, None, None, "c", None, ["x"], "orphan"),
            ],
            COMPARED,
        ),
    )


def test_equivalent_rows_need_no_fix_and_an_undecidable_equivalence_is_no_equivalence(spark):
    # e.g. counters: an absent value reads as zero. Equivalent here: the same message id, whatever the flags.
    expected = spark.createDataFrame(
        [("m", 1, "a", True, None), ("m", 2, "b", True, None), ("m", 3, None, True, None)], SCHEMA
    )
    actual = spark.createDataFrame(
        [("m", 1, "a", False, None), ("m", 2, "other", True, None), ("m", 3, None, False, None)], SCHEMA
    )
    same_message = F.col(EXPECTED_PREFIX + "messageid") == F.col(ACTUAL_PREFIX + "messageid")

    found = inconsistencies(compare(expected, actual, KEY, VALUES, same_message)).select("uid", "kind")

    assertDataFrameEqual(found, spark.createDataFrame([(2, "outdated"), (3, "outdated")], "uid long, kind string"))


def test_a_projection_of_keys_only_has_missing_and_orphan_rows_never_outdated_ones(spark):
    schema = "mailboxid string, uid long"
    expected = spark.createDataFrame([("m", 1), ("m", 2)], schema)
    actual = spark.createDataFrame([("m", 2), ("m", 3)], schema)

    found = inconsistencies(compare(expected, actual, KEY, ())).select(*KEY, "kind")

    assertDataFrameEqual(
        found,
        spark.createDataFrame([("m", 1, "missing"), ("m", 3, "orphan")], "mailboxid string, uid long, kind string"),
    )


def test_sets_are_compared_sorted_and_an_empty_set_as_no_value(spark):
    frame = spark.createDataFrame([("m", 1, "a", True, ["b", "a"]), ("m", 2, "a", True, [])], SCHEMA)

    assertDataFrameEqual(
        normalize_empty_collections(frame),
        spark.createDataFrame([("m", 1, "a", True, ["a", "b"]), ("m", 2, "a", True, None)], SCHEMA),
    )


def test_plan_metrics_count_equivalent_rows_as_processed_not_as_fixes(spark):
    expected = spark.createDataFrame([("m", 1, "a", True, None), ("m", 2, "b", True, None)], SCHEMA)
    actual = spark.createDataFrame([("m", 1, "a", False, None), ("m", 3, "c", True, None)], SCHEMA)
    everything_equivalent = F.lit(True)
    compared = compare(expected, actual, KEY, VALUES, everything_equivalent)

    assertDataFrameEqual(
        compared.agg(*plan_metrics(compared)),
        spark.createDataFrame(
            [(2, 2, 0, 0, 0)], "expected_rows long, projection_rows long, missing long, outdated long, orphan long"
        ),
    )


def test_a_scan_diffs_what_the_truth_derives_with_the_projection_under_the_specs_equivalence(spark):
    spec = projection_spec("counters", "3.9")
    truth = spark.createDataFrame(
        [("A", "m1", False), ("A", "m2", True), ("B", None, None)],  # B: a mailbox without message
        "mailboxid string, messageid string, flagseen boolean",
    )
    projection = spark.createDataFrame([("A", 2, 0), ("C", 0, 0)], "mailboxid string, count long, unseen long")

    found = inconsistencies(diff_with_truth(spec, truth, projection))

    # B's absent counter and C's zero one are equivalent to none: only A's unseen count is off.
    assertDataFrameEqual(found.select("mailboxid", "kind"), [("A", "outdated")])


# ---- the digest: the join moves a key, the carried columns and one hash ------------------------------------------

FLAGS = "mailboxid string, uid long, messageid string, flagseen boolean, flagdeleted boolean, userflags array<string>"
FLAG_VALUES = ("messageid", "flagseen", "flagdeleted", "userflags")


def digest_kinds(spark, pairs):
    """Each (expected row, actual row) at its own key, compared through their digests: the kind found per uid."""
    expected = spark.createDataFrame([row for row, _ in pairs], FLAGS)
    actual = spark.createDataFrame([row for _, row in pairs], FLAGS)
    narrow_expected, compared_by = digested(expected, KEY, FLAG_VALUES, carried=("messageid",))
    narrow_actual, _ = digested(actual, KEY, FLAG_VALUES, carried=("messageid",))
    found = compare(narrow_expected, narrow_actual, KEY, compared_by)
    return {row["uid"]: row["kind"] for row in found.collect()}


def test_a_digest_finds_every_difference_the_values_would(spark):
    pairs = [
        (("m", 1, "a", True, False, ["x"]), ("m", 1, "a", True, False, ["x"])),  # equal
        (("m", 2, "a", True, None, None), ("m", 2, "a", None, True, None)),  # a null moved to the other flag
        (("m", 3, "a", False, None, None), ("m", 3, "a", None, None, None)),  # false is not null
        (("m", 4, "a", True, False, ["x"]), ("m", 4, "b", True, False, ["x"])),  # a carried column
        (("m", 5, "a", True, False, ["x", "y"]), ("m", 5, "a", True, False, ["x"])),  # a keyword more
        (("m", 6, "a", True, False, ["y", "x"]), ("m", 6, "a", True, False, ["x", "y"])),  # a set, in another order
        (("m", 7, "a", True, False, []), ("m", 7, "a", True, False, None)),  # Cassandra's empty set is no value
    ]

    assert digest_kinds(spark, pairs) == {
        1: None,
        2: "outdated",
        3: "outdated",
        4: "outdated",
        5: "outdated",
        6: None,
        7: None,
    }


def test_a_digest_carries_the_columns_the_candidates_read_and_keeps_unhashable_values_as_they_are(spark):
    frame = spark.createDataFrame(
        [("m", 1, "a", 0.5, {"k": 1}, (None, "bob"))],
        "mailboxid string, uid long, messageid string, ratio double, extra map<string,int>, "
        "base struct<namespace:string,user:string>",
    )

    narrow, compared_by = digested(frame, KEY, ("messageid", "ratio", "extra", "base"), carried=("messageid",))

    assert narrow.columns == ["mailboxid", "uid", "messageid", "ratio", "extra", "base", DIGEST]
    assert compared_by == (DIGEST, "ratio", "extra", "base"), (
        "a map cannot be hashed, 0.0 = -0.0 hash apart, a struct's hash skips its nulls"
    )


def test_a_projection_of_keys_only_is_compared_by_its_keys(spark):
    frame = spark.createDataFrame([("m", 1)], "mailboxid string, uid long")

    narrow, compared_by = digested(frame, KEY, ())

    assert (narrow.columns, compared_by) == (["mailboxid", "uid"], ())


def test_the_scan_diff_of_messages_goes_through_the_digest_and_keeps_what_the_candidates_need(spark):
    spec = projection_spec("messages", "3.9")
    columns = spec.columns
    row = {name: None for name in columns} | {"mailboxid": "A", "messageid": "m1", "modseq": 1, "flagseen": True}
    truth = spark.createDataFrame(
        [tuple({**row, "uid": uid}[name] for name in columns) for uid in (1, 2)], _message_schema(spec)
    )
    projection = spark.createDataFrame(
        [tuple({**row, "uid": 1, "flagseen": False}[name] for name in columns)], _message_schema(spec)
    )

    compared = diff_with_truth(spec, truth, projection)

    assert {row["uid"]: row["kind"] for row in compared.collect()} == {1: "outdated", 2: "missing"}
    assert {EXPECTED_PREFIX + "messageid", ACTUAL_PREFIX + "messageid"} <= set(compared.columns)
    assert EXPECTED_PREFIX + "flagseen" not in compared.columns, "values travel as their digest"


def _message_schema(spec) -> str:
    from james_consistency.cassandra.schema import table

    spark_types = {
        "timeuuid": "string",
        "bigint": "long",
        "boolean": "boolean",
        "set<text>": "array<string>",
        "timestamp": "timestamp",
        "int": "int",
        "text": "string",
    }
    types = {name.lower(): cql for name, cql in table("3.9", "messageIdTable").columns}
    return ", ".join(f"{name} {spark_types[types[name]]}" for name in spec.columns)
