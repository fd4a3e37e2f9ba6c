"""Where each DAG run keeps its job reports (one folder per run, kept for the history), and how to read them."""

import json
import re
from pathlib import Path

from james_consistency.paths import REPORTS_DIR

AIRFLOW_REPORTS_DIR = REPORTS_DIR / "airflow"


def run_folder(dag_id: str, run_id: str) -> Path:
    return AIRFLOW_REPORTS_DIR / dag_id / re.sub(r"[^A-Za-z0-9_.-]", "_", run_id)


def report_path(dag_id: str, run_id: str, step: str) -> Path:
    return run_folder(dag_id, run_id) / f"{step}.json"


def read_report(dag_id: str, run_id: str, step: str) -> dict | None:
    path = report_path(dag_id, run_id, step)
    return json.loads(path.read_text()) if path.exists() else None


def inconsistencies_found(report: dict) -> int:
    return sum(report.get("inconsistencies", {}).values())
