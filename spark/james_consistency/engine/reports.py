"""A run's report assembled for every repair (projections, the offline mailbox repair, the undo): a new report has
the fields every run shares (what ran, where, when, with which options) and those its repair adds
(`Repair.report_fields`: James's field names for its task); the stages fill it in; `finish` stamps its status and
duration and checks it against the published model (report.run_report); `write_report` puts it on disk.
"""

import json
import math
import time
from datetime import UTC, datetime
from pathlib import Path

from james_consistency.report.run_report import (
    NOT_APPLICABLE,
    SCHEMA_VERSION,
    ReportDraft,
    package_version,
    parse_report,
)


def _moment(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat()


def new_report(run) -> ReportDraft:
    """The report of a run that is starting: the fields every run has, then its repair's own. Every later write goes
    through the model's field names (ReportDraft)."""
    options, repair = run.options, run.repair
    return ReportDraft(
        {
            "schemaVersion": SCHEMA_VERSION,
            "version": package_version(),
            "type": repair.report_type,
            "target": repair.name,
            "mode": options.mode,
            "dryRun": options.dry_run,
            "keyspace": run.keyspace,
            "generation": repair.generation,
            "runId": run.run_id,
            "workDir": run.work_dir,
            "startedAt": _moment(run.started),
            **repair.report_fields(run),
            "fixedInconsistencies": [],
            "errors": [],
            "gates": [],
        }
    )


def not_applicable(options, run_id: str, reason: str) -> dict:
    """The report of a target that does not exist in the keyspace's James generation: nothing to do, not an error."""
    from james_consistency.engine.diff import KINDS

    now = time.time()
    report = {
        "schemaVersion": SCHEMA_VERSION,
        "version": package_version(),
        "type": f"{options.target}-consistency",
        "target": options.target,
        "mode": options.mode,
        "dryRun": options.dry_run,
        "keyspace": options.keyspace.lower(),
        "runId": run_id,
        "reason": reason,
        "inconsistencies": dict.fromkeys(KINDS, 0),
        "status": NOT_APPLICABLE,
        "result": NOT_APPLICABLE,
        "finishedAt": _moment(now),
        "durationSeconds": 0.0,
    }
    return checked(report)


def note_window_end(report: dict, progress) -> None:
    report["windowEnded"] = f"window ended, {progress.total - progress.done} ranges left"


def finish(run, status: str) -> dict:
    """The report stamped with its status, end and duration, once the repair added its last fields."""
    report = run.report
    status = run.repair.finish_report(run, status)
    finished = time.time()
    report["status"] = status
    report["result"] = status
    report["finishedAt"] = _moment(finished)
    report["durationSeconds"] = round(finished - run.started, 3)
    if run.load is not None:  # a run that scanned: its rate and what it measured
        report["load"] = run.load.as_report()
    truth_rows = report.get("rowsScanned", {}).get("truth", 0)
    if truth_rows and report["durationSeconds"] > 0:
        report["truthRowsPerSecond"] = math.floor(truth_rows / report["durationSeconds"])
    return checked(report)


def checked(report: dict) -> dict:
    """The report as JSON-ready values, checked against the model: a field the model does not know is a bug here,
    found by the suite, never a surprise for a reader."""
    parse_report(json.loads(json.dumps(report, default=str)), source=f"the report of run {report.get('runId')}")
    return report


def outcome_counts(outcomes) -> list[dict]:
    """The outcomes of a reconcile (a DataFrame of OUTCOME_SCHEMA) counted per kind and action, sorted."""
    counted = outcomes.groupBy("kind", "action").count().collect()
    return [
        {"kind": row["kind"], "action": row["action"], "count": row["count"]}
        for row in sorted(counted, key=lambda row: (row["kind"], row["action"]))
    ]


def by_action(counts: list[dict]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for entry in counts:
        totals[entry["action"]] = totals.get(entry["action"], 0) + entry["count"]
    return totals


def write_report(report: dict, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, default=str) + "\n")
    return path
