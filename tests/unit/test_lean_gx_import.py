"""A gated job's driver imports Great Expectations without SQLAlchemy and without running scipy.stats, and its gates
still judge: a plan within the threshold passes, one beyond it fails."""

import json
import os
import subprocess
import sys

import pytest
from james_consistency.runtime.package_data import entry_point

# The entry point's imports run as in a job (run_name keeps main() from running), then GX's import and two gates.
PROBE = """
import json, runpy, sys
runpy.run_path({entry!r}, run_name="probe")
import great_expectations
from james_consistency import gates

judged = [
    gates.validate_figures({{"destructive_share": share}}, "plan_safety", {{"max_destructive_share": 0.1}}).success
    for share in (0.05, 0.5)
]
print(json.dumps({{
    "sqlalchemy": sys.modules.get("sqlalchemy") is not None,
    "scipy.stats ran": "scipy.stats._stats_py" in sys.modules,
    "judged": judged,
}}))
"""


@pytest.mark.parametrize("job", ["reconcile.py", "mailboxes.py", "undo.py"])
def test_a_gated_jobs_driver_skips_what_its_gates_never_use_and_still_judges(job, tmp_path):
    environment = {**os.environ, "JAMES_GX_ROOT": str(tmp_path / "gx"), "GX_ANALYTICS_ENABLED": "false"}
    probe = PROBE.format(entry=str(entry_point(job)))
    ran = subprocess.run([sys.executable, "-c", probe], env=environment, capture_output=True, text=True, timeout=300)

    assert ran.returncode == 0, ran.stderr[-3000:]
    outcome = json.loads(ran.stdout.strip().splitlines()[-1])
    assert outcome == {"sqlalchemy": False, "scipy.stats ran": False, "judged": [True, False]}


def test_scipy_stats_still_loads_when_an_expectation_uses_it():
    probe = (
        "from james_consistency.runtime.lean_gx_import import lean_gx_import; lean_gx_import(); "
        "import great_expectations, sys; from scipy import stats; "
        "before = 'scipy.stats._stats_py' in sys.modules; p = stats.norm.cdf(0.0); "
        "print(before, 'scipy.stats._stats_py' in sys.modules, p)"
    )
    ran = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)

    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.split() == ["False", "True", "0.5"]
