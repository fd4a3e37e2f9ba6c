"""What a before-image keeps of each value the driver reads, and that the undo binds it back as the driver read it:
an image that changed a value on the way would write back something the row never held."""

import json
import uuid
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from cassandra.util import SortedSet
from james_consistency.engine.apply import comparable
from james_consistency.engine.before_images import encoded, row_json
from james_consistency.undo.tables import decoded

MESSAGE_ID = uuid.UUID("d0ff8f90-e6a4-11f0-802a-02000000002a")


@pytest.mark.parametrize(
    ("value", "kept"),
    [
        (None, None),
        (True, True),
        (False, False),
        (0, 0),
        (986, 986),
        (1.5, 1.5),
        ("INBOX", "INBOX"),
        (MESSAGE_ID, "d0ff8f90-e6a4-11f0-802a-02000000002a"),
        (Decimal("1.10"), "1.10"),
        (datetime(2026, 4, 15, 21, 54, 5, 123_000), "2026-04-15T21:54:05.123000+00:00"),
        (datetime(2026, 4, 15, 21, 54, 5, tzinfo=UTC), "2026-04-15T21:54:05+00:00"),
        (date(2026, 4, 15), "2026-04-15"),
        (b"\x00\xff", "0x00ff"),
        ({"work", "$Forwarded"}, ["$Forwarded", "work"]),
        (SortedSet(["b", "a"]), ["a", "b"]),
        (set(), None),
        ([1, 2], [1, 2]),
        ({"alice": "lr"}, {"alice": "lr"}),
    ],
)
def test_each_driver_value_is_kept_as_json(value, kept):
    # The JSON text, not the values: True == 1 and False == 0 in Python, but not in what the undo reads back.
    assert json.dumps(encoded(value)) == json.dumps(kept)


def test_booleans_stay_booleans_and_not_numbers():
    assert row_json({"seen": True, "uid": 1, "recent": False}) == '{"recent": false, "seen": true, "uid": 1}'


@pytest.mark.parametrize(
    ("value", "cql_type"),
    [
        (MESSAGE_ID, "timeuuid"),
        (datetime(2026, 4, 15, 21, 54, 5, 123_000, tzinfo=UTC), "timestamp"),
        (date(2026, 4, 15), "date"),
        (986, "bigint"),
        (True, "boolean"),
        ("INBOX", "text"),
    ],
)
def test_the_undo_binds_a_kept_value_as_the_driver_read_it(value, cql_type):
    bound = decoded(json.loads(json.dumps(encoded(value))), cql_type)

    assert (bound, type(bound)) == (value, type(value))


def test_rows_with_the_same_contents_compare_equal_whatever_their_set_types():
    columns = ("uid", "userflags", "messageid", "seen")
    read = {"uid": 1, "userflags": SortedSet(["a", "b"]), "messageid": MESSAGE_ID, "seen": True}
    joined = {"uid": 1, "userflags": {"b", "a"}, "messageid": MESSAGE_ID, "seen": True}

    assert comparable(read, columns) == comparable(joined, columns) == (1, ("a", "b"), MESSAGE_ID, True)
    assert comparable({**joined, "userflags": set()}, columns) == comparable({**joined, "userflags": None}, columns)
    assert comparable({**joined, "seen": False}, columns) != comparable(joined, columns)
