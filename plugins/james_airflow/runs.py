"""Where each DAG run keeps its job reports (one folder per run, kept for the history), and how to read them: through
the run report's model (james_consistency.report.run_report.RunReport), never by bare keys."""

import re
from pathlib import Path

from james_consistency.report.progress import is_progress_file
from james_consistency.report.run_report import RunReport
from james_consistency.report.run_report import read_report as read_report_file
from james_consistency.runtime.paths import REPORTS_DIR

AIRFLOW_REPORTS_DIR = REPORTS_DIR / "airflow"


def run_folder(dag_id: str, run_id: str) -> Path:
    return AIRFLOW_REPORTS_DIR / dag_id / re.sub(r"[^A-Za-z0-9_.-]", "_", run_id)


def report_files(dag_id: str, run_id: str) -> list[Path]:
    """The report files of a DAG run's folder, by name; the progress each job publishes beside its report is not one."""
    return [path for path in sorted(run_folder(dag_id, run_id).glob("*.json")) if not is_progress_file(path)]


def report_path(dag_id: str, run_id: str, step: str) -> Path:
    return run_folder(dag_id, run_id) / f"{step}.json"


def read_report(dag_id: str, run_id: str, step: str) -> RunReport | None:
    """The report a step of a DAG run wrote; None when it wrote none (it failed before, or did not run)."""
    path = report_path(dag_id, run_id, step)
    return read_report_file(path) if path.exists() else None
