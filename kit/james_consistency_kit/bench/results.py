"""The bench's JSON result files: written to .local/bench/ by a run."""

import json
from pathlib import Path

from james_consistency.paths import LOCAL_DIR


def write_figures(figures: dict, path: str | None) -> Path:
    name = figures.get("target", "messages")
    target = Path(path or LOCAL_DIR / "bench" / f"{name}-{figures['messages']}.json")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(figures, indent=2) + "\n")
    return target
