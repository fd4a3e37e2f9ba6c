"""The candidates of a run, one per inconsistent key, with every hint the live re-check needs to find the truth
again: from both sides of the diff, or located in the truth for a projection that does not carry them."""

from james_consistency.engine.candidates import SAMPLED, candidates_by_key, with_sample
from james_consistency.engine.diff import compare
from james_consistency.projections import projection_spec
from pyspark.sql import functions as F
from pyspark.testing.utils import assertDataFrameEqual

ATTACHMENTS = "idasuuid string, message_id string"
INDEX_TRUTH = "messageid string, mailboxid string, uid long, modseq long, flagdeleted boolean"


def test_hints_come_from_both_sides_and_a_key_claimed_twice_by_the_truth_is_counted(spark):
    spec = projection_spec("attachments", "3.9")
    expected = spark.createDataFrame([("u1", "m1"), ("u2", "m3"), ("u2", "m4"), ("u3", "m5")], ATTACHMENTS)
    actual = spark.createDataFrame([("u1", "m2"), ("u3", "m5")], ATTACHMENTS)
    found = with_sample(compare(expected, actual, spec.key, spec.value_columns), fraction=0.0, seed=7)

    candidates = candidates_by_key(spec, found, truth=None)

    # The absent side of a missing or orphan row gives a null hint, which the re-check skips.
    seen = F.array_sort(F.array_compact("message_id_seen")).alias("seen")
    assertDataFrameEqual(
        candidates.select("idasuuid", "kind", "expected_rows_at_key", seen),
        spark.createDataFrame(
            [("u1", "outdated", 1, ["m1", "m2"]), ("u2", "missing", 2, ["m3", "m4"])],
            "idasuuid string, kind string, expected_rows_at_key long, seen array<string>",
        ),
    )
    [u1] = candidates.where("idasuuid = 'u1'").select("message_id").collect()
    assert u1["message_id"] == "m1", "the sample identity is the truth's value"
    [u2] = candidates.where("idasuuid = 'u2'").select("message_id").collect()
    assert u2["message_id"] in ("m3", "m4"), "the sample identity is one of the truth rows at the key"


def test_an_index_candidate_finds_its_message_in_the_truth_even_when_it_is_an_orphan(spark):
    spec = projection_spec("deleted", "3.9")
    truth = spark.createDataFrame([("m1", "A", 1, 1, True), ("m2", "A", 2, 1, False)], INDEX_TRUTH)
    projection = spark.createDataFrame([("A", 2), ("A", 9)], "mailboxid string, uid long")
    found = with_sample(compare(spec.derive(truth), projection, spec.key, spec.value_columns), 0.0, seed=7)

    candidates = candidates_by_key(spec, found, truth)

    assertDataFrameEqual(
        candidates,
        spark.createDataFrame(
            [
                ("A", 1, "missing", 1, ["m1"], "m1"),
                ("A", 2, "orphan", 0, ["m2"], "m2"),  # \Deleted cleared: the re-check reads m2's row at uid 2
                ("A", 9, "orphan", 0, [], None),  # no truth at all
            ],
            "mailboxid string, uid long, kind string, expected_rows_at_key long, messageid_seen array<string>, "
            "messageid string",
        ),
    )


def test_a_sample_of_consistent_keys_is_kept_for_the_verify_marked_sampled(spark):
    spec = projection_spec("attachments", "3.9")
    expected = spark.createDataFrame([("u1", "m1"), ("u2", "m2")], ATTACHMENTS)
    actual = spark.createDataFrame([("u1", "m1"), ("u3", "m3")], ATTACHMENTS)
    compared = compare(expected, actual, spec.key, spec.value_columns)

    everything = with_sample(compared, fraction=1.0, seed=7).select("idasuuid", "kind")
    nothing_consistent = with_sample(compared, fraction=0.0, seed=7).select("idasuuid", "kind")

    assertDataFrameEqual(
        everything,
        spark.createDataFrame([("u1", SAMPLED), ("u2", "missing"), ("u3", "orphan")], "idasuuid string, kind string"),
    )
    assertDataFrameEqual(
        nothing_consistent,
        spark.createDataFrame([("u2", "missing"), ("u3", "orphan")], "idasuuid string, kind string"),
    )
