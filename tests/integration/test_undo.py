"""Taking a repair back (james_consistency.undo) on the real node: a repaired messageIdTable is as before once the
repair is undone, a second undo finds nothing to do, and a folder that is not a repair's is refused in one line."""

import json
import shutil

import pytest
from james_consistency.engine.run import RunOptions
from james_consistency.errors import OperatorError
from james_consistency.jobs.targets import run_target
from james_consistency.undo.repair import undo_run
from james_consistency_kit.faults import inject
from support.before_images import tables_with_key_entries
from support.james_platform import james_platform

FAULTS = ("projection-missing", "projection-outdated", "projection-orphan", "projection-stale-flags")


def contents(cql, keyspace: str, table: str) -> list[str]:
    return sorted(repr(tuple(row)) for row in cql.execute(f"SELECT * FROM {keyspace}.{table}"))


def repaired(spark, settings, keyspace: str, run_dir, target: str = "messages") -> dict:
    return run_target(
        spark,
        settings,
        RunOptions(target, keyspace, mode="repair", allow_destructive=True, run_dir=str(run_dir)),
    )


@pytest.fixture
def broken_messages(cql, cassandra_settings, new_keyspace, tmp_path):
    keyspace = new_keyspace("undo")
    james_platform(cql, cassandra_settings, keyspace, "3.9")
    for number, kind in enumerate(FAULTS):
        inject(
            cassandra_settings,
            keyspace=keyspace,
            kind=kind,
            rate=0.1,
            random_seed=number,
            manifest_path=str(tmp_path / kind),
        )
    return keyspace


def test_a_repair_undone_leaves_the_projection_as_it_was_and_a_second_undo_finds_nothing(
    cql, cassandra_settings, spark, broken_messages, tmp_path
):
    keyspace, run_dir = broken_messages, tmp_path / "repair"
    before = contents(cql, keyspace, "messageidtable")

    repair = repaired(spark, cassandra_settings, keyspace, run_dir)
    fixed = repair["addedMessageIdEntries"] + repair["updatedMessageIdEntries"] + repair["removedMessageIdEntries"]
    assert fixed > 0 and contents(cql, keyspace, "messageidtable") != before
    assert repair["beforeImages"]["records"] == fixed
    assert repair["beforeImages"]["counts"] == {
        "messageidtable": {
            name: count
            for name, count in (
                ("deleted", repair["removedMessageIdEntries"]),
                ("inserted", repair["addedMessageIdEntries"]),
                ("rewritten", repair["updatedMessageIdEntries"]),
            )
            if count
        }
    }
    assert tables_with_key_entries(cql, keyspace) == set(), "only a counter's undo asks which run wrote a key last"

    dry = undo_run(spark, cassandra_settings, str(run_dir))
    assert dry["mode"] == "check" and dry["undoneRunId"] == repair["runId"]
    assert dry["undoPlan"] == {"messageidtable": {"restored": fixed}}
    assert contents(cql, keyspace, "messageidtable") != before, "a dry run writes nothing"

    undone = undo_run(spark, cassandra_settings, str(run_dir), apply=True)
    assert (undone["status"], undone["restored"], undone["failedCount"]) == ("COMPLETED", fixed, 0)
    assert contents(cql, keyspace, "messageidtable") == before

    again = undo_run(spark, cassandra_settings, str(run_dir), apply=True)
    assert (again["restored"], again["alreadyAsBefore"]) == (0, fixed)
    assert contents(cql, keyspace, "messageidtable") == before


def test_a_repair_that_found_nothing_leaves_an_undo_with_nothing_to_do(
    cql, cassandra_settings, spark, new_keyspace, tmp_path
):
    keyspace = new_keyspace("undoclean")
    james_platform(cql, cassandra_settings, keyspace, "3.9")
    repair = repaired(spark, cassandra_settings, keyspace, tmp_path / "repair")
    assert repair["beforeImages"]["records"] == 0

    undone = undo_run(spark, cassandra_settings, str(tmp_path / "repair"), apply=True)

    assert (undone["status"], undone["inconsistencies"], undone["undone"]) == ("COMPLETED", {}, {})


def test_a_folder_without_before_images_is_refused_in_one_line(cassandra_settings, spark, tmp_path):
    with pytest.raises(OperatorError) as refused:
        undo_run(spark, cassandra_settings, str(tmp_path / "nothing-here"))

    assert "holds no before-images" in str(refused.value) and "\n" not in str(refused.value)


def test_truncated_or_foreign_before_images_are_refused_before_anything_is_written(
    cql, cassandra_settings, spark, broken_messages, tmp_path
):
    keyspace = broken_messages
    repaired(spark, cassandra_settings, keyspace, tmp_path / "first")
    inject(cassandra_settings, keyspace=keyspace, kind="projection-missing", rate=0.2, random_seed=9)
    repaired(spark, cassandra_settings, keyspace, tmp_path / "second")
    after_repairs = contents(cql, keyspace, "messageidtable")

    # A copy that lost a part of the images.
    truncated = tmp_path / "truncated"
    shutil.copytree(tmp_path / "first", truncated)
    lost = max((truncated / "before-images").glob("part-*.parquet"), key=lambda part: part.stat().st_size)
    lost.unlink()
    (truncated / "before-images" / f".{lost.name}.crc").unlink(missing_ok=True)
    with pytest.raises(OperatorError, match="truncated") as refused:
        undo_run(spark, cassandra_settings, str(truncated), apply=True)
    assert "\n" not in str(refused.value)

    # The images of one run under the summary of another.
    foreign = tmp_path / "foreign"
    shutil.copytree(tmp_path / "first", foreign)
    shutil.rmtree(foreign / "before-images")
    shutil.copytree(tmp_path / "second" / "before-images", foreign / "before-images")
    with pytest.raises(OperatorError, match="another run"):
        undo_run(spark, cassandra_settings, str(foreign), apply=True)

    # A summary edited by hand.
    (tmp_path / "first" / "before-images.json").write_text(json.dumps({"runId": "x"}))
    with pytest.raises(OperatorError, match="cannot be read"):
        undo_run(spark, cassandra_settings, str(tmp_path / "first"), apply=True)

    assert contents(cql, keyspace, "messageidtable") == after_repairs
