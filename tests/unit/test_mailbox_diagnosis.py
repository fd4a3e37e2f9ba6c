"""The mailbox diagnosis as a pure DataFrame function, on tiny local DataFrames: which kind each row gets."""

from james_consistency.mailboxes import diagnosis as d

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


def test_two_ids_swapped_between_two_paths_stay_a_reported_conflict(spark):
    found = findings(spark, {"a": "A", "b": "B"}, {"A": "b", "B": "a"})

    assert found == {(d.PATH_POINTS_TO_ANOTHER_ID, "A"): "a", (d.PATH_POINTS_TO_ANOTHER_ID, "B"): "b"}


def test_not_realignable_when_another_row_claims_the_registration_or_the_id_is_registered_twice(spark):
    claimed = findings(spark, {"id1": "abc", "id2": "abc", "id3": "xyz"}, {"abc": "id2", "xyz": "id1"})
    twice = findings(spark, {"id1": "abc", "id2": "abc"}, {"abc": "id2", "xyz": "id1", "xyz2": "id1"})

    assert claimed == {(d.TWO_IDS_ONE_PATH, "abc"): "id2", (d.PATH_POINTS_TO_ANOTHER_ID, "xyz"): "id3"}
    assert twice == {(d.TWO_IDS_ONE_PATH, "abc"): "id2", (d.ONE_ID_TWO_PATHS, "abc"): "id1"}
