"""The housekeeping DAG's job: spark-submit of the housekeeping entry point (james_consistency.undo.retention) on
every folder where runs keep their work folders, so that a repair's before-images go once it can no longer be
undone (JAMES_UNDO_RETENTION_DAYS after it started, read when the task runs)."""

from james_consistency.runtime.package_data import entry_point
from james_consistency.settings import setting

from james_airflow.operators import ConsistencyJobOperator
from james_airflow.runs import AIRFLOW_REPORTS_DIR


def work_roots() -> list[str]:
    """The DAG runs' work folders (below JAMES_WORK_ROOT, else the reports folder: ConsistencyJobOperator.run_scan)
    and `<local dir>/runs`, where the offline mailbox repair and the command line keep theirs."""
    from james_consistency.runtime.paths import LOCAL_DIR

    root = setting("JAMES_WORK_ROOT")
    return [f"{root.rstrip('/')}/airflow" if root else str(AIRFLOW_REPORTS_DIR), str(LOCAL_DIR / "runs")]


class HousekeepingJobOperator(ConsistencyJobOperator):
    """The before-images of runs that can no longer be undone removed from their work folders (a driver-only Spark
    job: the folders may be on HDFS or S3, reached through Spark's Hadoop filesystem as the jobs wrote them)."""

    def __init__(self, **kwargs):
        super().__init__(target="before-images", mode="housekeeping", **kwargs)
        self.application = str(entry_point("housekeeping.py"))

    def arguments(self, context, report: str) -> list[str]:
        roots = [argument for root in work_roots() for argument in ("--root", root)]
        return [*roots, "--retention-days", str(setting("JAMES_UNDO_RETENTION_DAYS"))]
