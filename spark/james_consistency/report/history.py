"""The history of the kept reports (`james-consistency history`): inconsistencies found and fixed per projection
over time.

Every job writes a JSON report (report.run_report.RunReport, read here whatever its schema version): the
command line's under `.local/reports/` (`<target>-<mode>-<time>.json`, or where
`--report` said), each Airflow DAG run's under `.local/reports/airflow/<dag>/<run>/<task>.json` (with the Great
Expectations gate results in each report's `gates`). This module reads them back, makes one entry per run of a
projection (the check, repair and verify reports of one DAG run are one entry; a command-line report is one entry),
prints them as a table; report.history_plot draws them as a PNG.

An entry's `found` is what the run's first scan diffed (check, else repair, else verify); `fixed` what its repair
added, rewrote or removed; `remaining` what its verify left; a run stopped by a gate before its diff has no `found`.
Its `undo` says whether the run can still be taken back (`james-consistency undo --run-dir`, the `undo_repair` DAG):
`yes` while its repair's before-images are within JAMES_UNDO_RETENTION_DAYS and their folder is there, else
`expired`, `removed` or `undone` (an applied undo took it back); `-` for a run that wrote nothing.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlparse

from james_consistency.report.progress import is_progress_file
from james_consistency.report.run_report import SCHEMA_VERSION, UNDO_TARGET, Mode, RunReport, Status, parse_report
from james_consistency.settings import setting


def undoable_until(started_at: datetime, retention_days: float | None = None) -> datetime:
    """When a repair started at `started_at` stops being undoable (its before-images go, by their TTL in Cassandra
    and by the housekeeping in its work folder)."""
    days = setting("JAMES_UNDO_RETENTION_DAYS") if retention_days is None else retention_days
    return started_at + timedelta(days=days)


FIX_ACTIONS = ("added", "updated", "removed")
KINDS = ("missing", "outdated", "orphan")
MODE_ORDER = {"check": 0, "repair": 1, "verify": 2}
STATUS_ORDER = ("FAILED", "PARTIAL", "WINDOW_ENDED", "COMPLETED", "NOT_APPLICABLE")
# Whether a run can still be undone.
UNDOABLE, UNDONE, EXPIRED, REMOVED = "yes", "undone", "expired", "removed"


@dataclass(frozen=True)
class Undo:
    """Whether a run that wrote something can still be taken back, from which work folder, until when."""

    state: str
    run_dir: str
    until: datetime


@dataclass
class RunEntry:
    """One run of one projection, from its reports."""

    when: datetime
    target: str
    keyspace: str
    run: str
    modes: list[str]
    found: int | None
    by_kind: dict[str, int]
    fixed: int | None
    failed: int | None
    remaining: int | None
    status: str
    failed_gates: list[str] = field(default_factory=list)
    reports: list[str] = field(default_factory=list)
    ranges: dict | None = None  # the token ranges of a ranged scan: done, total
    undo: Undo | None = None  # None: the run wrote nothing to take back

    @property
    def status_text(self) -> str:
        if self.failed_gates:
            return f"{self.status} (gate {', '.join(self.failed_gates)})"
        if self.ranges:
            return f"{self.status} ({self.ranges['done']}/{self.ranges['total']} ranges)"
        return self.status


def parse_since(text: str) -> datetime:
    """A date or date-time (ISO 8601); without a zone it is UTC."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"'{text}' is not a date (YYYY-MM-DD) or an ISO date-time") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _moment(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def read_reports(folder: Path) -> tuple[list[tuple[Path, RunReport]], int]:
    """Every run report below `folder` of a schema version this package reads (and how many JSON files were not
    one)."""
    reports, problems = reports_and_problems(folder)
    return reports, len(problems)


def reports_and_problems(folder: Path) -> tuple[list[tuple[Path, RunReport]], list[tuple[Path, str]]]:
    """Every run report below `folder` of a schema version this package reads; and each other JSON file with why it
    was left out (unreadable, no run report, a newer schema version). The jobs' progress files are not reports."""
    reports, problems = [], []
    for path in files_below(folder, ".json"):
        if is_progress_file(path):
            continue
        report, problem = report_or_problem(path)
        if report is not None:
            reports.append((path, report))
        else:
            problems.append((path, problem))
    return reports, problems


def files_below(folder: Path, suffix: str) -> list[Path]:
    """Every file below `folder` whose name ends with `suffix`, sorted. A running job's Spark output comes and goes
    while this walks (its `_temporary` folders): folders named `_…` or `.…` are not entered, and one that vanishes
    mid-walk is passed over rather than failing the walk (`Path.rglob` raises there on Python 3.11)."""
    found = []
    for root, folders, names in os.walk(folder):
        folders[:] = [name for name in folders if not name.startswith(("_", "."))]
        found.extend(Path(root) / name for name in names if name.endswith(suffix))
    return sorted(found)


def report_or_problem(path: Path) -> tuple[RunReport | None, str | None]:
    """The run report in `path`, or why there is none this package can read."""
    try:
        document = json.loads(path.read_text())
    except OSError as error:
        return None, f"unreadable: {error.strerror or error}"
    except ValueError as error:
        return None, f"not JSON: {error}"
    version = document.get("schemaVersion", 0) if isinstance(document, dict) else 0
    if isinstance(version, int) and version > SCHEMA_VERSION:
        return None, f"schemaVersion {version}: this version reads 0 to {SCHEMA_VERSION}"
    try:
        return parse_report(document, source="the file"), None
    except ValueError as error:
        return None, str(error)


def _run_label(folder: Path, path: Path) -> str:
    """`<dag>/<run>` for a DAG run's report, `cli` for a command-line one."""
    relative = path.relative_to(folder)
    if len(relative.parts) == 4 and relative.parts[0] == "airflow":
        return f"{relative.parts[1]}/{relative.parts[2]}"
    return "cli"


def _fixed(report: RunReport) -> int:
    if report.outcomes is not None:
        return sum(outcome.count for outcome in report.outcomes if outcome.action in FIX_ACTIONS)
    return sum(report.fixed_counts().values())


def _folder_is_there(path: str) -> bool:
    """Whether a before-images folder is still there; a folder on another filesystem (hdfs://, s3a://) is taken to be
    (this command has no Hadoop client: the housekeeping removes it at the end of the retention anyway)."""
    url = urlparse(path)
    if url.scheme in ("", "file"):
        return Path(url.path if url.scheme else path).is_dir()
    return True


def _undo(repairs: list[RunReport], when: datetime, undone: set[str], now: datetime) -> Undo | None:
    """Whether the run's repair can still be undone (None when it recorded no before-image)."""
    repair = next((report for report in repairs if report.beforeImages and report.beforeImages.records), None)
    if repair is None:
        return None
    images = repair.beforeImages.path.rstrip("/")
    run_dir = (repair.workDir or images.rsplit("/", 1)[0]).rstrip("/")
    until = undoable_until(_moment(repair.startedAt) or when)
    if repair.runId in undone:
        state = UNDONE
    elif now >= until:
        state = EXPIRED
    elif not _folder_is_there(images):
        state = REMOVED
    else:
        state = UNDOABLE
    return Undo(state=state, run_dir=run_dir, until=until)


def undone_run_ids(reports: list[tuple[Path, RunReport]]) -> set[str]:
    """The runs an applied undo took back completely."""
    return {
        report.undoneRunId
        for _, report in reports
        if report.target == UNDO_TARGET
        and report.mode == Mode.REPAIR
        and report.status == Status.COMPLETED
        and report.undoneRunId
    }


def _entry(
    run: str,
    reports: list[tuple[Path, RunReport]],
    undone: frozenset[str] = frozenset(),
    now: datetime | None = None,
) -> RunEntry:
    reports = sorted(reports, key=lambda item: MODE_ORDER[item[1].mode])
    first = reports[0][1]
    times = [
        _moment(report.startedAt or report.finishedAt) or datetime.fromtimestamp(path.stat().st_mtime, UTC)
        for path, report in reports
    ]
    # A report holds a diff when its scan got past the truth gate (reports before expectedProjectionRows existed:
    # when the run did not fail).
    scanned = [
        report
        for _, report in reports
        if report.expectedProjectionRows is not None or report.status in (Status.COMPLETED, Status.PARTIAL)
    ]
    not_applicable = [report for _, report in reports if report.status == Status.NOT_APPLICABLE]
    measured = scanned or not_applicable
    by_kind = measured[0].inconsistencies if measured else {}
    found = sum(by_kind.values()) if measured else None
    repairs = [report for _, report in reports if report.mode == Mode.REPAIR and not report.dryRun]
    verifies = [report for _, report in reports if report.remainingInconsistencies is not None]
    statuses = [report.status for _, report in reports]
    status = next((s for s in STATUS_ORDER if s in statuses), statuses[-1])
    gates = [gate.name for _, report in reports for gate in report.gates if not gate.success]
    ranged = next((report.ranges for _, report in reversed(reports) if report.ranges is not None), None)
    return RunEntry(
        when=min(times),
        target=first.target,
        keyspace=first.keyspace,
        run=run,
        modes=[report.mode for _, report in reports],
        found=found,
        by_kind=dict(by_kind),
        fixed=sum(_fixed(report) for report in repairs) if repairs else None,
        failed=sum(report.failedCount or 0 for report in repairs) if repairs else None,
        remaining=verifies[-1].remainingInconsistencies if verifies else None,
        status=status,
        failed_gates=gates,
        reports=[str(path) for path, _ in reports],
        ranges=ranged.model_dump() if ranged is not None else None,
        undo=_undo(repairs, min(times), undone, now or datetime.now(UTC)),
    )


def collect(
    folder: Path, target: str | None = None, since: datetime | None = None, keyspace: str | None = None
) -> tuple[list[RunEntry], int]:
    """The runs found in `folder`, oldest first per projection, filtered; and the count of skipped files."""
    reports, skipped = read_reports(folder)
    entries = [
        entry
        for entry in run_entries(folder, reports)
        if not (target and entry.target != target)
        and not (keyspace and entry.keyspace != keyspace.lower())
        and not (since and entry.when < since)
    ]
    return sorted(entries, key=lambda e: (e.target, e.when, e.run)), skipped


def run_entries(folder: Path, reports: list[tuple[Path, RunReport]]) -> list[RunEntry]:
    """One entry per run of a projection among `reports` (read below `folder`), in no particular order."""
    undone, now = undone_run_ids(reports), datetime.now(UTC)
    groups: dict[tuple[str, str], list[tuple[Path, RunReport]]] = {}
    for path, report in reports:
        run = _run_label(folder, path)
        # A DAG run folder holds every step of the run; a command-line report is a run of its own.
        key = (str(path.parent) if run != "cli" else str(path), report.target)
        groups.setdefault(key, []).append((path, report))
    return [_entry(_run_label(folder, members[0][0]), members, undone, now) for members in groups.values()]


def still_undoable(entries: list[RunEntry]) -> list[RunEntry]:
    """The entries that can still be undone, newest first."""
    undoable = [entry for entry in entries if entry.undo is not None and entry.undo.state == UNDOABLE]
    return sorted(undoable, key=lambda entry: entry.when, reverse=True)


def undoable_runs(folder: Path) -> list[RunEntry]:
    """The runs below `folder` that can still be undone, newest first."""
    return still_undoable(collect(folder)[0])


def undoable_lines(entries: list[RunEntry]) -> list[str]:
    """One line per undoable run: what it repaired, until when, and the command that takes it back."""
    return [
        f"{entry.target} {entry.run} on {entry.keyspace}, until {entry.undo.until.astimezone(UTC):%Y-%m-%d %H:%M} "
        f"UTC: james-consistency undo --run-dir {entry.undo.run_dir}"
        for entry in entries
    ]


def _number(value: int | None) -> str:
    return "-" if value is None else str(value)


NUMBERS = ("found", *KINDS, "fixed", "remaining")
COLUMNS = ("time (UTC)", "projection", "keyspace", "run", "modes", *NUMBERS, "undo", "status")


def table_lines(entries: list[RunEntry]) -> list[str]:
    """The table: one line per run, grouped by projection, oldest first."""
    rows = [
        (
            entry.when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S"),
            entry.target,
            entry.keyspace,
            entry.run,
            "+".join(entry.modes),
            _number(entry.found),
            *(_number(entry.by_kind.get(kind)) if entry.found is not None else "-" for kind in KINDS),
            _number(entry.fixed),
            _number(entry.remaining),
            entry.undo.state if entry.undo else "-",
            entry.status_text,
        )
        for entry in entries
    ]
    widths = [max(len(column), *(len(row[i]) for row in rows)) for i, column in enumerate(COLUMNS)]
    numeric = {COLUMNS.index(name) for name in NUMBERS}

    def line(cells) -> str:
        return "  ".join(
            cell.rjust(widths[i]) if i in numeric else cell.ljust(widths[i]) for i, cell in enumerate(cells)
        ).rstrip()

    return [line(COLUMNS), *(line(row) for row in rows)]


def totals_lines(entries: list[RunEntry]) -> list[str]:
    """Per projection: runs, found, fixed, and how the last run ended."""
    lines = []
    for target in sorted({entry.target for entry in entries}):
        runs = [entry for entry in entries if entry.target == target]
        found = sum(entry.found or 0 for entry in runs)
        fixed = sum(entry.fixed or 0 for entry in runs)
        last = runs[-1]
        lines.append(
            f"{target}: {len(runs)} runs, {found} inconsistencies found, {fixed} fixed; "
            f"last run {last.when.astimezone(UTC):%Y-%m-%d %H:%M} {last.status_text}"
        )
    return lines
