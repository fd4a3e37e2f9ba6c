"""The housekeeping of before-images on real Spark (its Hadoop filesystem): below a work root, the before-images of
a run older than the retention go (the folder and its summary), a newer run's stay, and nothing else of a work
folder is touched."""

import json
import os
from datetime import UTC, datetime, timedelta

from james_consistency.undo.retention import remove_expired_before_images

NOW = datetime.now(UTC)


def work_folder(root, relative: str, started: datetime | None) -> dict:
    """A repair's work folder as the engine leaves it: its kept scan, its before-images and their summary."""
    run_dir = root / relative
    (run_dir / "scan").mkdir(parents=True)
    (run_dir / "scan" / "part-00000.parquet").write_bytes(b"scan")
    (run_dir / "before-images").mkdir()
    (run_dir / "before-images" / "part-00000.parquet").write_bytes(b"images")
    summary = {"runId": run_dir.name, "target": "messages", "records": 1}
    if started is not None:
        summary["startedAt"] = started.isoformat()
    (run_dir / "before-images.json").write_text(json.dumps(summary))
    return {"dir": run_dir, "images": run_dir / "before-images", "summary": run_dir / "before-images.json"}


def test_before_images_older_than_the_retention_go_and_newer_ones_stay(spark, tmp_path):
    root = tmp_path / "work"
    old = work_folder(root, "airflow/message_consistency/night-1/work/messages", NOW - timedelta(days=15))
    recent = work_folder(root, "airflow/message_consistency/night-14/work/messages", NOW - timedelta(days=13))
    # A summary without a start (hand-made): the file's own time decides.
    undated = work_folder(root, "runs/20261101T023000-abcdef", None)
    twenty_days_ago = (NOW - timedelta(days=20)).timestamp()
    os.utime(undated["summary"], (twenty_days_ago, twenty_days_ago))

    removed, kept = remove_expired_before_images(spark, [str(root), str(tmp_path / "no-such-root")], retention_days=14)

    assert not old["images"].exists() and not old["summary"].exists()
    assert not undated["images"].exists() and not undated["summary"].exists()
    assert (old["dir"] / "scan" / "part-00000.parquet").exists(), "the rest of the work folder stays"
    assert recent["images"].is_dir() and recent["summary"].is_file()
    assert sorted(path.rsplit("/", 1)[1] for path in removed) == ["20261101T023000-abcdef", "messages"]
    assert [path.removeprefix("file:") for path in kept] == [str(recent["dir"])]

    again, _ = remove_expired_before_images(spark, [str(root)], retention_days=14)
    assert again == [], "a second pass finds nothing left to remove"
