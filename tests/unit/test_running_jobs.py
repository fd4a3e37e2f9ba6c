"""The Consistency view's "Running now": the progress each running job publishes beside its report, found below the
reports folder while Spark writes and removes its own work folders there."""

import os
import shutil
from datetime import UTC, datetime

from james_airflow.ui.pages import running_jobs
from james_consistency.report.progress import RUNNING, write_progress


def publish(path, state=RUNNING):
    moment = datetime.now(UTC).isoformat(timespec="seconds")
    write_progress(path, {"stage": "scan", "state": state, "startedAt": moment, "updatedAt": moment})


def a_night(reports):
    run = reports / "airflow" / "message_consistency" / "manual__1"
    publish(run / "check.progress.json")
    publish(run / "repair.progress.json", state="COMPLETED")
    spark_output = run / "work" / "messages" / "verification" / "_temporary" / "0"
    publish(spark_output / "part.progress.json")
    return run


def test_the_running_jobs_of_a_night_are_listed_with_their_run_and_spark_work_folders_are_not_entered(tmp_path):
    a_night(tmp_path)

    jobs = running_jobs(tmp_path)

    assert [(job["run"], job["task"], job["silent"]) for job in jobs] == [
        ("message_consistency/manual__1", "check", False)
    ]


def test_a_work_folder_removed_while_the_view_looks_does_not_fail_the_view(tmp_path, monkeypatch):
    run = a_night(tmp_path)
    vanishing = run / "work" / "messages" / "verification"
    real_scandir = os.scandir

    def spark_removes_it_first(path="."):
        if isinstance(path, (str, os.PathLike)) and os.fspath(path) == os.fspath(vanishing):
            shutil.rmtree(vanishing)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", spark_removes_it_first)

    assert [job["task"] for job in running_jobs(tmp_path)] == ["check"]
    assert not vanishing.exists(), "the folder went while the view walked"
