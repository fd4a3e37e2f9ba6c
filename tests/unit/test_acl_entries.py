"""Which ACL entries UserMailboxACL keeps: positive entries of individual users, never a special name of any James
version (MailboxACL.SpecialName: `anybody` up to 3.8, `anyone` since 3.9), a group or a negative entry."""

import pytest
from james_consistency.projections.acl import is_user_entry, is_user_key
from pyspark.sql import functions as F

ENTRIES = [
    ("bob@domain.tld", True),
    ("owner", False),
    ("anyone", False),
    ("anybody", False),
    ("authenticated", False),
    ("$team@domain.tld", False),
    ("-bob@domain.tld", False),
    ("-$team@domain.tld", False),
]


@pytest.mark.parametrize(("key", "kept"), ENTRIES)
def test_the_recheck_keeps_only_user_entries(key, kept):
    assert is_user_entry(key) is kept


def test_the_scan_keeps_the_same_entries_as_the_recheck(spark):
    frame = spark.createDataFrame(ENTRIES, "key string, kept boolean")
    judged = frame.select("key", "kept", is_user_key(F.col("key")).alias("judged")).collect()
    assert [(row.key, row.judged) for row in judged] == [(row.key, row.kept) for row in judged]
