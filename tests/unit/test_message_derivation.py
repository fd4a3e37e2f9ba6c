"""What the message truth (imapUidTable) derives into: messageIdTable, the three per-mailbox indexes, and the truth's
health figures, each on a few rows with the expected rows beside them."""

from james_consistency.projections import projection_spec
from james_consistency.projections.health import MESSAGE_TRUTH_HEALTH
from pyspark.sql import functions as F
from pyspark.testing.utils import assertDataFrameEqual

# imapUidTable 3.5, as the connector reads it (timeuuids as strings), in its own column order.
TRUTH_35 = (
    "messageid string, mailboxid string, uid long, modseq long, flaganswered boolean, flagdeleted boolean, "
    "flagdraft boolean, flagflagged boolean, flagrecent boolean, flagseen boolean, flaguser boolean, "
    "userflags array<string>"
)
PROJECTION_35 = (
    "mailboxid string, uid long, messageid string, modseq long, flaganswered boolean, flagdeleted boolean, "
    "flagdraft boolean, flagflagged boolean, flagrecent boolean, flagseen boolean, flaguser boolean, "
    "userflags array<string>"
)
INDEX_TRUTH = "messageid string, mailboxid string, uid long, modseq long, flagdeleted boolean, flagseen boolean, " + (
    "flagrecent boolean"
)
# (messageid, mailboxid, uid, modseq, \Deleted, \Seen, \Recent); a null flag is a flag not set.
INDEX_ROWS = [
    ("m1", "A", 1, 10, True, True, False),
    ("m2", "A", 2, 11, False, False, True),
    ("m3", "A", 3, 12, None, None, None),
    ("m4", "B", 7, 13, True, False, True),
    ("m1", "B", 8, 14, False, True, False),
]


def test_message_id_table_is_the_truth_row_itself_in_its_own_column_order(spark):
    truth = spark.createDataFrame(
        [
            ("m1", "A", 1, 5, False, True, False, True, False, True, False, ["$label", "todo"]),
            ("m1", "B", 4, 6, None, None, None, None, None, None, None, None),
        ],
        TRUTH_35,
    )

    derived = projection_spec("messages", "3.5").derive(truth)

    expected = spark.createDataFrame(
        [
            ("A", 1, "m1", 5, False, True, False, True, False, True, False, ["$label", "todo"]),
            ("B", 4, "m1", 6, None, None, None, None, None, None, None, None),
        ],
        PROJECTION_35,
    )
    assertDataFrameEqual(derived, expected)


def test_the_39_message_projection_keeps_every_column_of_message_id_table():
    spec = projection_spec("messages", "3.9")

    assert spec.columns[:3] == ("mailboxid", "uid", "messageid")
    assert {"threadid", "internaldate", "save_date", "bodystartoctet", "fullcontentoctets", "headercontent"} <= set(
        spec.value_columns
    ), "an outdated row is rewritten whole (James's own task leaves flags set only in the projection: gap 1)"


def test_message_deleted_holds_the_uids_flagged_deleted(spark):
    truth = spark.createDataFrame(INDEX_ROWS, INDEX_TRUTH)

    derived = projection_spec("deleted", "3.9").derive(truth)

    assertDataFrameEqual(derived, spark.createDataFrame([("A", 1), ("B", 7)], "mailboxid string, uid long"))


def test_first_unseen_holds_every_uid_not_seen_a_null_seen_flag_included(spark):
    truth = spark.createDataFrame(INDEX_ROWS, INDEX_TRUTH)

    derived = projection_spec("unseen", "3.9").derive(truth)

    expected = spark.createDataFrame([("A", 2), ("A", 3), ("B", 7)], "mailboxid string, uid long")
    assertDataFrameEqual(derived, expected)


def test_mailbox_recents_holds_the_uids_flagged_recent_under_james_misspelt_column(spark):
    truth = spark.createDataFrame(INDEX_ROWS, INDEX_TRUTH)

    derived = projection_spec("recent", "3.5").derive(truth)

    expected = spark.createDataFrame([("A", 2), ("B", 7)], "mailboxid string, recent_mesage_uid long")
    assertDataFrameEqual(derived, expected)


def test_an_index_locates_every_truth_row_by_its_key_with_the_message_that_holds_it(spark):
    # messageDeleted has no messageId: the re-check of a candidate (even an orphan index row, whose truth row is no
    # longer flagged) finds the truth through the message the truth holds at that key.
    truth = spark.createDataFrame(INDEX_ROWS, INDEX_TRUTH)

    located = projection_spec("recent", "3.9").hints.locate(truth)

    expected = spark.createDataFrame(
        [("A", 1, "m1"), ("A", 2, "m2"), ("A", 3, "m3"), ("B", 7, "m4"), ("B", 8, "m1")],
        "mailboxid string, recent_mesage_uid long, messageid string",
    )
    assertDataFrameEqual(located, expected)


HEALTH_ROWS = [
    ("m1", "A", 1, 1),  # healthy
    (None, "A", 2, 1),
    ("m3", None, 3, 1),
    ("m4", "A", None, 1),
    ("m5", "A", 0, 1),
    ("m6", "A", 6, None),
    ("m7", "A", 7, -3),
    ("m8", "A", -1, -1),  # two problems, counted once under each
]


def test_the_message_truth_health_counts_each_problem_james_would_never_write(spark):
    truth = spark.createDataFrame(HEALTH_ROWS, "messageid string, mailboxid string, uid long, modseq long")

    figures = truth.agg(*MESSAGE_TRUTH_HEALTH.metrics())

    expected = spark.createDataFrame(
        [(1, 1, 1, 2, 1, 2)],
        "null_messageid long, null_mailboxid long, null_uid long, uid_below_1 long, null_modseq long, "
        "negative_modseq long",
    )
    assertDataFrameEqual(figures, expected)


def test_the_problem_filter_finds_the_rows_behind_a_failed_health_gate(spark):
    truth = spark.createDataFrame(HEALTH_ROWS, "messageid string, mailboxid string, uid long, modseq long")

    problems = truth.where(MESSAGE_TRUTH_HEALTH.problem()).select(F.col("messageid"), F.col("uid"))

    expected = spark.createDataFrame(
        [(None, 2), ("m3", 3), ("m4", None), ("m5", 0), ("m6", 6), ("m7", 7), ("m8", -1)],
        "messageid string, uid long",
    )
    assertDataFrameEqual(problems, expected)


def test_every_message_projection_is_judged_by_the_message_truth_suite():
    suites = {target: projection_spec(target, "3.9").health.suite for target in ("messages", "deleted", "unseen")}
    assert suites == dict.fromkeys(suites, "messages_truth_health")
