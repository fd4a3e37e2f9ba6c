"""Jobs of several processes share one GX root: a gate still runs after another process saved its suite again."""

import subprocess
import sys

from james_consistency import gates

SAVE_AGAIN = """
import great_expectations as gx
from james_consistency.gates import load_suite
context = gx.get_context(mode="file", project_root_dir={root!r})
context.suites.add_or_update(load_suite("plan_safety"))
"""


def plan(share: float) -> dict:
    return {"destructive_share": share, "destructive_rows": 1, "projection_rows": 100}


def test_a_gate_runs_after_another_process_saved_its_suite(tmp_path, monkeypatch):
    monkeypatch.setenv("JAMES_GX_ROOT", str(tmp_path))
    monkeypatch.setenv("GX_ANALYTICS_ENABLED", "false")
    assert gates.validate_figures(plan(0.01), "plan_safety", {"max_destructive_share": 0.05}).success

    subprocess.run([sys.executable, "-c", SAVE_AGAIN.format(root=str(tmp_path))], check=True)

    assert gates.validate_figures(plan(0.01), "plan_safety", {"max_destructive_share": 0.05}).success
    refused = gates.validate_figures(plan(0.5), "plan_safety", {"max_destructive_share": 0.05})
    assert not refused.success and refused.failed_expectations[0]["target"] == "destructive_share"
