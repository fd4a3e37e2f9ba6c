"""Every target's spec builds, for both James schema generations, and a spec that contradicts itself fails when built,
naming what is wrong."""

import pytest
from james_consistency.engine.spec import (
    CandidateHints,
    Projection,
    ProjectionSpec,
    ReportNames,
    Sample,
    SpecError,
    Truth,
    TruthHealth,
    UnreadableTruth,
    Writing,
)
from james_consistency.errors import NotApplicable
from james_consistency.projections import CHECKS, TARGETS, projection_spec

QUOTA_TABLES = {
    "3.6 to 3.8 (currentQuota)": frozenset({"currentquota"}),
    "3.9 (quotaCurrentValue)": frozenset({"quotacurrentvalue"}),
}


@pytest.mark.parametrize("generation", ["3.9", "3.5"])
@pytest.mark.parametrize("target", [*TARGETS, *CHECKS])
def test_every_target_builds_a_consistent_spec(target, generation):
    try:
        spec = projection_spec(target, generation, keyspace_tables=frozenset({"currentquota"}))
    except NotApplicable:
        assert (target, generation) == ("aclv2", "3.5")
        return
    assert spec.name == target
    assert set(spec.key) <= set(spec.columns)
    assert spec.truth.table in spec.truth.tables
    assert spec.health.suite


@pytest.mark.parametrize("tables", QUOTA_TABLES.values(), ids=QUOTA_TABLES.keys())
def test_quotas_follow_the_table_the_keyspace_has(tables):
    spec = projection_spec("quotas", "3.9", keyspace_tables=tables)
    assert spec.projection_table.lower() in tables


@pytest.mark.parametrize("generation", ["3.9", "3.5"])
def test_where_james_does_not_handle_recent_no_spec_compares_or_writes_it(monkeypatch, generation):
    monkeypatch.setenv("JAMES_HANDLE_RECENT", "0")

    messages = projection_spec("messages", generation)
    with pytest.raises(NotApplicable, match="handleRecent=false"):
        projection_spec("recent", generation)

    assert "flagrecent" not in messages.columns and "flagrecent" not in messages.truth.columns
    assert {"flagseen", "flagdeleted", "userflags"} <= set(messages.value_columns)
    monkeypatch.delenv("JAMES_HANDLE_RECENT")
    assert "flagrecent" in projection_spec("messages", generation).columns


def _spec(**changes) -> ProjectionSpec:
    parts = dict(
        name="example",
        truth=Truth("truth", ("id", "value")),
        projection=Projection("projection", key=("id",), columns=("id", "value"), cql_types={"id": "uuid"}),
        derive=lambda truth: truth,
        recheck=lambda *args: None,
        report_names=ReportNames("a", "b", "c", "d", "e"),
        health=TruthHealth("example_truth_health"),
    )
    return ProjectionSpec(**{**parts, **changes})


def test_a_well_formed_spec_builds():
    spec = _spec(hints=CandidateHints(("messageid",)), sample=Sample(("id", "messageid"), {"id": "Id"}))
    assert spec.value_columns == ("value",)
    assert spec.hint_columns == ("messageid",)


@pytest.mark.parametrize(
    "build, complaint",
    [
        (lambda: Truth("truth"), "name its columns or a reader"),
        (lambda: Truth("truth", ("id",), extra_tables=("other",)), "read only by a reader"),
        (lambda: Projection("p", key=("id",), columns=("value",), cql_types={"id": "uuid"}), "not among its columns"),
        (lambda: Projection("p", key=("id",), columns=("id",), cql_types={}), "have no CQL type"),
        (
            lambda: Projection("p", ("id",), ("id",), {"id": "uuid"}, destructive_kinds=("gone",)),
            "unknown fix kinds",
        ),
        (lambda: CandidateHints(()), "at least one column"),
        (lambda: Sample(("id",), {"other": "Other"}), "does not hold"),
        (lambda: UnreadableTruth(lambda truth: truth, scope_column=""), "the projection column it scopes"),
        (lambda: _spec(sample=Sample(("nowhere",))), "neither projection nor hint columns"),
        (lambda: _spec(unreadable=UnreadableTruth(lambda truth: truth, "mailbox")), "not a projection column"),
        (lambda: _spec(writing=Writing(group_columns=("root",))), "are not projection columns"),
        (lambda: _spec(mirrored_truth=True), "health names the truth columns it reads"),
        (
            lambda: _spec(mirrored_truth=True, health=TruthHealth("suite", columns=("elsewhere",))),
            r"reads \(not \['elsewhere'\]\)",
        ),
        (
            lambda: _spec(mirrored_truth=True, truth=Truth("truth", read=lambda read: None)),
            "one table holding every projection column",
        ),
    ],
)
def test_a_contradictory_spec_fails_when_built(build, complaint):
    with pytest.raises(SpecError, match=complaint):
        build()
