"""mailboxCounters and the current quotas recounted from the truth: which mailboxes and messages count, for whom,
and what counts as consistent (an absent counter reads as zero)."""

from james_consistency.engine.diff import compare, inconsistencies
from james_consistency.engine.live import run_steps
from james_consistency.projections import counters, projection_spec
from pyspark.sql import functions as F
from pyspark.testing.utils import assertDataFrameEqual

BOB, ALICE, CAROL, DAVE = (f"#private&{user}@domain.tld" for user in ("bob", "alice", "carol", "dave"))


def reader(tables: dict):
    """The engine's read_table contract, served from local DataFrames."""
    return lambda table, columns: tables[table].select(*columns)


def counters_truth(spark):
    mailboxes = spark.createDataFrame([("A",), ("B",)], "id string")
    messages = spark.createDataFrame(
        [
            ("m1", "A", 1, True),
            ("m2", "A", 2, False),
            ("m3", "A", 3, None),  # \Seen not set: unseen
            ("m4", "C", 1, False),  # C lost its mailbox row (an orphan path): still counted
        ],
        "messageid string, mailboxid string, uid long, flagseen boolean",
    )
    spec = projection_spec("counters", "3.9")
    return spec, spec.truth.scan(reader({"mailbox": mailboxes, "imapUidTable": messages}))


def test_mailbox_counters_count_messages_and_unseen_ones_and_zero_for_an_empty_mailbox(spark):
    spec, truth = counters_truth(spark)

    expected = spark.createDataFrame(
        [("A", 3, 2), ("B", 0, 0), ("C", 1, 1)], "mailboxid string, count long, unseen long"
    )
    assertDataFrameEqual(spec.derive(truth), expected)


def test_the_counter_recheck_is_pointed_at_every_message_of_the_mailbox(spark):
    spec, truth = counters_truth(spark)

    expected = spark.createDataFrame(
        [("A", "m1"), ("A", "m2"), ("A", "m3"), ("B", None), ("C", "m4")], "mailboxid string, messageid string"
    )
    assertDataFrameEqual(spec.hints.locate(truth), expected)


def test_an_absent_counter_is_a_zero_one(spark):
    spec = projection_spec("counters", "3.9")
    schema = "mailboxid string, count long, unseen long"
    expected = spark.createDataFrame([("A", 3, 2), ("B", 0, 0), ("C", 1, 1)], schema)
    actual = spark.createDataFrame([("A", 3, 2), ("C", 1, 0), ("D", 0, 0), ("E", 2, None)], schema)

    found = inconsistencies(compare(expected, actual, spec.key, spec.value_columns, spec.projection.equivalent()))

    assertDataFrameEqual(
        found.select("mailboxid", "kind"),
        spark.createDataFrame([("C", "outdated"), ("E", "orphan")], "mailboxid string, kind string"),
    )


def test_counter_truth_health_counts_message_rows_that_cannot_be_counted_not_empty_mailboxes(spark):
    spec = projection_spec("counters", "3.9")
    truth = spark.createDataFrame(
        [("m1", "A", 1), ("m2", "A", None), ("m3", "A", 0), (None, "B", None)],
        "messageid string, mailboxid string, uid long",
    )

    assertDataFrameEqual(
        truth.agg(*spec.health.metrics()), spark.createDataFrame([(1, 1)], "null_uid long, uid_below_1 long")
    )


def quota_tables(spark, generation: str) -> dict:
    mailboxes = spark.createDataFrame(
        [
            ("A", ("#private", "bob@domain.tld")),
            # The mailbox row names the owner, as James's live quota updates find it (DefaultUserQuotaRootResolver:
            # findMailboxById, then the row's path): B has no path registration and is still bob's...
            ("B", ("#private", "bob@domain.tld")),
            ("D", ("#private", "alice@domain.tld")),
            ("E", ("#private", "carol@domain.tld")),  # no message: zero usage
            ("F", ("#private", "dave@domain.tld")),  # ...and F, registered under erin's path, is dave's
        ],
        "id string, mailboxbase struct<namespace: string, user: string>",
    )
    paths = spark.createDataFrame(
        [
            ("#private", "bob@domain.tld", "A"),
            ("#private", "bob@domain.tld", "C"),  # C's row is lost: the path names its owner
            ("#private", "alice@domain.tld", "D"),
            ("#private", "alice@domain.tld", "D"),  # D registered under two names: counted once
            ("#private", "erin@domain.tld", "F"),
        ],
        "namespace string, user string, mailboxid string",
    )
    sizes = {"m1": 100, "m2": 50, "m3": 10, "m4": 5, "m5": 7, "m6": 3}
    holders = [("m1", "A"), ("m2", "A"), ("m3", "B"), ("m4", "C"), ("m5", "D"), ("m6", "F")]
    if generation == "3.9":
        messages = spark.createDataFrame(
            [(m, box, 1, True, sizes[m]) for m, box in holders],
            "messageid string, mailboxid string, uid long, flagseen boolean, fullcontentoctets long",
        )
        return {"mailbox": mailboxes, "mailboxPathV3": paths, "imapUidTable": messages}
    messages = spark.createDataFrame(
        [(m, box, 1, True) for m, box in holders], "messageid string, mailboxid string, uid long, flagseen boolean"
    )
    metadata = spark.createDataFrame(list(sizes.items()), "messageid string, fullcontentoctets long")
    return {"mailbox": mailboxes, "mailboxPathV2": paths, "imapUidTable": messages, "messageV2": metadata}


def quota_values(spark, usage: list[tuple]):
    """quotaCurrentValue's two MAILBOX rows, count and size, of each (root, messages, octets)."""
    rows = [
        (root, "MAILBOX", kind, value)
        for root, count, size in usage
        for kind, value in (("count", count), ("size", size))
    ]
    return spark.createDataFrame(rows, "identifier string, quotacomponent string, quotatype string, currentvalue long")


def test_quota_current_value_holds_each_users_messages_and_octets_as_mailbox_count_and_size_rows(spark):
    spec = projection_spec("quotas", "3.9", keyspace_tables=frozenset({"quotacurrentvalue"}))
    truth = spec.truth.scan(reader(quota_tables(spark, "3.9")))

    expected = quota_values(spark, [(BOB, 4, 165), (ALICE, 1, 7), (CAROL, 0, 0), (DAVE, 1, 3)])
    assertDataFrameEqual(spec.derive(truth), expected)


def test_the_35_current_quota_row_holds_the_same_usage_with_sizes_from_message_v2(spark):
    spec = projection_spec("quotas", "3.5", keyspace_tables=frozenset({"currentquota"}))
    truth = spec.truth.scan(reader(quota_tables(spark, "3.5")))

    expected = spark.createDataFrame(
        [(BOB, 4, 165), (ALICE, 1, 7), (CAROL, 0, 0), (DAVE, 1, 3)],
        "quotaroot string, messagecount long, storage long",
    )
    assertDataFrameEqual(spec.derive(truth), expected)


def test_only_mailbox_quota_rows_are_this_repairs_sieve_and_uploads_are_never_touched(spark):
    spec = projection_spec("quotas", "3.9", keyspace_tables=frozenset({"quotacurrentvalue"}))
    schema = "identifier string, quotacomponent string, quotatype string, currentvalue long"
    projection = spark.createDataFrame(
        [(BOB, "MAILBOX", "count", 4), (BOB, "SIEVE", "size", 900), (BOB, "JMAP_UPLOADS", "size", 12)], schema
    )

    assertDataFrameEqual(
        spec.projection.view(projection), spark.createDataFrame([(BOB, "MAILBOX", "count", 4)], schema)
    )


def test_a_quota_recheck_is_pointed_at_both_rows_of_the_root_with_every_message_and_mailbox(spark):
    spec = projection_spec("quotas", "3.9", keyspace_tables=frozenset({"quotacurrentvalue"}))
    truth = spec.truth.scan(reader(quota_tables(spark, "3.9"))).where(F.col("quotaroot") == ALICE)

    expected = spark.createDataFrame(
        [(ALICE, "MAILBOX", "count", "m5", "D"), (ALICE, "MAILBOX", "size", "m5", "D")],
        "identifier string, quotacomponent string, quotatype string, messageid string, mailboxid string",
    )
    assertDataFrameEqual(spec.hints.locate(truth), expected)


def test_quota_truth_health_adds_sizes_that_cannot_be_summed(spark):
    spec = projection_spec("quotas", "3.9")
    truth = spark.createDataFrame(
        [("m1", 1, 10), ("m2", 2, None), ("m3", 3, -1), (None, None, None)],
        "messageid string, uid long, fullcontentoctets long",
    )

    expected = spark.createDataFrame(
        [(0, 0, 1, 1)], "null_uid long, uid_below_1 long, null_size long, negative_size long"
    )
    assertDataFrameEqual(truth.agg(*spec.health.metrics()), expected)


def test_the_counters_report_speaks_james_recompute_mailbox_counters_fields():
    report = {
        "expectedProjectionRows": 3,
        "errors": [{"mailboxId": "B", "error": "moved"}, {"mailboxId": "A", "error": "x"}, {"mailboxId": "B"}],
    }

    projection_spec("counters", "3.9").finish_report(report)

    assert (report["processedMailboxes"], report["failedMailboxes"]) == (3, ["A", "B"])
    assert "ADR-0023" in report["concurrencyNote"]


def test_the_quotas_report_speaks_james_recompute_current_quotas_fields():
    report = {"expectedProjectionRows": 8, "errors": [{"quotaRoot": BOB}, {"quotaRoot": BOB}]}

    projection_spec("quotas", "3.9", keyspace_tables=frozenset({"quotacurrentvalue"})).finish_report(report)

    assert report["recomputeSingleQuotaComponentResults"] == [
        # four roots: a count row and a size row each
        {"quotaComponent": "MAILBOX", "processedIdentifierCount": 4, "failedIdentifiers": [BOB]}
    ]


def test_the_35_quotas_report_counts_one_row_per_root():
    report = {"expectedProjectionRows": 4, "errors": []}

    projection_spec("quotas", "3.5", keyspace_tables=frozenset({"currentquota"})).finish_report(report)

    assert report["recomputeSingleQuotaComponentResults"][0]["processedIdentifierCount"] == 4


def test_a_mailbox_row_without_owner_is_counted_for_the_user_its_path_names_or_for_nobody(spark):
    spec = projection_spec("quotas", "3.9", keyspace_tables=frozenset({"quotacurrentvalue"}))
    tables = {
        "mailbox": spark.createDataFrame(
            [("A", ("#private", "bob@domain.tld")), ("X", None), ("Y", None), ("Z", ("#private", None))],
            "id string, mailboxbase struct<namespace: string, user: string>",
        ),
        # James's recompute lists a user's mailboxes by their path registrations: X is bob's.
        "mailboxPathV3": spark.createDataFrame(
            [("#private", "bob@domain.tld", "A"), ("#private", "bob@domain.tld", "X")],
            "namespace string, user string, mailboxid string",
        ),
        "imapUidTable": spark.createDataFrame(
            [("m1", "A", 1, True, 100), ("m2", "X", 1, True, 10), ("m3", "Y", 1, True, 1), ("m4", "Z", 1, True, 2)],
            "messageid string, mailboxid string, uid long, flagseen boolean, fullcontentoctets long",
        ),
    }
    truth = spec.truth.scan(reader(tables))

    assertDataFrameEqual(spec.derive(truth), quota_values(spark, [(BOB, 2, 110)]))


# ---- the quota frames and the shared recount, each on its own -------------------------------------------------------

MAILBOX_ROWS = "id string, mailboxbase struct<namespace: string, user: string>"
PATH_ROWS = "namespace string, user string, mailboxid string"


def test_a_mailbox_belongs_to_the_owner_its_row_names_else_to_the_user_its_path_names_else_to_nobody(spark):
    mailboxes = spark.createDataFrame(
        [
            ("A", ("#private", "bob@domain.tld")),  # row and path agree
            ("B", ("#private", "dave@domain.tld")),  # registered under erin's path: the row wins
            ("X", ("#private", None)),  # a row without whole owner: its path names bob
            ("Y", None),  # no owner anywhere: nobody's quota
        ],
        MAILBOX_ROWS,
    )
    paths = spark.createDataFrame(
        [
            ("#private", "bob@domain.tld", "A"),
            ("#private", "bob@domain.tld", "A"),  # registered twice: once
            ("#private", "erin@domain.tld", "B"),
            ("#private", "bob@domain.tld", "X"),
            ("#private", "alice@domain.tld", "C"),  # C's row is lost: the path names alice
        ],
        PATH_ROWS,
    )

    assertDataFrameEqual(
        counters.quota_owners(mailboxes, paths),
        spark.createDataFrame(
            [("A", BOB), ("B", DAVE), ("X", BOB), ("C", ALICE)], "mailboxid string, quotaroot string"
        ),
    )


def test_a_root_uses_its_messages_and_octets_a_message_of_unknown_size_counts_no_octet(spark):
    truth = spark.createDataFrame(
        [
            (BOB, "A", "m1", 100),
            (BOB, "A", "m2", None),  # size unknown
            (ALICE, "D", "m3", None),  # only a message of unknown size
            (CAROL, "E", None, None),  # a mailbox without message
        ],
        "quotaroot string, mailboxid string, messageid string, fullcontentoctets long",
    )

    assertDataFrameEqual(
        counters.quota_usage(truth),
        spark.createDataFrame(
            [(BOB, 2, 100), (ALICE, 1, 0), (CAROL, 0, 0)], "quotaroot string, messagecount long, storage long"
        ),
    )
    assertDataFrameEqual(
        counters.quota_current_values(truth), quota_values(spark, [(BOB, 2, 100), (ALICE, 1, 0), (CAROL, 0, 0)])
    )


def usage(recounts, root: str, quotatype: str, recount):
    return run_steps(None, recounts.usage(root, quotatype, recount))


class LiveUsage:
    """Stands for the live recount of a quota root: counts the recounts, each giving a new usage."""

    def __init__(self):
        self.recounted = []

    def of(self, root: str):
        def recount():
            self.recounted.append(root)
            return len(self.recounted), 10 * len(self.recounted)
            yield  # steps (engine.live) that need no statement

        return recount


def test_both_rows_of_a_root_share_one_recount_whichever_comes_first_and_interleaved_with_other_roots():
    live, recounts = LiveUsage(), counters.RootRecounts()

    seen = [
        usage(recounts, root, kind, live.of(root))
        for root, kind in [(BOB, "size"), (ALICE, "count"), (BOB, "count"), (ALICE, "size")]
    ]

    assert live.recounted == [BOB, ALICE]
    assert seen == [(1, 10), (2, 20), (1, 10), (2, 20)], "count and size of a root from the same recount"


def test_a_row_rechecked_again_is_recounted_and_a_root_waits_for_its_other_row_only_so_long():
    live, recounts = LiveUsage(), counters.RootRecounts(waiting=1)

    again = [usage(recounts, BOB, "count", live.of(BOB)) for _ in range(2)]
    usage(recounts, ALICE, "count", live.of(ALICE))  # bob's recount no longer waits
    late = usage(recounts, BOB, "size", live.of(BOB))

    assert again == [(1, 10), (2, 20)], "never the usage a row already took"
    assert late == (4, 40)
    assert live.recounted == [BOB, BOB, ALICE, BOB]
