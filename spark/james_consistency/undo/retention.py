"""How long a repair can be undone, and the nightly housekeeping that ends it.

A repair's before-images (engine.before_images) are kept JAMES_UNDO_RETENTION_DAYS after the repair started: in
Cassandra by their TTL, in the repair's work folder until the housekeeping (the `housekeeping` DAG, jobs.housekeeping)
deletes its `before-images/` folder and then its summary `before-images.json`. The rest of the work folder (the kept
scan, candidates, outcomes, an undo's own work) is left as it is. `history` says a run is undoable by the same rule
(report.history.undoable_until).

The work roots are paths or Hadoop filesystem URLs (hdfs://, s3a://): the housekeeping reaches them as the jobs
that wrote them do, through the Spark driver's Hadoop filesystem, which is why it is a (driver-only) Spark job.
"""

import json
import logging
from datetime import UTC, datetime

from james_consistency.report.history import undoable_until

log = logging.getLogger("james_consistency.undo.retention")


def _started_at(summary_text: str | None, modified_ms: int) -> datetime:
    """The run's start from its summary; the summary file's time when it says none (or cannot be read)."""
    try:
        started = datetime.fromisoformat(json.loads(summary_text or "{}")["startedAt"])
        return started if started.tzinfo else started.replace(tzinfo=UTC)
    except (KeyError, TypeError, ValueError):
        return datetime.fromtimestamp(modified_ms / 1000, UTC)


def remove_expired_before_images(
    spark, roots: list[str], now: datetime | None = None, retention_days: float | None = None
) -> tuple[list[str], list[str]]:
    """Below each root, the before-images of every run no longer undoable deleted (the folder, then its summary, so
    that a deletion stopped half-way is found again the next night); the work folders removed and those kept."""
    from james_consistency.engine import work_folder
    from james_consistency.engine.before_images import FOLDER, SUMMARY

    now = now or datetime.now(UTC)
    removed, kept = [], []
    for root in roots:
        for summary, modified_ms in work_folder.files_named(spark, root, SUMMARY):
            run_dir = summary.rsplit("/", 1)[0]
            try:
                text = work_folder.read_text(spark, summary)
            except FileNotFoundError:
                continue  # removed meanwhile
            started = _started_at(text, modified_ms)
            if now < undoable_until(started, retention_days):
                kept.append(run_dir)
                continue
            work_folder.delete(spark, f"{run_dir}/{FOLDER}")
            work_folder.delete(spark, summary)
            log.info("removed the before-images of %s (started %s)", run_dir, started.isoformat())
            removed.append(run_dir)
    return removed, kept
