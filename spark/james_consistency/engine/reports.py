"""A run's report on disk and in one line, for the CLI and the spark-submit entry point."""

import json
from pathlib import Path


def write_report(report: dict, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, default=str) + "\n")
    return path


def summary_line(report: dict) -> str:
    found = ", ".join(f"{kind} {count}" for kind, count in report.get("inconsistencies", {}).items())
    line = f"{report['target']} {report['mode']} on {report['keyspace']}: {report['status']}; found {found}"
    if report["mode"] == "repair":
        keys = [k for k in report if k.startswith(("added", "updated", "removed"))]
        line += "; " + ", ".join(f"{k} {report[k]}" for k in keys)
        line += f"; already consistent on re-check {report.get('alreadyConsistentOnRecheck', 0)}"
        line += f"; errors {report.get('failedCount', 0)}"
    if report["mode"] == "verify":
        line += f"; remaining {report.get('remainingInconsistencies', 0)}"
    return line + f" ({report.get('durationSeconds', 0)}s)"
