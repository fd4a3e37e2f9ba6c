"""What a gate's verdict turns into (GateResult), judged by Great Expectations on the one row of figures the engine
measured (validate_figures) or on a Spark DataFrame, without Cassandra: the expectation that failed, on which column,
what was observed."""

from pathlib import Path

import pytest
from james_consistency import gates
from james_consistency.projections import CHECKS, TARGETS, projection_spec

HEALTHY_TRUTH = {
    "truth_rows": 10,
    "null_messageid": 0,
    "null_mailboxid": 0,
    "null_uid": 0,
    "uid_below_1": 0,
    "null_modseq": 0,
    "negative_modseq": 0,
    "duplicate_truth_keys": 0,
}


@pytest.fixture(scope="module", autouse=True)
def gx_root(tmp_path_factory):
    """Validation results and Data Docs go to a folder of these tests, not to the operator's (one for the module:
    a Great Expectations context takes seconds to build)."""
    root = tmp_path_factory.mktemp("gx")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JAMES_GX_ROOT", str(root))
        yield root


def test_a_healthy_truth_passes_every_expectation_of_its_suite():
    result = gates.validate_figures(HEALTHY_TRUTH, "messages_truth_health")

    assert (result.name, result.success, result.evaluated, result.failed_expectations) == (
        "messages_truth_health",
        True,
        7,
        [],
    )
    assert result.summary() == "gate messages_truth_health: passed (7 expectations)"


def test_each_failed_expectation_names_its_column_and_what_was_observed():
    figures = {**HEALTHY_TRUTH, "uid_below_1": 2, "duplicate_truth_keys": 1}

    result = gates.validate_figures(figures, "messages_truth_health", asset="messages_truth_health")

    assert not result.success
    assert result.evaluated == 7
    failed = {(f["expectation"], f["target"], f["observed"]) for f in result.failed_expectations}
    assert failed == {
        ("expect_column_values_to_be_between", "uid_below_1", 1),
        ("expect_column_values_to_be_between", "duplicate_truth_keys", 1),
    }, "observed is the number of rows (here: the one figures row) outside the bounds"
    samples = {f["target"]: f["sample"] for f in result.failed_expectations}
    assert samples == {"uid_below_1": [2], "duplicate_truth_keys": [1]}, "the offending figure itself"
    assert result.summary().startswith("gate messages_truth_health: FAILED 2/7: ")
    assert "uid_below_1" in result.summary() and "duplicate_truth_keys" in result.summary()


def test_the_plan_safety_threshold_is_a_parameter_of_the_run():
    plan = {"destructive_share": 0.25, "destructive_rows": 5, "projection_rows": 20}

    too_destructive = gates.validate_figures(plan, "plan_safety", {"max_destructive_share": 0.1})
    allowed = gates.validate_figures(plan, "plan_safety", {"max_destructive_share": 1.0})

    assert not too_destructive.success
    assert [(f["target"], f["observed"], f["sample"]) for f in too_destructive.failed_expectations] == [
        ("destructive_share", 1, [0.25])
    ]
    assert allowed.success and allowed.failed_expectations == []


def test_results_and_data_docs_are_kept_under_the_gx_root(gx_root):
    result = gates.validate_figures(HEALTHY_TRUTH, "messages_truth_health")

    assert result.results_dir == str(gx_root / "gx" / "uncommitted" / "validations" / "messages_truth_health")
    assert result.data_docs == str(gx_root / "gx" / "uncommitted" / "data_docs" / "local_site" / "index.html")
    assert (gx_root / "gx" / "uncommitted" / "data_docs" / "local_site" / "index.html").is_file()
    # The page of this very validation, which the site's index lists among the others.
    page = Path(result.data_docs_page)
    assert page.is_file() and page.parent.parent.parent.name == "messages_truth_health"
    assert "messages_truth_health" in page.read_text()


def test_a_later_gate_writes_its_data_docs_page_without_compiling_a_template_again(gx_root, monkeypatch):
    import jinja2

    compiled = []
    compile_template = jinja2.Environment.compile
    monkeypatch.setattr(
        jinja2.Environment, "compile", lambda env, *args, **kw: compiled.append(1) or compile_template(env, *args, **kw)
    )
    pages = gx_root / "gx" / "uncommitted" / "data_docs" / "local_site" / "validations" / "plan_safety"
    figures = {"destructive_share": 0.5, "destructive_rows": 5, "projection_rows": 10}

    gates.validate_figures(figures, "plan_safety", {"max_destructive_share": 0.05})
    first = len(compiled)
    failed = gates.validate_figures(figures, "plan_safety", {"max_destructive_share": 0.05})

    assert not failed.success
    assert len(compiled) == first, "the second gate's pages were rendered from the templates compiled before"
    written = sorted(pages.rglob("*.html"))
    newest = written[-1].read_text()
    assert len(written) >= 2 and "destructive_share" in newest and "Unsuccessful" in newest


def test_after_a_repair_each_confirmed_remaining_difference_fails_projection_matches_truth(spark):
    remaining = spark.createDataFrame(
        [("m", 1, "missing"), ("m", 2, "outdated")], "mailboxid string, uid long, kind string"
    )

    result = gates.validate(remaining, "projection_matches_truth", asset="messages_remaining")
    nothing_left = gates.validate(remaining.limit(0), "projection_matches_truth", asset="messages_remaining")

    assert [(f["expectation"], f["target"], f["observed"]) for f in result.failed_expectations] == [
        ("expect_table_row_count_to_equal", "table", 2)
    ]
    assert not result.success and nothing_left.success


def test_a_counted_remainder_is_judged_in_pandas_when_small_and_in_spark_when_large(spark, monkeypatch):
    remaining = spark.createDataFrame(
        [("m", 1, "missing"), ("m", 2, "outdated")], "mailboxid string, uid long, kind string"
    )

    in_pandas = gates.validate_counted(remaining, 2, "projection_matches_truth", asset="messages_remaining")
    nothing_left = gates.validate_counted(remaining.limit(0), 0, "projection_matches_truth", asset="messages_remaining")
    monkeypatch.setattr(gates, "PANDAS_ROWS", 1)
    in_spark = gates.validate_counted(remaining, 2, "projection_matches_truth", asset="messages_remaining")

    for result in (in_pandas, in_spark):
        assert [(f["expectation"], f["observed"]) for f in result.failed_expectations] == [
            ("expect_table_row_count_to_equal", 2)
        ]
        assert not result.success
    assert nothing_left.success


def test_the_mailbox_repair_gate_objects_to_every_fixable_kind_left_never_to_conflicts(spark):
    left = spark.createDataFrame(
        [("two-ids-one-path",), ("path-points-to-another-id",), ("orphan-path",), ("orphan-path",)], "kind string"
    )

    result = gates.validate(left, "mailbox_repaired")
    conflicts_only = gates.validate(left.where("kind != 'orphan-path'"), "mailbox_repaired")

    assert [(f["target"], f["observed"], f["sample"]) for f in result.failed_expectations] == [
        ("kind", 2, ["orphan-path", "orphan-path"])
    ]
    assert conflicts_only.success


TRUTH_COLUMNS = (
    "messageid string, mailboxid string, uid long, modseq long, fullcontentoctets long, aggregateid string, "
    "eventid int, event string, id string, attachmentid string"
)


def suite_columns(name: str) -> set[str]:
    return {expectation["kwargs"]["column"] for expectation in gates.load_suite(name).to_json_dict()["expectations"]}


@pytest.mark.parametrize(
    ("target", "generation"),
    [
        (target, generation)
        for target in (*TARGETS, *CHECKS)
        for generation in ("3.9", "3.5")
        if (target, generation) != ("aclv2", "3.5")  # no aclv2 in 3.5 (test_projection_specs)
    ],
)
def test_each_truth_suite_judges_exactly_the_figures_its_scan_measures(spark, target, generation):
    spec = projection_spec(target, generation, keyspace_tables=frozenset({"currentquota"}))
    # The scan's figures (run.scan): the spec's problems, and the keys several truth rows claim.
    measured = set(spark.createDataFrame([], TRUTH_COLUMNS).agg(*spec.health.metrics()).columns)

    assert suite_columns(spec.health.suite) == measured | {"duplicate_truth_keys"}
