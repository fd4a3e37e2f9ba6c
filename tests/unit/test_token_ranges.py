"""The ring split into contiguous token ranges, and the window a run keeps."""

import time

import pytest
from james_consistency.engine.projection_scan import serialized_once
from james_consistency.engine.ranges import MAX_TOKEN, MIN_TOKEN, Window, token_ranges
from james_consistency.errors import OperatorError


@pytest.mark.parametrize("count", [1, 2, 7, 64])
def test_ranges_cover_the_ring_without_gap_or_overlap(count):
    ranges = token_ranges(count)
    assert len(ranges) == count
    assert ranges[0][0] == MIN_TOKEN and ranges[-1][1] == MAX_TOKEN
    assert all(previous[1] == following[0] for previous, following in zip(ranges, ranges[1:], strict=False))
    assert all(start < end for start, end in ranges)


def test_no_range_is_not_a_split():
    with pytest.raises(OperatorError, match="ranges must be 1 or more"):
        token_ranges(0)


def test_a_window_ends_at_its_time_or_its_range_budget():
    assert not Window().ended(scanned=10_000)
    assert Window(until=time.time() - 1).ended()
    assert not Window(until=time.time() + 60).ended()
    assert Window(max_ranges=4).ended(scanned=4) and not Window(max_ranges=4).ended(scanned=3)


def test_until_takes_an_iso_time_or_the_next_time_of_day_in_utc():
    from datetime import UTC, datetime

    from james_consistency.engine.ranges import parse_until

    now = datetime(2026, 11, 23, 22, 0, tzinfo=UTC)
    assert parse_until("2026-11-24T05:30:00+00:00") == datetime(2026, 11, 24, 5, 30, tzinfo=UTC).timestamp()
    assert parse_until("2026-11-24T05:30") == datetime(2026, 11, 24, 5, 30, tzinfo=UTC).timestamp()
    assert parse_until("05:30", now) == datetime(2026, 11, 24, 5, 30, tzinfo=UTC).timestamp()
    assert parse_until("23:15", now) == datetime(2026, 11, 23, 23, 15, tzinfo=UTC).timestamp()
    with pytest.raises(OperatorError, match="neither an ISO 8601 time nor HH:MM"):
        parse_until("tonight")


@pytest.mark.parametrize("count", [1, 2, 8])
def test_a_token_belongs_to_the_range_whose_end_it_does_not_pass(count):
    from james_consistency.engine.ranges import range_index

    for index, (start, end) in enumerate(token_ranges(count)):
        assert range_index(count, start + 1) == index
        assert range_index(count, end) == index, "ranges are (start, end]"
    assert range_index(count, MIN_TOKEN + 1) == 0 and range_index(count, MAX_TOKEN) == count - 1


@pytest.mark.parametrize(
    ("cql_type", "hashed"),
    [
        ("timeuuid", True),
        ("bigint", True),
        ("boolean", True),
        ("text", True),
        ("timestamp", True),
        ("set<text>", True),  # sorted by Cassandra, and stored empty as no value, as null is
        ("frozen<set<text>>", False),  # an empty frozen set is a value, unlike null
        ("list<text>", False),  # the diff compares lists sorted
        ("map<text, int>", False),
        ("double", False),  # 0.0 and -0.0 are equal values of two serializations
        ("decimal", False),  # 1.0 and 1.00 too
        (None, False),  # a column the table lacks
    ],
)
def test_only_types_serialized_one_way_per_value_are_digested_as_serialized(cql_type, hashed):
    assert serialized_once(cql_type) is hashed
