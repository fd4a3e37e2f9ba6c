"""The ring split into contiguous token ranges, and the window a run keeps."""

import time

import pytest
from james_consistency.engine.ranges import MAX_TOKEN, MIN_TOKEN, Window, token_ranges
from james_consistency.errors import OperatorError

TIMEUUID = "d2177dd0-eaa2-11de-a572-001b779c76e3"
# Read from Cassandra 5.0: SELECT token(k) FROM t, for k text 'bob@domain.tld', timeuuid TIMEUUID, bigint 42, and
# token(a, b) for the composite partition key ('x', TIMEUUID).
TEXT_TOKEN, TIMEUUID_TOKEN, BIGINT_TOKEN = -8714135189288432545, 1814919975521329373, 8623491988607824794
COMPOSITE_TOKEN = -2345103672623320321


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


def test_a_partition_key_is_hashed_as_cassandra_serializes_it():
    from james_consistency.engine.ranges import murmur3_token

    assert murmur3_token(("text",), ("bob@domain.tld",)) == TEXT_TOKEN
    assert murmur3_token(("timeuuid",), (TIMEUUID,)) == TIMEUUID_TOKEN
    assert murmur3_token(("bigint",), (42,)) == BIGINT_TOKEN
    assert murmur3_token(("text", "timeuuid"), ("x", TIMEUUID)) == COMPOSITE_TOKEN
    assert murmur3_token(("text",), (None,)) is None


def test_only_the_rows_of_the_finished_ranges_are_kept(spark):
    from james_consistency.engine.ranges import in_ranges, murmur3_token, range_index

    rows = [("bob@domain.tld", 1), ("alice@domain.tld", 2), ("carol@domain.tld", 3), (None, 4)]
    frame = spark.createDataFrame(rows, "username string, n int")
    index_of = {name: range_index(4, murmur3_token(("text",), (name,))) for name, _ in rows if name}
    finished = {index_of["bob@domain.tld"]}

    kept = in_ranges(frame, {"username": "text"}, 4, finished).collect()

    assert sorted(row["username"] for row in kept) == sorted(
        name for name, index in index_of.items() if index in finished
    )
