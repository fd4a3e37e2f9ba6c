"""What the report says of a failed gate, read from a checkpoint result shaped as Great Expectations 1.x gives it
(run_results -> results -> success, result, expectation_config), built by hand: no Spark, no GX context."""

from datetime import UTC, datetime
from types import SimpleNamespace

from james_consistency import gates


def expectation(success: bool, kind: str, kwargs: dict, details: dict | None, description: str | None = None):
    config = SimpleNamespace(type=kind, kwargs=kwargs, description=description)
    return SimpleNamespace(success=success, result=details, expectation_config=config)


def checkpoint_result(*validations: list) -> SimpleNamespace:
    return SimpleNamespace(
        run_results={
            f"validation-{index}": SimpleNamespace(results=results) for index, results in enumerate(validations)
        }
    )


BETWEEN = "expect_column_values_to_be_between"


def test_each_failed_expectation_says_what_it_judged_and_what_was_observed_passed_ones_are_left_out():
    result = checkpoint_result(
        [
            expectation(True, BETWEEN, {"column": "null_uid"}, {"unexpected_count": 0}),
            expectation(
                False, BETWEEN, {"column": "uid_below_1"}, {"unexpected_count": 1, "partial_unexpected_list": [2]}
            ),
        ],
        [
            expectation(
                False,
                "expect_compound_columns_to_be_unique",
                {"column_list": ["mailboxid", "uid"]},
                {"unexpected_count": 3},
                "one truth row per key",
            ),
            expectation(False, "expect_table_row_count_to_equal", {"value": 0}, {"observed_value": 2}),
        ],
    )

    assert gates.evaluated(result) == 4
    assert gates.failures(result) == [
        {"expectation": BETWEEN, "target": "uid_below_1", "observed": 1, "sample": [2], "description": None},
        {
            "expectation": "expect_compound_columns_to_be_unique",
            "target": ["mailboxid", "uid"],
            "observed": 3,
            "sample": [],
            "description": "one truth row per key",
        },
        {
            "expectation": "expect_table_row_count_to_equal",
            "target": "table",
            "observed": 2,
            "sample": [],
            "description": None,
        },
    ]


def test_a_table_expectation_is_named_by_its_description_and_an_empty_result_observes_nothing():
    result = checkpoint_result(
        [expectation(False, "expect_table_row_count_to_equal", {}, None, "nothing left to repair")]
    )

    assert gates.failures(result) == [
        {
            "expectation": "expect_table_row_count_to_equal",
            "target": "nothing left to repair",
            "observed": None,
            "sample": [],
            "description": "nothing left to repair",
        }
    ]


def test_the_sample_is_at_most_ten_plain_json_values():
    moment = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    unexpected = [moment, *range(11)]
    result = checkpoint_result(
        [
            expectation(
                False, BETWEEN, {"column": "modseq"}, {"unexpected_count": 12, "partial_unexpected_list": unexpected}
            )
        ]
    )

    (failure,) = gates.failures(result)

    assert failure["sample"] == ["2026-01-02 03:04:05+00:00", 0, 1, 2, 3, 4, 5, 6, 7, 8]


def test_a_result_with_every_expectation_met_has_no_failures():
    result = checkpoint_result([expectation(True, BETWEEN, {"column": "null_uid"}, {"unexpected_count": 0})], [])

    assert (gates.evaluated(result), gates.failures(result)) == (1, [])
