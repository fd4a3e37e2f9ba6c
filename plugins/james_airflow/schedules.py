"""The night's order between DAGs: assets one DAG emits when it ends well and another is scheduled on."""

from airflow.sdk import Asset

# Emitted by message_consistency's report when no task failed: messageIdTable matches imapUidTable.
MESSAGES_CONSISTENT = Asset("james://message_consistency/consistent")
