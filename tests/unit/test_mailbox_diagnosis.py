"""The mailbox diagnosis as a pure DataFrame function, on tiny local DataFrames: which kind each row gets."""

import pytest
from james_consistency.mailboxes import diagnosis as d
from james_consistency.mailboxes import policy
from pyspark.sql import functions as F
from pyspark.testing.utils import assertDataFrameEqual

MAILBOXES = "mailboxId string, namespace string, user string, name string"
PATHS = "namespace string, user string, name string, mailboxId string, written long"
MESSAGES = "mailboxId string, messages long"


def findings(spark, rows: dict[str, str], registrations: dict[str, str]) -> dict[tuple[str, str], str | None]:
    """rows: id -> name of its mailbox row; registrations: name -> registered id. Returns (kind, path) -> id."""
    mailboxes = spark.createDataFrame([(i, "#private", "u", name) for i, name in rows.items()], MAILBOXES)
    paths = spark.createDataFrame([("#private", "u", name, i, 1) for name, i in registrations.items()], PATHS)
    found = d.diagnose(mailboxes, paths, spark.createDataFrame([], MESSAGES)).collect()
    return {(row["kind"], row["name"]): row["mailboxId"] for row in found}


def test_a_row_on_a_path_taken_by_another_id_while_its_id_is_registered_elsewhere_is_realignable(spark):
    # James master's test: rows id1@abc and id2@abc, paths abc -> id2 and xyz -> id1.
    found = findings(spark, {"id1": "abc", "id2": "abc"}, {"abc": "id2", "xyz": "id1"})

    assert found == {(d.MAILBOX_REGISTERED_ELSEWHERE, "abc"): "id1"}, "abc is left consistent for id2, no merge"
    assert d.MAILBOX_REGISTERED_ELSEWHERE in d.FIXABLE


def test_the_same_when_the_path_owner_has_no_row(spark):
    found = findings(spark, {"id1": "abc"}, {"abc": "id2", "xyz": "id1"})

    assert found == {(d.MAILBOX_REGISTERED_ELSEWHERE, "abc"): "id1", (d.ORPHAN_PATH, "abc"): "id2"}


def test_two_ids_swapped_between_two_paths_are_each_realigned_onto_their_registration(spark):
    # James master's phase 2 realigns both rows (its loop test compares ids only, so it cannot see the paths move).
    found = findings(spark, {"a": "A", "b": "B"}, {"A": "b", "B": "a"})

    assert found == {(d.MAILBOX_REGISTERED_ELSEWHERE, "A"): "a", (d.MAILBOX_REGISTERED_ELSEWHERE, "B"): "b"}


def test_realigned_even_when_another_row_claims_the_registration_which_then_is_a_ghost(spark):
    # id3's row squats xyz, registered to id1, and id3 is registered nowhere: a ghost, reported (the next pass finds
    # id1 and id3 on xyz: two ids on one path, merged with `merge`).
    claimed = findings(spark, {"id1": "abc", "id2": "abc", "id3": "xyz"}, {"abc": "id2", "xyz": "id1"})

    assert claimed == {(d.MAILBOX_REGISTERED_ELSEWHERE, "abc"): "id1", (d.PATH_POINTS_TO_ANOTHER_ID, "xyz"): "id3"}


def test_an_id_registered_twice_is_left_to_one_id_two_paths_first(spark):
    twice = findings(spark, {"id1": "abc", "id2": "abc"}, {"abc": "id2", "xyz": "id1", "xyz2": "id1"})

    assert twice == {(d.TWO_IDS_ONE_PATH, "abc"): "id2", (d.ONE_ID_TWO_PATHS, "abc"): "id1"}


# ---- every kind, with the expected findings beside the rows --------------------------------------------------------


def frames(spark, rows: list[tuple], registrations: list[tuple], messages: list[tuple]):
    """rows: (id, name); registrations: (name, id, written); messages: (id, count). User u of #private."""
    return (
        spark.createDataFrame([(i, "#private", "u", name) for i, name in rows], MAILBOXES),
        spark.createDataFrame([("#private", "u", name, i, w) for name, i, w in registrations], PATHS),
        spark.createDataFrame(messages, MESSAGES),
    )


FINDING = "kind string, mailboxId string, name string, mailboxPath string, registeredId string, messages long"


def test_orphans_outdated_rows_and_ids_under_two_paths_are_each_found_once(spark):
    mailboxes, paths, messages = frames(
        spark,
        rows=[("o1", "Orphan"), ("r1", "Old"), ("t1", "T1"), ("c1", "INBOX"), ("x1", None)],
        registrations=[("Lost", "p1", 1), ("New", "r1", 2), ("T2", "t1", 9), ("T1", "t1", 5), ("INBOX", "c1", 1)],
        messages=[("p1", 3), ("c1", 2)],
    )
    malformed_path = spark.createDataFrame([("#private", "u", "Broken", None, 1)], PATHS)

    found = d.diagnose(mailboxes, paths.unionByName(malformed_path), messages)

    assertDataFrameEqual(
        found.select("kind", "mailboxId", "name", "mailboxPath", "registeredId", "messages"),
        spark.createDataFrame(
            [
                (d.ORPHAN_MAILBOX, "o1", "Orphan", "#private:u:Orphan", None, 0),
                (d.ORPHAN_PATH, "p1", "Lost", "#private:u:Lost", "p1", 3),
                (d.MAILBOX_PATH_OUTDATED, "r1", "Old", "#private:u:Old", None, 0),
                (d.ONE_ID_TWO_PATHS, "t1", "T1", "#private:u:T1", "t1", 0),
            ],
            FINDING,
        ),
    )
    # What the policy acts on: the registrations of the id (sorted, with their write times) and the row's own path.
    assertDataFrameEqual(
        found.select(
            "mailboxId",
            F.col("paths.name").alias("registeredNames"),
            F.col("paths.written").alias("written"),
            F.col("mailboxRowPath.name").alias("rowName"),
        ),
        spark.createDataFrame(
            [
                ("o1", [], [], "Orphan"),
                ("p1", ["Lost"], [1], None),
                ("r1", ["New"], [2], "Old"),
                ("t1", ["T1", "T2"], [5, 9], "T1"),
            ],
            "mailboxId string, registeredNames array<string>, written array<bigint>, rowName string",
        ),
    )


def test_two_rows_on_one_path_carry_their_claimants_and_the_merge_plan_follows_the_registration(spark):
    mailboxes, paths, messages = frames(
        spark,
        rows=[("w", "Shared"), ("l", "Shared"), ("f1", "Free"), ("f2", "Free")],
        registrations=[("Shared", "w", 1)],
        messages=[("w", 5), ("l", 2)],
    )

    found = d.diagnose(mailboxes, paths, messages)

    assertDataFrameEqual(
        found.select("kind", "mailboxId", "name", "registeredId", "claimants"),
        spark.createDataFrame(
            [
                (d.TWO_IDS_ONE_PATH, "w", "Shared", "w", [("l", 2, 0), ("w", 5, 1)]),
                (d.TWO_IDS_ONE_PATH, None, "Free", None, [("f1", 0, 0), ("f2", 0, 0)]),
            ],
            f"kind string, mailboxId string, name string, registeredId string, claimants array<{d.CLAIMANT_STRUCT}>",
        ),
    )
    plans = {row["name"]: policy.merge_plan(row.asDict(recursive=True)) for row in found.collect()}
    assert plans == {
        "Shared": {"mergeDestination": "w", "mergeOrigins": ["l"]},
        "Free": None,  # no registration: no certain winner, never guessed
    }


def claimant(mailbox_id: str, registrations: int) -> dict:
    return {"mailboxId": mailbox_id, "messages": 1, "registrations": registrations}


@pytest.mark.parametrize(
    ("finding", "plan"),
    [
        (
            {"registeredId": "w", "claimants": [claimant("a", 0), claimant("w", 1), claimant("b", 0)]},
            {"mergeDestination": "w", "mergeOrigins": ["a", "b"]},
        ),
        ({"registeredId": "w", "claimants": [claimant("a", 1), claimant("w", 1)]}, None),
        ({"registeredId": "z", "claimants": [claimant("a", 0), claimant("w", 1)]}, None),
    ],
    ids=["every-unregistered-loser-merges-into-the-registered-id", "a-registered-loser", "winner-not-a-claimant"],
)
def test_the_merge_plan_merges_only_losers_registered_under_no_path(finding, plan):
    assert policy.merge_plan(finding) == plan


def test_the_scans_are_read_under_the_diagnosis_names_and_malformed_rows_are_counted(spark):
    raw_mailboxes = spark.createDataFrame(
        [("i1", ("#private", "u"), "INBOX"), ("i2", ("#private", None), "Sent")],
        "id string, mailboxbase struct<namespace: string, user: string>, name string",
    )
    raw_paths = spark.createDataFrame(
        [("#private", "u", "INBOX", "i1", 7), ("#private", "u", "Gone", None, 8)],
        "namespace string, user string, mailboxname string, mailboxid string, written long",
    )
    truth = spark.createDataFrame([("i1", "m1"), ("i1", "m2"), ("i3", "m3")], "mailboxid string, messageid string")

    mailboxes, paths = d.mailbox_entries(raw_mailboxes), d.path_entries(raw_paths)
    mailbox_health, path_health = d.health_metrics(mailboxes, paths)

    assertDataFrameEqual(
        mailboxes,
        spark.createDataFrame([("i1", "#private", "u", "INBOX"), ("i2", "#private", None, "Sent")], MAILBOXES),
    )
    assertDataFrameEqual(
        paths, spark.createDataFrame([("#private", "u", "INBOX", "i1", 7), ("#private", "u", "Gone", None, 8)], PATHS)
    )
    assertDataFrameEqual(d.message_references(truth), spark.createDataFrame([("i1", 2), ("i3", 1)], MESSAGES))
    assertDataFrameEqual(
        mailboxes.agg(*mailbox_health),
        spark.createDataFrame([(2, 1)], "mailbox_rows long, malformed_mailbox_rows long"),
    )
    assertDataFrameEqual(
        paths.agg(*path_health), spark.createDataFrame([(2, 1)], "path_rows long, malformed_path_rows long")
    )


def test_kind_counts_give_one_figure_per_kind(spark):
    findings = spark.createDataFrame([(d.ORPHAN_PATH,), (d.ORPHAN_PATH,), (d.TWO_IDS_ONE_PATH,)], "kind string")

    counts = findings.agg(*d.kind_counts(findings)).first().asDict()

    assert counts == {**dict.fromkeys(d.KINDS, 0), d.ORPHAN_PATH: 2, d.TWO_IDS_ONE_PATH: 1}


# ---- the intermediate frames of the diagnosis, each on its own ------------------------------------------------------

PATHS_ONLY = "namespace string, user string, name string"
MAILBOX_FINDING = "kind string, mailboxId string, name string, registeredId string, registrations long"


def test_the_registered_id_of_each_path_and_the_path_each_row_names(spark):
    mailboxes, paths, _ = frames(spark, rows=[("r1", "Old")], registrations=[("New", "r1", 2)], messages=[])

    assertDataFrameEqual(
        d.registered_ids(paths),
        spark.createDataFrame([("#private", "u", "New", "r1")], f"{PATHS_ONLY}, registeredId string"),
    )
    assertDataFrameEqual(
        d.row_paths(mailboxes).select("mailboxId", "mailboxRowPath.name"),
        spark.createDataFrame([("r1", "Old")], "mailboxId string, name string"),
    )


def test_a_mailbox_row_is_an_orphan_outdated_or_on_another_ids_path_unless_claimed_or_registered_twice(spark):
    mailboxes, paths, _ = frames(
        spark,
        rows=[
            ("o1", "Orphan"),  # no path registers o1: orphan-mailbox
            ("r1", "Old"),  # r1 registered under New, Old is free: mailbox-path-outdated
            ("a1", "A"),  # A registers b1: path-points-to-another-id
            ("c1", "INBOX"),  # consistent
            ("t1", "T1"),  # registered twice: left to one-id-two-paths
            ("s1", "Shared"),  # claimed twice: left to two-ids-one-path
            ("s2", "Shared"),
        ],
        registrations=[("New", "r1", 1), ("A", "b1", 1), ("INBOX", "c1", 1), ("T1", "t1", 1), ("T2", "t1", 2)],
        messages=[],
    )

    found = d.mailbox_findings(mailboxes, d.registered_ids(paths), d.claims(mailboxes), d.registrations(paths))

    assertDataFrameEqual(
        found.select("kind", "mailboxId", "name", "registeredId", "registrations"),
        spark.createDataFrame(
            [
                (d.ORPHAN_MAILBOX, "o1", "Orphan", None, 0),
                (d.MAILBOX_PATH_OUTDATED, "r1", "Old", None, 1),
                (d.PATH_POINTS_TO_ANOTHER_ID, "a1", "A", "b1", 0),
            ],
            MAILBOX_FINDING,
        ),
    )


def test_an_orphan_path_is_a_registration_of_an_id_with_no_row_and_no_other_registration(spark):
    mailboxes, paths, _ = frames(
        spark,
        rows=[("c1", "INBOX")],
        registrations=[("Lost", "p1", 3), ("X", "p2", 1), ("Y", "p2", 2), ("INBOX", "c1", 1)],
        messages=[],
    )

    found = d.orphan_paths(paths, d.row_paths(mailboxes), d.registrations(paths))

    assertDataFrameEqual(
        found.select("kind", "mailboxId", "name", "registeredId", "registrations", "paths.written"),
        spark.createDataFrame(
            [(d.ORPHAN_PATH, "p1", "Lost", "p1", 1, [3])], f"{MAILBOX_FINDING}, written array<bigint>"
        ),
    )


def test_an_id_under_two_paths_is_found_at_its_rows_path_or_at_none_when_the_row_is_lost(spark):
    mailboxes, paths, _ = frames(
        spark,
        rows=[("t1", "T1"), ("c1", "INBOX")],
        registrations=[("T2", "t1", 9), ("T1", "t1", 5), ("X", "p2", 1), ("Y", "p2", 2), ("INBOX", "c1", 1)],
        messages=[],
    )

    found = d.ids_under_two_paths(d.registrations(paths), d.row_paths(mailboxes))

    assertDataFrameEqual(
        found.select(
            "kind", "mailboxId", "name", "registeredId", "registrations", F.col("paths.name").alias("registeredNames")
        ),
        spark.createDataFrame(
            [
                (d.ONE_ID_TWO_PATHS, "t1", "T1", "t1", 2, ["T1", "T2"]),
                (d.ONE_ID_TWO_PATHS, "p2", None, "p2", 2, ["X", "Y"]),
            ],
            f"{MAILBOX_FINDING}, registeredNames array<string>",
        ),
    )


def test_the_claimants_of_a_path_carry_their_messages_and_registrations_zero_when_they_have_none(spark):
    mailboxes, paths, messages = frames(
        spark,
        rows=[("w", "Shared"), ("l", "Shared"), ("x", "Alone")],
        registrations=[("Shared", "w", 1), ("Elsewhere", "l", 1), ("Alone", "x", 1)],
        messages=[("w", 5)],
    )

    found = d.claimants(d.claims(mailboxes), d.registrations(paths), messages)

    assertDataFrameEqual(
        found.select("name", "claimants"),
        spark.createDataFrame(
            [("Shared", [("l", 0, 1), ("w", 5, 1)])], f"name string, claimants array<{d.CLAIMANT_STRUCT}>"
        ),
    )


def test_two_ids_on_one_path_are_found_under_the_id_the_path_registers_or_under_none(spark):
    mailboxes, paths, messages = frames(
        spark,
        rows=[("w", "Shared"), ("l", "Shared"), ("f1", "Free"), ("f2", "Free"), ("c1", "INBOX")],
        registrations=[("Shared", "w", 1), ("INBOX", "c1", 1)],
        messages=[],
    )

    found = d.two_ids(d.claims(mailboxes), d.registered_ids(paths), d.registrations(paths), messages)

    assertDataFrameEqual(
        found.select("kind", "mailboxId", "name", "registeredId", F.col("claimants.mailboxId").alias("claimantIds")),
        spark.createDataFrame(
            [
                (d.TWO_IDS_ONE_PATH, "w", "Shared", "w", ["l", "w"]),
                (d.TWO_IDS_ONE_PATH, None, "Free", None, ["f1", "f2"]),
            ],
            "kind string, mailboxId string, name string, registeredId string, claimantIds array<string>",
        ),
    )


def test_each_finding_gets_its_path_as_james_writes_it_its_ids_row_path_and_message_count(spark):
    mailboxes, _, messages = frames(spark, rows=[("p1", "Renamed")], registrations=[], messages=[("p1", 3)])
    findings = spark.createDataFrame(
        [
            (d.ORPHAN_PATH, "p1", "#private", "u", "Lost", "p1", None),
            (d.ORPHAN_MAILBOX, "o1", "#private", "u", "O", None, ("#private", "u", "O")),
        ],
        f"kind string, mailboxId string, {PATHS_ONLY}, registeredId string, "
        "mailboxRowPath struct<namespace: string, user: string, name: string>",
    ).select(
        "*",
        *(
            F.lit(None).cast(f"array<{struct}>").alias(name)
            for name, struct in (("paths", d.PATH_STRUCT), ("claimants", d.CLAIMANT_STRUCT))
        ),
    )

    found = d.with_context(findings, d.row_paths(mailboxes), messages)

    assertDataFrameEqual(
        found.select(
            "kind",
            "mailboxId",
            "mailboxPath",
            F.col("mailboxRowPath.name").alias("rowName"),
            "paths",
            "claimants",
            "messages",
        ),
        spark.createDataFrame(
            [
                (d.ORPHAN_PATH, "p1", "#private:u:Lost", "Renamed", [], [], 3),  # the row of the id, found by id
                (d.ORPHAN_MAILBOX, "o1", "#private:u:O", "O", [], [], 0),
            ],
            f"kind string, mailboxId string, mailboxPath string, rowName string, paths array<{d.PATH_STRUCT}>, "
            f"claimants array<{d.CLAIMANT_STRUCT}>, messages long",
        ),
    )
