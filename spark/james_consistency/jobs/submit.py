"""A job submitted from the command line: spark-submit of its entry point, exactly as the DAGs run it, its output
kept beside its report and the run told on the terminal in a few lines."""

import subprocess
import sys
import time
from pathlib import Path

from james_consistency.report.exit_codes import EXIT_CODE_MEANINGS

# How a job says why it stopped (james_consistency.jobs.main.print_error), one line on its standard error.
JOB_ERROR = "james-consistency: error:"


def job_log(report) -> Path:
    """Where a command-line run's whole output goes: beside its report."""
    return Path(f"{report}.log")


def submit(entry: str, arguments: list[str], settings, report: str) -> int:
    """spark-submit of the entry point, as the DAGs run it. Its whole output (Spark's and Python's, stack traces
    included) goes to a log file beside the report; the terminal gets the run in a few lines: its summary (the
    cause when it failed), its failed gates and where its report is, or the job's error line when it stopped before
    it had a report, then the log's path when the run did not complete."""
    from james_consistency.report.run_report import read_report, summary_line
    from james_consistency.runtime.package_data import entry_point
    from james_consistency.runtime.spark_env import spark_submit_command

    log = job_log(report)
    log.parent.mkdir(parents=True, exist_ok=True)
    command = spark_submit_command(entry_point(entry), arguments, settings)
    started = time.time()
    with log.open("w") as output:
        code = subprocess.run(command, check=False, stdout=output, stderr=subprocess.STDOUT).returncode
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
