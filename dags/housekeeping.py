"""housekeeping: every morning after the night's repairs, the before-images of runs older than
JAMES_UNDO_RETENTION_DAYS are removed from their work folders (in Cassandra they expire by their TTL); from then on
those runs can no longer be undone. The rest of a work folder is left as it is.

    remove_expired_before_images (Spark, driver only: nothing read from or written to Cassandra)
"""

from datetime import timedelta

from airflow.sdk import DAG
from james_airflow.consistency_dag import schedule_from_environment
from james_airflow.housekeeping import HousekeepingJobOperator
from james_airflow.notifiers import ConsistencyAlert

with DAG(
    dag_id="housekeeping",
    description="Remove the before-images of runs that can no longer be undone",
    doc_md=__doc__,
    schedule=schedule_from_environment("JAMES_HOUSEKEEPING_CRON"),
    catchup=False,
    max_active_runs=1,
    tags=["james", "consistency", "undo"],
    default_args={
        "owner": "mail-platform",
        "retries": 0,
        "on_failure_callback": ConsistencyAlert("housekeeping: the before-images were not removed"),
        "execution_timeout": timedelta(hours=1),
    },
) as dag:
    remove_expired_before_images = HousekeepingJobOperator(task_id="remove_expired_before_images")
