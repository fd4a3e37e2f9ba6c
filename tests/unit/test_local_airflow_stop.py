"""Stopping the local Airflow leaves none of its processes behind, even one that outlives its parent on SIGTERM
(a triggerer still running after the fresh clone's end-to-end run)."""

import os
import subprocess
import time

import pytest
from james_consistency_kit.processes import stop_group


def test_a_child_that_ignores_sigterm_is_killed_with_its_group(tmp_path):
    trapped = tmp_path / "trapped"
    # The parent ends on SIGTERM; its child ignores SIGTERM (and so does the sleep it runs), once it says so.
    stubborn_child = f"sh -c 'trap \"\" TERM; touch {trapped}; sleep 300' & wait"
    process = subprocess.Popen(["sh", "-c", stubborn_child], start_new_session=True)
    group = process.pid
    deadline = time.monotonic() + 10
    while not trapped.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert trapped.exists(), "the child did not start"

    stop_group(process, grace_seconds=1)

    with pytest.raises(ProcessLookupError):
        os.killpg(group, 0)
