"""The run reports a test session wrote, and which of them the published JSON Schema refuses."""

import json
from pathlib import Path

import jsonschema
from james_consistency.runtime.paths import PROJECT_ROOT

PUBLISHED_SCHEMA = PROJECT_ROOT / "docs" / "run-report.schema.json"


def _is_run_report(document) -> bool:
    return isinstance(document, dict) and {"runId", "target", "mode", "status"} <= document.keys()


def reports_written_since(moment: float, folders: list[Path]) -> list[tuple[Path, dict]]:
    """Every JSON run report below `folders` modified after `moment` (bench figures, alerts and other JSON aside)."""
    found = []
    for folder in folders:
        for path in sorted(Path(folder).rglob("*.json")) if Path(folder).is_dir() else []:
            try:
                if path.stat().st_mtime < moment:
                    continue
                document = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if _is_run_report(document):
                found.append((path, document))
    return found


def invalid_reports(reports: list[tuple[Path, dict]]) -> list[str]:
    """`<path>: <first problem>` for each report the published schema refuses."""
    validator = jsonschema.Draft202012Validator(json.loads(PUBLISHED_SCHEMA.read_text()))
    problems = []
    for path, document in reports:
        error = jsonschema.exceptions.best_match(validator.iter_errors(document))
        if error is not None:
            where = "/".join(str(part) for part in error.absolute_path) or "(top)"
            problems.append(f"{path}: {where}: {error.message[:300]}")
    return problems
