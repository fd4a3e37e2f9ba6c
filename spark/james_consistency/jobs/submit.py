"""A job submitted from the command line: spark-submit of its entry point, exactly as the DAGs run it, its output
kept beside its report and the run told on the terminal in a few lines. While it runs, its progress (the file its
driver publishes beside the report, report.progress) is shown: a progress bar on a terminal, a plain line now and
then otherwise, nothing with --quiet."""

import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

from james_consistency.report.exit_codes import EXIT_CODE_MEANINGS
from james_consistency.report.progress import progress_path, read_progress

# How a job says why it stopped (james_consistency.jobs.main.print_error), one line on its standard error.
JOB_ERROR = "james-consistency: error:"
# How often the progress file is read, and how often a plain line is printed when nothing else changed.
POLL_SECONDS = 0.5
PLAIN_LINE_SECONDS = 30.0
# A job shorter than this shows no bar at all.
BAR_DELAY_SECONDS = 2.0


def job_log(report) -> Path:
    """Where a command-line run's whole output goes: beside its report."""
    return Path(f"{report}.log")


def submit(entry: str, arguments: list[str], settings, report: str, quiet: bool = False) -> int:
    """spark-submit of the entry point, as the DAGs run it. Its whole output (Spark's and Python's, stack traces
    included) goes to a log file beside the report; the terminal gets its progress while it runs (unless `quiet`),
    then the run in a few lines: its summary (the cause when it failed), its failed gates and where its report is, or
    the job's error line when it stopped before it had a report, then the log's path when the run did not
    complete."""
    from james_consistency.report.run_report import read_report, summary_line
    from james_consistency.runtime.package_data import entry_point
    from james_consistency.runtime.spark_env import spark_submit_command

    log = job_log(report)
    log.parent.mkdir(parents=True, exist_ok=True)
    command = spark_submit_command(entry_point(entry), arguments, settings)
    started = time.time()
    display = None if quiet else (ProgressBar() if sys.stdout.isatty() else ProgressLines())
    with log.open("w") as output:
        job = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
        code = watch(job, progress_path(report), started, display)
    written = Path(report)
    if written.exists() and written.stat().st_mtime >= started:
        ran = read_report(written)
        print(summary_line(ran))
        for gate in ran.gates:
            if not gate.success and gate.blocking:
                print(f"gate {gate.name} FAILED: {gate.failed_expectations}")
        print(f"report: {written}")
    else:
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith(JOB_ERROR):
                print(line, file=sys.stderr)
    if code != 0:
        print(f"log: {log} (exit code {code}: {EXIT_CODE_MEANINGS.get(code, 'failed')})", file=sys.stderr)
    return code


def watch(job: subprocess.Popen, progress: Path, started: float, display) -> int:
    """Wait for the job, showing the progress it publishes (a file of this run's: written after `started`)."""
    try:
        while True:
            try:
                return job.wait(timeout=POLL_SECONDS)
            except subprocess.TimeoutExpired:
                pass
            if display is None:
                continue
            document = read_progress(progress) if _written_since(progress, started) else None
            if document is not None or isinstance(display, ProgressBar):
                display.show(document)
    except KeyboardInterrupt:
        job.terminate()
        raise
    finally:
        if display is not None:
            display.close()


def _written_since(path: Path, moment: float) -> bool:
    try:
        return path.stat().st_mtime >= moment
    except OSError:
        return False


def _count(value: int | float) -> str:
    return f"{value:,.0f}"


def describe(document: dict) -> dict[str, str]:
    """What is shown of a job's progress: where it is, and its figures (rows read, rate, when its scan may end)."""
    ranges = document.get("ranges")
    where = f"{document['stage']} ({document.get('stageNumber', 1)}/{len(document.get('stages', ())) or 1})"
    figures = {}
    if ranges:
        figures["ranges"] = f"{ranges['done']}/{ranges['total']}"
    if document.get("rowsScanned"):
        figures["rows"] = _count(document["rowsScanned"])
    if document.get("rowsPerSecond") is not None:
        figures["rate"] = f"{_count(document['rowsPerSecond'])} rows/s"
    if document.get("estimatedScanEnd"):
        end = datetime.fromisoformat(document["estimatedScanEnd"]).astimezone()
        figures["scan ends"] = f"~{end:%H:%M:%S}"
    return {"where": where, **figures}


class ProgressBar:
    """A bar on a terminal (tqdm), once the job has run BAR_DELAY_SECONDS: ranges done of the total during a ranged
    scan, else stages done of the total (before the job publishes anything: Spark starting)."""

    def __init__(self):
        self.opened = time.monotonic()
        self.bar = None
        self.unit = None

    def show(self, document: dict | None) -> None:
        from tqdm import tqdm

        ranges = (document or {}).get("ranges")
        if ranges:
            unit, done, total = "ranges", ranges["done"], ranges["total"]
        elif document:
            unit, done, total = "stages", document.get("stageNumber", 1) - 1, len(document.get("stages", ())) or 1
        else:
            unit, done, total = "stages", 0, 1
        if document is None:
            where, figures = "starting Spark", ""
        else:
            shown = describe(document)
            shown.pop("ranges", None)
            where = f"{document.get('target', '')} {document.get('mode', '')}: {shown.pop('where')}"
            figures = ", ".join(f"{name} {value}" for name, value in shown.items())
        if self.bar is None or unit != self.unit:
            self.close()
            self.bar = tqdm(
                total=total,
                desc=where,
                postfix=figures or None,
                unit=unit,
                file=sys.stdout,
                delay=max(BAR_DELAY_SECONDS - (time.monotonic() - self.opened), 0),
                leave=False,
                dynamic_ncols=True,
                bar_format="{desc} {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} {unit} [{elapsed}{postfix}]",
            )
            self.unit = unit
        self.bar.set_description_str(where, refresh=False)
        self.bar.set_postfix_str(figures, refresh=False)
        self.bar.total = total
        self.bar.update(done - self.bar.n)
        if time.monotonic() - self.opened >= BAR_DELAY_SECONDS:
            self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class ProgressLines:
    """A plain line when the stage changes, and every PLAIN_LINE_SECONDS while something moves (a log, a pipe)."""

    def __init__(self, every: float = PLAIN_LINE_SECONDS):
        self.every = every
        self.last_line = ""
        self.last_time = 0.0
        self.last_stage = None

    def show(self, document: dict) -> None:
        shown = describe(document)
        line = (
            f"{document.get('target', '')} {document.get('mode', '')} on {document.get('keyspace', '')}: "
            + ", ".join([shown.pop("where"), *(f"{name} {value}" for name, value in shown.items())])
        )
        now = time.monotonic()
        stage_changed = document["stage"] != self.last_stage
        if line != self.last_line and (stage_changed or now - self.last_time >= self.every):
            print(line, flush=True)
            self.last_line, self.last_time, self.last_stage = line, now, document["stage"]

    def close(self) -> None:
        pass
