"""Stopping the local Airflow leaves none of its processes behind, even one that outlives its parent on SIGTERM
(a triggerer still running after the fresh clone's end-to-end run)."""

import os
import subprocess

import pytest
from james_consistency_kit.local_airflow import stop

# The parent ends on SIGTERM; its child ignores SIGTERM (and so does the sleep it runs).
STUBBORN_CHILD = "sh -c 'trap \"\" TERM; sleep 300' & wait"


def test_a_child_that_ignores_sigterm_is_killed_with_its_group():
    process = subprocess.Popen(["sh", "-c", STUBBORN_CHILD], start_new_session=True)
    group = process.pid

    stop(process, grace_seconds=1)

    with pytest.raises(ProcessLookupError):
        os.killpg(group, 0)
