"""The run report as a published contract: the committed JSON Schema is the model's, every projection's James field
names are in it, a report from before the schema was published is still read, and a report the model does not know
is refused with the file's name."""

import json

import jsonschema
import pytest
from james_consistency.projections import CHECKS, TARGETS, projection_spec
from james_consistency.report.run_report import SCHEMA_VERSION, RunReport, json_schema, parse_report, read_report
from james_consistency.runtime.paths import PROJECT_ROOT

PUBLISHED = PROJECT_ROOT / "docs" / "run-report.schema.json"
# Tables the quota and attachment specs look for to choose their truth.
EVERY_TABLE = frozenset({"quotacurrentvalue", "currentquota", "attachmentv2", "attachmentmessageid"})

# A report of the last release before `schemaVersion` (what `history` finds in an operator's report folder).
BEFORE_THE_SCHEMA = {
    "type": "messages-consistency",
    "target": "messages",
    "mode": "repair",
    "dryRun": False,
    "keyspace": "james",
    "generation": "3.9",
    "truthTable": "imapUidTable",
    "projectionTable": "messageIdTable",
    "runId": "20261125T023000-1a2b3c",
    "workDir": "/var/lib/james-consistency/runs/20261125T023000-1a2b3c",
    "startedAt": "2026-11-25T02:30:00+00:00",
    "processedImapUidEntries": 1000,
    "processedMessageIdEntries": 998,
    "addedMessageIdEntries": 2,
    "updatedMessageIdEntries": 1,
    "removedMessageIdEntries": 0,
    "inconsistencies": {"missing": 2, "outdated": 1, "orphan": 0},
    "fixedInconsistencies": [{"mailboxId": "m", "messageId": "x", "uid": 7}],
    "errors": [],
    "runningOptions": {"messagesPerSecond": 0.0, "truthConsistency": "LOCAL_QUORUM"},
    "gates": [{"name": "messages_truth_health", "success": True, "evaluated": 5, "failed_expectations": []}],
    "outcomes": [
        {"kind": "missing", "action": "added", "count": 2},
        {"kind": "outdated", "action": "updated", "count": 1},
    ],
    "alreadyConsistentOnRecheck": 0,
    "failedCount": 0,
    "status": "COMPLETED",
    "result": "COMPLETED",
    "finishedAt": "2026-11-25T02:31:00+00:00",
    "durationSeconds": 60.0,
    "truthRowsPerSecond": 16,
}


def test_the_published_schema_is_the_one_the_model_generates():
    published = json.loads(PUBLISHED.read_text())

    regenerate = "python -m james_consistency.report.run_report > docs/run-report.schema.json"
    assert published == json_schema(), f"run `{regenerate}`"


def test_every_james_field_name_of_every_projection_is_a_field_of_the_report():
    names = set()
    for target in (*TARGETS, *CHECKS):
        for generation in ("3.9", "3.5"):
            try:
                spec = projection_spec(target, generation, keyspace_tables=EVERY_TABLE)
            except Exception:  # noqa: BLE001 - a target this generation does not have (aclv2 in 3.5)
                continue
            report_names = spec.report_names
            names |= {getattr(report_names, field) for field in report_names.__dataclass_fields__}

    assert sorted(names - set(RunReport.model_fields)) == []


def test_a_report_from_before_the_schema_is_read_as_version_0(tmp_path):
    path = tmp_path / "messages-repair.json"
    path.write_text(json.dumps(BEFORE_THE_SCHEMA))

    report = read_report(path)

    assert (report.schemaVersion, report.version) == (0, None)
    assert report.found == 3 and report.fixed_counts() == {
        "addedMessageIdEntries": 2,
        "updatedMessageIdEntries": 1,
        "removedMessageIdEntries": 0,
    }
    jsonschema.validate(BEFORE_THE_SCHEMA, json.loads(PUBLISHED.read_text()))


@pytest.fixture
def refused_by_design(tmp_path):
    """Where a test writes reports the schema must refuse; removed afterwards, so that the session's own check of
    every report written (tests/conftest.py) sees only the real ones."""
    folder = tmp_path / "refused-by-design"
    folder.mkdir()
    yield folder
    for path in folder.rglob("*.json"):
        path.unlink()


def test_a_report_the_model_does_not_know_is_refused_naming_the_file_and_the_field(refused_by_design):
    path = refused_by_design / "odd.json"
    path.write_text(json.dumps({**BEFORE_THE_SCHEMA, "status": "MAYBE", "mystery": 1}))

    with pytest.raises(ValueError) as refused:
        read_report(path)

    assert str(path) in str(refused.value)
    assert "status" in str(refused.value) and "mystery" in str(refused.value)


def test_a_report_as_written_keeps_its_james_names_and_its_schema_version():
    written = {**BEFORE_THE_SCHEMA, "schemaVersion": SCHEMA_VERSION, "version": "0.2.0"}

    assert parse_report(written).as_json() == written


def test_the_sessions_check_finds_the_reports_written_and_names_the_one_the_schema_refuses(refused_by_design):
    from support.reports import invalid_reports, reports_written_since

    (refused_by_design / "airflow" / "message_consistency" / "run").mkdir(parents=True)
    good = refused_by_design / "airflow" / "message_consistency" / "run" / "check.json"
    good.write_text(json.dumps(BEFORE_THE_SCHEMA))
    bad = refused_by_design / "messages-repair.json"
    bad.write_text(json.dumps({**BEFORE_THE_SCHEMA, "failedCount": "none"}))
    (refused_by_design / "bench.json").write_text(json.dumps({"phases": {}}))  # not a run report

    written = reports_written_since(0, [refused_by_design])

    assert sorted(path.name for path, _ in written) == ["check.json", "messages-repair.json"]
    assert [problem.split(":")[0] for problem in invalid_reports(written)] == [str(bad)]


def test_a_report_being_written_refuses_a_field_the_model_does_not_have_where_it_is_written():
    from james_consistency.report.run_report import ReportDraft

    draft = ReportDraft({"target": "messages", "mode": "check"})
    draft["addedMessageIdEntries"] = 3
    draft.setdefault("gates", []).append({"name": "plan_safety"})

    with pytest.raises(KeyError, match="'addedMessageIdEntrys' is not a field of the run report"):
        draft["addedMessageIdEntrys"] = 3
    with pytest.raises(KeyError, match="'fixed' is not a field"):
        draft.update(fixed=1)
    with pytest.raises(KeyError, match="'found' is not a field"):
        ReportDraft({"found": 1})
    assert draft == {
        "target": "messages",
        "mode": "check",
        "addedMessageIdEntries": 3,
        "gates": [{"name": "plan_safety"}],
    }
