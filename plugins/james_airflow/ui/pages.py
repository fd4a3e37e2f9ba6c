"""What the Consistency view shows, read from the kept run reports (through the report model and the history) and the
progress the running jobs publish: no FastAPI here, so each page's content is testable on its own.

A report that is missing (a job task of the run ended without one), unreadable, no run report, or of a schema version
this package does not read becomes a `Problem` with its path, shown where the report would have been; the rest of the
page is built as usual.
"""

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from james_consistency.report.history import (
    KINDS,
    RunEntry,
    files_below,
    report_or_problem,
    reports_and_problems,
    run_entries,
    still_undoable,
)
from james_consistency.report.progress import PROGRESS_SUFFIX, RUNNING, read_progress
from james_consistency.report.run_report import RunReport

from james_airflow.runs import AIRFLOW_REPORTS_DIR, report_files, run_folder

# The nights a chart shows, per keyspace and target.
CHART_RUNS = 14
# A running job that published nothing for this long is shown as silent (its driver may be gone).
SILENT_AFTER = timedelta(minutes=15)


@dataclass(frozen=True)
class Problem:
    """A report the view could not show, and why."""

    path: str
    why: str
    run: str = ""  # "<dag>/<run folder>", or "" for a command-line report


@dataclass
class Projection:
    """One keyspace and target: its last run, and its runs for the chart (oldest first)."""

    keyspace: str
    target: str
    runs: list[RunEntry]

    @property
    def last(self) -> RunEntry:
        return self.runs[-1]

    @property
    def kinds(self) -> list[str]:
        found = self.last.by_kind
        return [*(kind for kind in KINDS if kind in found), *(kind for kind in found if kind not in KINDS)]


@dataclass
class Overview:
    projections: list[Projection]
    undoable: list[RunEntry]
    problems: list[Problem]
    running: list[dict] = field(default_factory=list)


def dag_run_of(entry_run: str) -> tuple[str, str] | None:
    """(dag id, run folder name) of an entry's run label, None for a command-line run."""
    dag, _, run = entry_run.partition("/")
    return (dag, run) if run else None


def overview(folder: Path) -> Overview:
    """Every keyspace and target with kept reports below `folder`, the runs still undoable, and the files that are no
    readable report."""
    reports, problems = reports_and_problems(folder)
    entries = sorted(run_entries(folder, reports), key=lambda entry: (entry.when, entry.run))
    groups: dict[tuple[str, str], list[RunEntry]] = {}
    for entry in entries:
        groups.setdefault((entry.keyspace, entry.target), []).append(entry)
    projections = [
        Projection(keyspace, target, runs[-CHART_RUNS:]) for (keyspace, target), runs in sorted(groups.items())
    ]
    return Overview(
        projections=projections,
        undoable=still_undoable(entries),
        problems=[
            Problem(str(path), why, _run_of(folder, path)) for path, why in problems if _report_position(folder, path)
        ],
        running=running_jobs(folder),
    )


def _report_position(folder: Path, path: Path) -> bool:
    """Whether a job writes its report there: a DAG run's folder, or the command line's (the JSON files of the runs'
    work folders below them are no reports)."""
    parts = path.relative_to(folder).parts
    return len(parts) == 1 or (len(parts) == 4 and parts[0] == AIRFLOW_REPORTS_DIR.name)


def _run_of(folder: Path, path: Path) -> str:
    relative = path.relative_to(folder)
    if len(relative.parts) == 4 and relative.parts[0] == AIRFLOW_REPORTS_DIR.name:
        return f"{relative.parts[1]}/{relative.parts[2]}"
    return ""


def running_jobs(folder: Path, now: datetime | None = None) -> list[dict]:
    """The progress of every job still running below `folder` (newest first), each with the run it belongs to
    (`run`: "<dag>/<run folder>" or ""), its `task` (the report's name) and whether it went `silent`."""
    now = now or datetime.now(UTC)
    running = []
    for path in files_below(folder, PROGRESS_SUFFIX):
        document = read_progress(path)
        if document is None or document.get("state") != RUNNING:
            continue
        updated = datetime.fromisoformat(document["updatedAt"])
        running.append(
            {
                **document,
                "run": _run_of(folder, path.with_name(path.name.removesuffix(PROGRESS_SUFFIX) + ".json")),
                "task": path.name.removesuffix(PROGRESS_SUFFIX),
                "silent": now - updated > SILENT_AFTER,
            }
        )
    return sorted(running, key=lambda document: document["startedAt"], reverse=True)


@dataclass
class StepReport:
    """One job step of a DAG run: its report, or why there is none to show; its progress while it runs."""

    task: str
    path: str
    report: RunReport | None = None
    problem: str | None = None
    progress: dict | None = None


def run_steps(dag_id: str, run_id: str, jobs: list[str]) -> list[StepReport]:
    """The steps of a DAG run that wrote (or should have written) a report: each report file of the run's folder, in
    the order `jobs` (the run's job tasks that ended, as Airflow lists them) gives, then the others by name; a job
    task without a report is a step whose report is missing."""
    folder = run_folder(dag_id, run_id)
    steps = {}
    for path in report_files(dag_id, run_id):
        report, problem = report_or_problem(path)
        steps[path.stem] = StepReport(path.stem, str(path), report=report, problem=problem)
    for task in jobs:
        if task not in steps:
            path = folder / f"{task}.json"
            steps[task] = StepReport(task, str(path), problem="missing: the task ended without writing its report")
    for name, step in steps.items():
        progress = read_progress(folder / f"{name}{PROGRESS_SUFFIX}")
        if progress is not None:
            step.progress = progress
    order = {task: index for index, task in enumerate(jobs)}
    return sorted(steps.values(), key=lambda step: (order.get(step.task, len(order)), step.task))


def run_progress(dag_id: str, run_id: str) -> list[dict]:
    """The progress each job of a DAG run published, by task."""
    folder = run_folder(dag_id, run_id)
    found = []
    for path in sorted(folder.glob(f"*{PROGRESS_SUFFIX}")) if folder.is_dir() else []:
        document = read_progress(path)
        if document is not None:
            found.append({**document, "task": path.name.removesuffix(PROGRESS_SUFFIX)})
    return found


def undoable_entry(dag_id: str, run_id: str, entries: list[RunEntry]) -> RunEntry | None:
    """The run's entry among the undoable ones, if it can still be undone."""
    wanted = f"{dag_id}/{run_folder(dag_id, run_id).name}"
    return next((entry for entry in entries if entry.run == wanted), None)


def samples(report: RunReport) -> list[tuple[str, list[dict]]]:
    """The report's samples worth showing, titled: what was fixed, what failed, what remains, the mailbox repair's
    findings."""
    found = [
        ("fixed", report.fixedInconsistencies),
        ("errors", report.errors),
        ("remaining", report.remainingSample or []),
        ("sample of the findings", report.sample or []),
        ("conflicts", report.conflictingEntries or []),
        ("not reversed", report.notReversedSample or []),
    ]
    return [(title, [_row(row) for row in rows]) for title, rows in found if rows]


def _row(row) -> dict:
    return row if isinstance(row, dict) else {"value": row}


def columns(rows: list[dict]) -> list[str]:
    return list(dict.fromkeys(name for row in rows for name in row))
