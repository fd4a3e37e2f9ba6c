"""counters_recompute: mailboxCounters and the users' current quotas recomputed from the truth.

Scheduled on the message repair: `message_consistency` emits the asset `james://message_consistency/consistent`
from its final report when nothing failed (repaired, or nothing to repair), and this DAG runs then, because counters
are only right once the messages are. A night whose message repair failed has no counter recompute.

Counters cannot be set, only incremented: each fix recounts the mailbox (or user) live, reads the counter before
and after, and adds the difference only if the counter did not move. This is still not concurrency-safe (James's
ADR-0023): mail delivered during the run can leave a counter off by that mail; the next run converges. Both are
in every report's `concurrencyNote`.
"""

from james_airflow.consistency_dag import multi_target_consistency_dag
from james_airflow.schedules import MESSAGES_CONSISTENT

dag = multi_target_consistency_dag(
    dag_id="counters_recompute",
    targets={
        "counters": "mailboxCounters (messages and unseen per mailbox)",
        "quotas": "current quotas (messages and octets per user)",
    },
    title="the counters and quotas",
    cron_variable="JAMES_COUNTERS_RECOMPUTE_CRON",
    default_cron="0 4 * * *",
    doc_md=__doc__,
    schedule=[MESSAGES_CONSISTENT],
    priority_weight=5,
)
