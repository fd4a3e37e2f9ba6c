"""index_rebuild: the low-priority per-mailbox indexes, rebuilt from imapUidTable (messageDeleted, firstUnseen,
mailboxRecents, applicableFlag), each independently, last in the night, after the message repair.

applicableFlag only gains the keywords in use (James never removes any); removing unused ones is the trigger form's
"remove unused flags" option. Where James does not handle IMAP Recent (James master's handleRecent=false, our
JAMES_HANDLE_RECENT=0), the mailboxRecents steps end NOT_APPLICABLE, saying why: nothing read, nothing written."""

from james_airflow.consistency_dag import independent_repairs_dag

dag = independent_repairs_dag(
    dag_id="index_rebuild",
    targets={
        "deleted": "messageDeleted (uids flagged \\Deleted)",
        "unseen": "firstUnseen (uids not \\Seen)",
        "recent": "mailboxRecents (uids flagged \\Recent)",
        "flags": "applicableFlag (keywords used in the mailbox)",
    },
    cron_variable="JAMES_INDEX_REBUILD_CRON",
    doc_md=__doc__,
    priority_weight=1,
)
