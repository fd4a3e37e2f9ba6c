"""counters_recompute: mailboxCounters and the users' current quotas (3.9 quotaCurrentValue MAILBOX rows, 3.5
currentQuota) recomputed from imapUidTable and the mailbox table.

**When it runs.** After the night's message repair, because the counters are only right once the messages are. It is
scheduled on the Airflow asset `james://<keyspace>/messages_consistent` of the deployment's keyspace
(`JAMES_KEYSPACE`), which `message_consistency`'s report emits through the asset alias `messages_consistent` when
its run on that keyspace ended with no failed task (repaired and verified, or nothing to repair) and was not a dry
run. Why an asset rather than the alternatives:

- a cron a little after 02:30 would start while a long message repair still runs, or after one that failed;
- an ExternalTaskSensor holds a worker slot while it waits and needs both DAGs' logical dates kept aligned;
- a cron fallback (`AssetOrTimeSchedule`) would recompute counters on a night whose message repair failed, which
  is exactly what must not happen. There is none: such a night has the message repair's alert and no counter run;
  an operator can still trigger this DAG from its form once the messages are repaired.

A manual message run on another keyspace emits that keyspace's asset and starts nothing here; a manual run of this
DAG takes any keyspace from the form.

**Counter repairs are not concurrency-safe (James ADR-0023).** Counters cannot be set, only incremented: each fix
recounts the mailbox (or user) live, reads the counter before and after, and adds the difference only if the counter
did not move (a moved one is reported as failed, left for the next run). Mail delivered or read during the run can
still leave a counter off by that mail; the next run converges. Every report says so in its `concurrencyNote`.

`counters` and `quotas` are independent branches (both read imapUidTable, neither reads the other's table): a failed
one does not stop the other; the Spark jobs still run one at a time in the `cassandra_heavy` pool.
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
    doc_md=__doc__,
    after=MESSAGES_CONSISTENT,
    priority_weight=5,
)
