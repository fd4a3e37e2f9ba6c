"""message_consistency: repair messageIdTable from imapUidTable (James's SolveMessageInconsistencies, done right)."""

from james_airflow.consistency_dag import consistency_dag
from james_airflow.schedules import MESSAGES_CONSISTENT

dag = consistency_dag(
    dag_id="message_consistency",
    target="messages",
    target_title="messageIdTable against imapUidTable",
    cron_variable="JAMES_MESSAGE_REPAIR_CRON",
    doc_md=__doc__,
    outlets=[MESSAGES_CONSISTENT],  # counters_recompute runs after it
)
