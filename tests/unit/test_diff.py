"""The diff as a pure DataFrame function, on tiny local DataFrames."""

from james_consistency.engine.diff import compare, inconsistencies, plan_metrics

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
