"""housekeeping through dag.test(): a morning's run removes, below the DAG runs' work root (JAMES_WORK_ROOT), the
before-images of a repair older than JAMES_UNDO_RETENTION_DAYS and keeps a newer one's; and it runs daily after
the night's repairs."""

import json
from datetime import UTC, datetime, timedelta

from support.dag_runs import task_states


def repair_work_folder(root, run: str, started: datetime):
    run_dir = root / "airflow" / "message_consistency" / run / "messages"
    (run_dir / "before-images").mkdir(parents=True)
    (run_dir / "before-images" / "part-00000.parquet").write_bytes(b"images")
    (run_dir / "before-images.json").write_text(json.dumps({"runId": run, "startedAt": started.isoformat()}))
    return run_dir


def test_the_morning_run_removes_the_before_images_past_their_retention(
    dagbag, airflow_against_test_node, monkeypatch, tmp_path
):
    monkeypatch.setenv("JAMES_WORK_ROOT", str(tmp_path))
    monkeypatch.setenv("JAMES_UNDO_RETENTION_DAYS", "7")
    now = datetime.now(UTC)
    old = repair_work_folder(tmp_path, "scheduled__night-1", now - timedelta(days=8))
    recent = repair_work_folder(tmp_path, "scheduled__night-7", now - timedelta(days=6))

    run = dagbag.get_dag("housekeeping").test()

    assert task_states(run) == {"remove_expired_before_images": "success"}
    assert not (old / "before-images").exists() and not (old / "before-images.json").exists()
    assert (recent / "before-images").is_dir() and (recent / "before-images.json").is_file()
    assert airflow_against_test_node() == []


def test_it_runs_every_morning_after_the_night_in_the_repairs_timezone(dagbag, monkeypatch):
    for name in ("JAMES_HOUSEKEEPING_CRON", "JAMES_REPAIR_TIMEZONE"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(f"AIRFLOW_VAR_{name}", raising=False)
    dag = dagbag.get_dag("housekeeping")

    assert (dag.timetable._expression, dag.timetable._timezone.name) == ("0 6 * * *", "Europe/Paris")
    assert dag.max_active_runs == 1 and dag.catchup is False
