"""Rows read by the connector's direct join reach the re-check as the Python driver would have read them: a repair
then compares and writes them exactly as rows read by a statement."""

import uuid
from datetime import datetime

from james_consistency.engine.joined import driver_row
from pyspark.sql import Row

TYPES = {
    "messageid": "timeuuid",
    "uid": "bigint",
    "userflags": "set<text>",
    "internaldate": "timestamp",
    "flagseen": "boolean",
}


def test_a_joined_row_has_the_driver_types():
    row = Row(
        messageid="d0ff8f90-e6a4-11f0-802a-02000000002a",
        uid=986,
        userflags=["work", "$Forwarded"],
        internaldate=1_776_290_045_123_000,  # microseconds since the epoch, as live_struct carries timestamps
        flagseen=True,
    )

    assert driver_row(row, TYPES) == {
        "messageid": uuid.UUID("d0ff8f90-e6a4-11f0-802a-02000000002a"),
        "uid": 986,
        "userflags": {"work", "$Forwarded"},
        "internaldate": datetime(2026, 4, 15, 21, 54, 5, 123_000),  # naive UTC, whatever the worker's time zone
        "flagseen": True,
    }


def test_empty_and_absent_values_read_as_the_driver_reads_them():
    row = Row(messageid=None, uid=1, userflags=[], internaldate=None, flagseen=None)

    assert driver_row(row, TYPES) == {
        "messageid": None,
        "uid": 1,
        "userflags": None,  # Cassandra stores an empty set as no value
        "internaldate": None,
        "flagseen": None,
    }
    assert driver_row(None, TYPES) is None, "no row at the key"
