"""acl_consistency: the ACL projections repaired from their truth, James's missing ADR-0021 task.

- `acl`: UserMailboxACL (positive rights of individual users) from the last `acl-updated` event of each mailbox in
  eventStore (James 3.9), or from the `acl` JSON (James 3.5);
- `aclv2`: one row per ACL entry, from eventStore (3.9 only: on a 3.5 keyspace its check reports NOT_APPLICABLE and
  the branch stops there, successfully).

Each is checked, short-circuited when nothing is wrong, repaired and verified on its own branch, then one report
that fails the run if a branch did not complete. The branches are independent (both derive from the same truth,
neither reads the other), so a failed gate or repair of one does not stop the other; their Spark jobs still run one
at a time in the `cassandra_heavy` pool. A truth the gate refuses (an event row without its event, a negative event
id) stops both checks before anything is written and alerts. A single mailbox whose ACL cannot be read (unparsable
JSON, an unknown event type) is reported and its projection rows are left untouched (the repair ends PARTIAL).

Off-peak after the message repair: 03:00 by default (`JAMES_ACL_REPAIR_CRON`, timezone `JAMES_REPAIR_TIMEZONE`).
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
    doc_md=__doc__,
    priority_weight=5,
)
