"""A running job's published progress (report.progress): what a watcher reads of it at each step, with a clock the test
moves; and the command line's plain lines for a log."""

from datetime import UTC, datetime

from james_consistency.jobs.submit import ProgressLines
from james_consistency.report.progress import ProgressFile, mark_ended, progress_path, read_progress

STAGES = ("scan", "judge", "plan", "reconcile", "summarize")
START = datetime(2026, 12, 5, 2, 30, tzinfo=UTC).timestamp()


class Clock:
    def __init__(self):
        self.now = START

    def __call__(self) -> float:
        return self.now


def test_a_watcher_reads_the_ranges_done_the_rate_and_when_the_scan_should_end(tmp_path):
    path = progress_path(tmp_path / "check.json")
    clock = Clock()
    progress = ProgressFile(
        path, {"runId": "r1", "target": "messages", "keyspace": "james", "mode": "check"}, STAGES, clock
    )
    assert path.name == "check.progress.json"
    assert read_progress(path)["stage"] == "scan" and read_progress(path)["ranges"] is None

    progress.ranges(done=0, total=100, scanned_by_this_run=0, rows=0)
    clock.now += 10
    progress.ranges(done=20, total=100, scanned_by_this_run=20, rows=50_000)

    published = read_progress(path)
    assert published["ranges"] == {"done": 20, "total": 100, "scannedByThisRun": 20}
    assert published["rowsScanned"] == 50_000 and published["rowsPerSecond"] == 5000.0
    # 80 ranges left at 2 ranges a second: 40 s after the last batch.
    assert published["estimatedScanEnd"] == "2026-12-05T02:30:50+00:00"
    assert published["state"] == "running" and published["updatedAt"] == "2026-12-05T02:30:10+00:00"
    assert [file.name for file in tmp_path.iterdir()] == ["check.progress.json"], "written whole, nothing left over"

    progress.stage("judge")
    mark_ended(path, "COMPLETED")
    ended = read_progress(path)
    assert (ended["stage"], ended["stageNumber"], ended["state"], ended["endedAs"]) == (
        "judge",
        2,
        "ended",
        "COMPLETED",
    )


def test_a_folder_that_cannot_be_written_does_not_stop_the_job(tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    progress = ProgressFile(blocked / "check.progress.json", {}, STAGES)

    progress.stage("judge")  # no error: the job goes on without publishing

    assert progress.failed and read_progress(blocked / "check.progress.json") is None


def test_a_log_gets_a_line_per_stage_and_otherwise_one_now_and_then(capsys):
    lines = ProgressLines(every=3600)
    document = {
        **{"target": "messages", "mode": "check", "keyspace": "james", "stage": "scan", "stageNumber": 1},
        **{"stages": list(STAGES), "ranges": {"done": 4, "total": 64}, "rowsScanned": 12345, "rowsPerSecond": 2000},
    }

    lines.show(document)
    lines.show({**document, "ranges": {"done": 8, "total": 64}})  # within the hour: not printed
    lines.show({**document, "stage": "judge", "stageNumber": 2})

    assert capsys.readouterr().out.splitlines() == [
        "messages check on james: scan (1/5), ranges 4/64, rows 12,345, rate 2,000 rows/s",
        "messages check on james: judge (2/5), ranges 4/64, rows 12,345, rate 2,000 rows/s",
    ]
