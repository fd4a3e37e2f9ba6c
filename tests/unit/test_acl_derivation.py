"""What the ACL truth derives into (UserMailboxACL, aclv2), which mailboxes' truth cannot be read, and the truth's
health, for both generations: eventStore's last `acl-updated` event (3.9) and the `acl` JSON (3.5)."""

import json

from james_consistency.projections import projection_spec
from pyspark.testing.utils import assertDataFrameEqual

M1 = "0b6e4d50-6a8f-11ef-8f1a-6b1c3d3b2a01"
M2 = "0b6e4d50-6a8f-11ef-8f1a-6b1c3d3b2a02"
M3 = "0b6e4d50-6a8f-11ef-8f1a-6b1c3d3b2a03"
EVENTS = "aggregateid string, eventid int, event string"


def acl_event(mailbox: str, event_id: int, entries: dict) -> tuple:
    event = {
        "eventId": event_id,
        "aggregateKey": mailbox,
        "type": "acl-updated",
        "aclDiff": {"oldAcl": {"entries": {}}, "newAcl": {"entries": entries}},
    }
    return (mailbox, event_id, json.dumps(event))


def reader(tables: dict):
    """The engine's read_table contract, served from local DataFrames."""
    return lambda table, columns: tables[table].select(*columns)


def event_store(spark):
    return spark.createDataFrame(
        [
            acl_event(M1, 0, {"former@domain.tld": "lr"}),
            # The last event is the mailbox's ACL; letters come in any order, `c` and `d` are RFC 2086's.
            acl_event(
                M1,
                1,
                {
                    "bob@domain.tld": "srl",
                    "alice@domain.tld": "lc",
                    "carl@domain.tld": "d",
                    "-dave@domain.tld": "l",
                    "$team@domain.tld": "lr",
                    "owner": "a",
                    "anyone": "l",
                },
            ),
            (M2, 0, "{not json"),
            acl_event(M3, 0, {"bob@domain.tld": "lz"}),
            # Other aggregates of James's eventStore are not mailbox ACLs, whatever their events look like.
            acl_event("FilteringRule/bob@domain.tld", 0, {"eve@domain.tld": "l"}),
            ("BlobStoreStorageStrategyConfiguration", 0, '{"type":"storage-strategy-changed"}'),
        ],
        EVENTS,
    )


TASK_ID = "2c7f4081-aa30-11e9-bf6c-2d3b9e84aafd"
# James's other event-sourced aggregates, as their DTOs serialize them (the JSON of James's serialization tests).
OTHER_AGGREGATES = [
    (
        "BlobStoreStorageStrategyConfiguration",
        0,
        '{"eventId":0,"aggregateKey":"BlobStoreStorageStrategyConfiguration","type":"storage-strategy-changed",'
        '"storageStrategy":"DEDUPLICATION"}',
    ),
    (
        f"Task/{TASK_ID}",
        0,
        f'{{"task":{{"type":"completed-task"}},"type":"task-manager-created","aggregate":"{TASK_ID}","event":0,'
        '"hostname":"foo"}',
    ),
    (f"Task/{TASK_ID}", 1, f'{{"aggregate":"{TASK_ID}","event":1,"type":"task-manager-started","hostname":"foo"}}'),
    (
        "FilteringRule/bob@domain.tld",
        0,
        '{"type":"filtering-rule-set-defined","eventId":0,"aggregateId":"FilteringRule/bob@domain.tld","rules":[]}',
    ),
    (
        "DLPRule/domain.tld",
        0,
        '{"type":"dlp-configuration-store","eventId":0,"aggregateId":"DLPRule/domain.tld","configurationItems":[]}',
    ),
    (
        "QuotaThreasholdEvents/default/bob@domain.tld",
        0,
        '{"type":"quota-threshold-change","eventId":0,"aggregateId":"QuotaThreasholdEvents/default/bob@domain.tld",'
        '"sizeQuota":{"used":23,"limit":33},"countQuota":{"used":12,"limit":45},'
        '"sizeEvolution":{"change":"NoChange"},"countEvolution":{"change":"NoChange"}}',
    ),
]


def test_only_mailbox_acl_aggregates_of_the_event_store_are_read_as_truth(spark):
    mailbox_events = [acl_event(M1, 0, {"bob@domain.tld": "l"}), acl_event(M1, 1, {"bob@domain.tld": "lr"})]
    events = spark.createDataFrame(mailbox_events + OTHER_AGGREGATES, EVENTS)

    for target in ("acl", "aclv2"):
        spec = projection_spec(target, "3.9")
        truth = spec.truth.scan(reader({"eventStore": events}))

        assertDataFrameEqual(truth, spark.createDataFrame(mailbox_events, EVENTS))
        assertDataFrameEqual(spec.unreadable.find(truth), [])


def scanned_truth(spark, target: str):
    spec = projection_spec(target, "3.9")
    return spec, spec.truth.scan(reader({"eventStore": event_store(spark)}))


def test_user_mailbox_acl_holds_the_positive_user_entries_of_each_last_event_in_james_letter_order(spark):
    spec, truth = scanned_truth(spark, "acl")

    expected = spark.createDataFrame(
        [
            ("bob@domain.tld", M1, "lrs"),
            ("alice@domain.tld", M1, "klx"),
            ("carl@domain.tld", M1, "etx"),
        ],
        "username string, mailboxid string, rights string",
    )
    assertDataFrameEqual(spec.derive(truth), expected)


def test_aclv2_holds_every_entry_with_rights_as_a_set_of_letters(spark):
    spec, truth = scanned_truth(spark, "aclv2")

    expected = spark.createDataFrame(
        [
            (M1, "bob@domain.tld", ["l", "r", "s"]),
            (M1, "alice@domain.tld", ["k", "l", "x"]),
            (M1, "carl@domain.tld", ["e", "t", "x"]),
            (M1, "-dave@domain.tld", ["l"]),
            (M1, "$team@domain.tld", ["l", "r"]),
            (M1, "owner", ["a"]),
            (M1, "anyone", ["l"]),
        ],
        "id string, key string, rights array<string>",
    )
    assertDataFrameEqual(spec.derive(truth), expected)


def test_a_mailbox_whose_acl_cannot_be_read_is_reported_never_derived_as_empty(spark):
    spec, truth = scanned_truth(spark, "aclv2")

    assert spec.unreadable.scope_column == "id"
    expected = spark.createDataFrame(
        [(M2, "unparsable ACL JSON"), (M3, "unknown ACL right 'z'")], "mailbox string, problem string"
    )
    assertDataFrameEqual(spec.unreadable.find(truth), expected)


def test_an_event_of_another_type_or_an_entry_key_without_a_name_makes_the_acl_unreadable(spark):
    spec = projection_spec("acl", "3.9")
    events = spark.createDataFrame(
        [
            (M1, 0, json.dumps({"type": "mailbox-deleted", "aclDiff": {}})),
            acl_event(M2, 0, {"-$": "l", "bob@domain.tld": "l"}),
            acl_event(M3, 0, {}),  # a deleted mailbox's last event: an empty ACL, readable
        ],
        EVENTS,
    )
    truth = spec.truth.scan(reader({"eventStore": events}))

    expected = spark.createDataFrame(
        [(M1, "unknown event type mailbox-deleted"), (M2, "ACL entry key without a name: '-$'")],
        "mailbox string, problem string",
    )
    assertDataFrameEqual(spec.unreadable.find(truth), expected)
    assertDataFrameEqual(spec.derive(truth), [])


def test_the_35_acl_json_derives_the_same_projection(spark):
    spec = projection_spec("acl", "3.5")
    acl = spark.createDataFrame(
        [
            (M1, json.dumps({"entries": {"bob@domain.tld": "rsl", "-$group": "lprstwx", "anybody": "l"}})),
            (M2, "unparsable"),
        ],
        "id string, acl string",
    )
    truth = spec.truth.scan(reader({"acl": acl}))

    assertDataFrameEqual(
        spec.derive(truth),
        spark.createDataFrame([("bob@domain.tld", M1, "lrs")], "username string, mailboxid string, rights string"),
    )
    assertDataFrameEqual(
        spec.unreadable.find(truth),
        spark.createDataFrame([(M2, "unparsable ACL JSON")], "mailbox string, problem string"),
    )


def test_the_acl_truth_health_counts_events_james_would_never_write(spark):
    spec = projection_spec("aclv2", "3.9")
    events = spark.createDataFrame(
        [acl_event(M1, 0, {}), (M1, -1, "{}"), (None, 2, "{}"), (M2, 0, None)],
        EVENTS,
    )

    figures = events.agg(*spec.health.metrics())

    assert spec.health.suite == "acl_truth_health_39"
    assertDataFrameEqual(
        figures,
        spark.createDataFrame([(1, 1, 1)], "null_aggregateid long, negative_eventid long, null_event long"),
    )
    assertDataFrameEqual(
        events.where(spec.health.problem()).select("eventid"), [(-1,), (2,), (0,)], checkRowOrder=False
    )


def test_the_legacy_acl_truth_health_counts_rows_without_an_id(spark):
    spec = projection_spec("acl", "3.5")
    rows = spark.createDataFrame([(M1, "{}"), (None, "{}")], "id string, acl string")

    assert spec.health.suite == "acl_truth_health_35"
    assertDataFrameEqual(rows.agg(*spec.health.metrics()), spark.createDataFrame([(1,)], "null_id long"))
