"""A running job's progress, published beside its report for whoever watches it: the command line's progress bar,
the Airflow plugin's view of a running night. The job's driver writes `<report stem>.progress.json` (next to
`<report stem>.json`) at each stage and each batch of token ranges, whole and atomically (a reader never sees half a
file), and once more when the job ends. It is not the report: nothing reads a run's outcome from it.

    {"runId": ..., "target": "messages", "keyspace": "james", "mode": "repair", "state": "running" | "ended",
     "stage": "scan", "stageNumber": 1, "stages": ["scan", "judge", ...], "startedAt": ..., "updatedAt": ...,
     "ranges": {"done": 12, "total": 64, "scannedByThisRun": 12} | null, "rowsScanned": 120000,
     "rowsPerSecond": 5300.0 | null, "estimatedScanEnd": ... | null, "endedAs": "COMPLETED" (once ended)}

`rowsPerSecond` is the rate over the last RATE_WINDOW_SECONDS of the scan; `estimatedScanEnd` when the ranges left
would be done at the pace of this run's ranges so far. Writing it never fails the job: a folder that cannot be
written is logged once and the job goes on.
"""

import json
import logging
import os
import tempfile
import time
from collections import deque
from datetime import UTC, datetime
from pathlib import Path

log = logging.getLogger("james_consistency")

PROGRESS_SUFFIX = ".progress.json"
RUNNING, ENDED = "running", "ended"
# The window the current rate is measured over: long enough to smooth a batch of ranges, short enough to follow a
# rate that changes during the night.
RATE_WINDOW_SECONDS = 60.0


def progress_path(report: str | Path) -> Path:
    """Where the job writing `report` publishes its progress: `check.json` -> `check.progress.json`."""
    report = Path(report)
    return report.with_name(report.name.removesuffix(".json") + PROGRESS_SUFFIX)


def is_progress_file(path: str | Path) -> bool:
    return Path(path).name.endswith(PROGRESS_SUFFIX)


def _moment(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds")


def read_progress(path: str | Path) -> dict | None:
    """The progress a job published at `path`; None when there is none (yet) or it cannot be read."""
    try:
        document = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) and "stage" in document else None


class ProgressFile:
    """The progress of one run, written to `path` at each change (nothing is written when `path` is None)."""

    def __init__(self, path: str | Path | None, run: dict, stages: tuple[str, ...], clock=time.time):
        self.path = Path(path) if path else None
        self.clock = clock
        self.started = clock()
        self.scan_started: float | None = None
        self.ranges_at_scan_start = 0
        self.rows: deque[tuple[float, int]] = deque()
        self.failed = False
        self.document = {
            **run,
            "state": RUNNING,
            "stage": stages[0],
            "stageNumber": 1,
            "stages": list(stages),
            "startedAt": _moment(self.started),
            "updatedAt": _moment(self.started),
            "ranges": None,
            "rowsScanned": 0,
            "rowsPerSecond": None,
            "estimatedScanEnd": None,
        }
        self._write()

    def stage(self, name: str) -> None:
        """The run entered stage `name` (one of `stages`, or a stage of its own: shown, counted as the current one)."""
        stages = self.document["stages"]
        self.document["stage"] = name
        if name in stages:
            self.document["stageNumber"] = stages.index(name) + 1
        self._write()

    def ranges(self, done: int, total: int, scanned_by_this_run: int, rows: int) -> None:
        """A batch of token ranges is done: `done` of `total` (`scanned_by_this_run` of them by this run, the rest
        by an earlier run of the cycle), `rows` read by this run so far."""
        now = self.clock()
        if self.scan_started is None:
            self.scan_started, self.ranges_at_scan_start = now, scanned_by_this_run
        self.rows.append((now, rows))
        while len(self.rows) > 2 and now - self.rows[1][0] >= RATE_WINDOW_SECONDS:
            self.rows.popleft()
        first_time, first_rows = self.rows[0]
        elapsed = now - first_time
        scanned = scanned_by_this_run - self.ranges_at_scan_start
        pace = scanned / (now - self.scan_started) if scanned and now > self.scan_started else None
        self.document.update(
            ranges={"done": done, "total": total, "scannedByThisRun": scanned_by_this_run},
            rowsScanned=rows,
            rowsPerSecond=round((rows - first_rows) / elapsed, 1) if elapsed > 0 else None,
            estimatedScanEnd=_moment(now + (total - done) / pace) if pace and done < total else None,
        )
        self._write()

    def update(self, **fields) -> None:
        """Other figures of the running job (published as they are, JSON values)."""
        self.document.update(fields)
        self._write()

    def _write(self) -> None:
        if self.path is None or self.failed:
            return
        self.document["updatedAt"] = _moment(self.clock())
        try:
            write_progress(self.path, self.document)
        except OSError as error:
            self.failed = True
            log.warning("progress not published to %s: %s", self.path, error)


def write_progress(path: Path, document: dict) -> None:
    """`document` written to `path` whole: to a file of its own first, then renamed over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=f".{path.name}.", delete=False) as written:
        json.dump(document, written)
    os.replace(written.name, path)


def mark_ended(path: str | Path, outcome: str) -> None:
    """The progress a job published at `path` marked as ended, as `outcome` (the process that ran the job does this
    once it is over, whichever way it ended); nothing when it published none."""
    document = read_progress(path)
    if document is None or document.get("state") == ENDED:
        return
    document.update(state=ENDED, endedAs=outcome, estimatedScanEnd=None, updatedAt=_moment(time.time()))
    try:
        write_progress(Path(path), document)
    except OSError as error:
        log.warning("progress not published to %s: %s", path, error)
