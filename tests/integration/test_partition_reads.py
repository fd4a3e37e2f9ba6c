"""The projection's live rows read a partition at a time (engine.tables.read_by_partition, jvm/PartitionRead.java) on
the real node: the same rows, valued the same way, as the connector's direct join reads one key at a time."""

import pytest
from james_consistency.cassandra.schema import create_schema
from james_consistency.engine.tables import (
    KEYS_PER_REQUEST,
    direct_join_table,
    partition_read_key,
    read_by_partition,
)
from support.messages import insert, message, timeuuid

COLUMNS_39 = (
    "mailboxid", "uid", "messageid", "modseq", "flagseen", "flagflagged", "userflags", "threadid",
)  # fmt: skip


@pytest.fixture(scope="module")
def messages_keyspace(cql):
    """One mailbox holding more messages than one request asks for, and a small one; both tables written alike."""
    keyspace = "partition_reads"
    cql.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)
    create_schema(cql, keyspace, "3.9")
    big, small = timeuuid(1), timeuuid(2)
    for mailbox, count in ((big, KEYS_PER_REQUEST + 30), (small, 5)):
        for uid in range(1, count + 1):
            row = message("3.9", mailbox, uid, uid + (0 if mailbox == big else 1000))
            insert(cql, keyspace, "imapuidtable", row)
            insert(cql, keyspace, "messageidtable", row)
    yield keyspace, big, small
    cql.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)


def keys_frame(spark, keys):
    return spark.createDataFrame(keys, "mailboxid string, uid bigint")


def by_direct_join(spark, keyspace, keys, columns):
    """What the connector's direct join reads at the same keys (its one-read-per-key path)."""
    table = direct_join_table(spark, keyspace, "messageidtable", "LOCAL_QUORUM").select(*columns)
    return keys.join(table, ["mailboxid", "uid"], "inner").select(*columns)


def rows(frame) -> list[tuple]:
    return sorted(tuple(row) for row in frame.collect())


def test_the_rows_at_the_keys_are_those_the_direct_join_reads_a_big_partition_in_several_requests(
    spark, cassandra_settings, messages_keyspace
):
    keyspace, big, small = messages_keyspace
    asked = [(str(big), uid) for uid in range(1, KEYS_PER_REQUEST + 31)] + [(str(small), 2), (str(small), 5)]
    absent = [(str(small), 99), (str(timeuuid(3)), 1)]  # a uid the mailbox lacks; a mailbox with no rows
    keys = keys_frame(spark, [*asked, *absent, (None, 4), (str(small), None), (str(small), 2)])
    read_key = partition_read_key(cassandra_settings, keyspace, "messageIdTable", ("mailboxid", "uid"))

    found = read_by_partition(spark, keyspace, "messageIdTable", read_key, keys, COLUMNS_39, "LOCAL_QUORUM")

    assert read_key == (["mailboxid"], "uid")
    assert found.columns == list(COLUMNS_39)
    assert rows(found) == rows(by_direct_join(spark, keyspace, keys_frame(spark, asked), COLUMNS_39))
    assert len(rows(found)) == len(asked), "each present key once; absent and null keys give no row"
    forwarded = {row["uid"]: row["userflags"] for row in found.where(f"mailboxid = '{small}'").collect()}
    assert forwarded == {2: [], 5: []}, "an empty set as the connector presents it"
    assert found.where("uid = 4").first()["userflags"] == ["$Forwarded"]


def test_a_key_of_two_fixed_columns_reads_by_its_last_clustering_column(spark, cassandra_settings, messages_keyspace):
    keyspace, big, _ = messages_keyspace
    key = ("messageid", "mailboxid", "uid")
    read_key = partition_read_key(cassandra_settings, keyspace, "imapUidTable", key)
    wanted = message("3.9", big, 7, 7)
    keys = spark.createDataFrame(
        [(str(wanted["messageid"]), str(big), 7), (str(wanted["messageid"]), str(big), 8)],
        "messageid string, mailboxid string, uid bigint",
    )

    found = read_by_partition(spark, keyspace, "imapUidTable", read_key, keys, key + ("modseq",), "LOCAL_QUORUM")

    assert read_key == (["messageid", "mailboxid"], "uid")
    assert rows(found) == [(str(wanted["messageid"]), str(big), 7, wanted["modseq"])]


def test_a_key_that_is_not_a_whole_primary_key_with_a_clustering_column_is_read_key_by_key(
    cassandra_settings, messages_keyspace
):
    keyspace, _, _ = messages_keyspace

    several_rows = partition_read_key(cassandra_settings, keyspace, "messageIdTable", ("mailboxid",))
    one_row_a_partition = partition_read_key(cassandra_settings, keyspace, "mailboxCounters", ("mailboxid",))

    assert several_rows is None, "a key naming a whole partition"
    assert one_row_a_partition is None, "nothing to group"
