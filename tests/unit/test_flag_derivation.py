"""applicableFlag derived from the truth: the keywords used in each mailbox, and what counts as consistent (add-only
by default: a mailbox may hold more keywords than its messages use, as James only ever adds to it)."""

from james_consistency.engine.diff import compare, inconsistencies
from james_consistency.projections import projection_spec
from james_consistency.projections.flags import FlagOptions
from pyspark.testing.utils import assertDataFrameEqual

TRUTH = "messageid string, mailboxid string, uid long, modseq long, userflags array<string>"
PROJECTION = "mailboxid string, userflags array<string>"


def test_applicable_flag_is_the_sorted_set_of_keywords_the_messages_of_a_mailbox_use(spark):
    truth = spark.createDataFrame(
        [
            ("m1", "A", 1, 1, ["todo", "$label"]),
            ("m2", "A", 2, 1, ["todo", "urgent"]),
            ("m3", "A", 3, 1, None),
            ("m4", "B", 1, 1, None),  # an empty keyword set is stored as no value
            ("m1", "C", 9, 1, ["$label"]),
        ],
        TRUTH,
    )

    derived = projection_spec("flags", "3.9").derive(truth)

    expected = spark.createDataFrame([("A", ["$label", "todo", "urgent"]), ("C", ["$label"])], PROJECTION)
    assertDataFrameEqual(derived, expected)


def found(spark, spec, expected_rows, actual_rows):
    equivalent = spec.projection.equivalent
    compared = compare(
        spark.createDataFrame(expected_rows, PROJECTION),
        spark.createDataFrame(actual_rows, PROJECTION),
        spec.key,
        spec.value_columns,
        equivalent() if equivalent else None,
    )
    return inconsistencies(compared).select("mailboxid", "kind")


EXPECTED = [("A", ["a", "b"]), ("B", ["a"]), ("C", ["x"]), ("E", ["a"])]
ACTUAL = [("A", ["b", "a", "z"]), ("B", None), ("D", ["q"]), ("E", ["a"])]


def test_by_default_only_missing_keywords_are_fixes_extra_ones_and_unused_sets_stay(spark):
    spec = projection_spec("flags", "3.9")

    assert spec.projection.destructive_kinds == ()
    expected = spark.createDataFrame([("B", "outdated"), ("C", "missing")], "mailboxid string, kind string")
    assertDataFrameEqual(found(spark, spec, EXPECTED, ACTUAL), expected)


def test_removing_unused_keywords_makes_every_difference_a_fix_and_a_destructive_one(spark):
    spec = projection_spec("flags", "3.9", target_options=FlagOptions(remove_unused=True))

    assert spec.projection.destructive_kinds == ("outdated", "orphan")
    expected = spark.createDataFrame(
        [("A", "outdated"), ("B", "outdated"), ("C", "missing"), ("D", "orphan")], "mailboxid string, kind string"
    )
    assertDataFrameEqual(found(spark, spec, EXPECTED, ACTUAL), expected)


def test_the_recheck_is_pointed_at_the_messages_that_carry_keywords(spark):
    truth = spark.createDataFrame(
        [("m1", "A", 1, 1, ["todo"]), ("m2", "A", 2, 1, None), ("m3", "B", 1, 1, ["x", "y"])], TRUTH
    )

    located = projection_spec("flags", "3.9").hints.locate(truth)

    assertDataFrameEqual(
        located, spark.createDataFrame([("A", "m1"), ("B", "m3")], "mailboxid string, messageid string")
    )
