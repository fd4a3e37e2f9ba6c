"""acl_consistency: the ACL projections repaired from their truth, James's missing ADR-0021 task.

- `acl`: UserMailboxACL (positive rights of individual users) from the last `acl-updated` event of each mailbox in
  eventStore (James 3.9), or from the `acl` JSON (James 3.5);
- `aclv2`: one row per entry from eventStore (3.9 only; a 3.5 keyspace reports NOT_APPLICABLE and is skipped).

Each is checked, short-circuited when nothing is wrong, repaired and verified on its own branch: a failure of one
does not stop the other. A truth that cannot be read (unparsable JSON, an unknown event type) is reported and its
projection rows are left untouched. Scheduled after the message repair (03:00 by default).
"""

from james_airflow.consistency_dag import multi_target_consistency_dag

dag = multi_target_consistency_dag(
    dag_id="acl_consistency",
    targets={
        "acl": "UserMailboxACL against the ACL truth",
        "aclv2": "aclv2 against eventStore",
    },
    title="the ACL projections",
    cron_variable="JAMES_ACL_REPAIR_CRON",
    default_cron="0 3 * * *",
    doc_md=__doc__,
    priority_weight=5,
)
