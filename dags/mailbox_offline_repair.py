"""mailbox_offline_repair: James's SolveMailboxInconsistencies (mailbox <-> mailboxPathV3 / mailboxPathV2), behind a
human approval. Manual only: it must run while James's SMTP, IMAP and JMAP services are stopped.

    check (Spark, read-only diagnosis; health gate, and the `mailbox_nothing_to_do` gate)
      -> anything_to_repair (nothing to do ends the run successfully; else the summary goes to the form)
      -> approve (human-in-the-loop: counts, conflicts, sample; type ALL-SERVICES-ARE-OFFLINE;
         only the approvers of JAMES_MAILBOX_APPROVERS; no answer within JAMES_MAILBOX_APPROVAL_TIMEOUT_MINUTES
         means Reject; they are notified with a link to the approval page)
      -> repair (Spark: passes of SERIAL re-reads and lightweight transactions) -> verify (gate) -> report
"""

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from airflow.providers.standard.operators.python import PythonOperator, ShortCircuitOperator
from airflow.sdk import DAG, Param, TriggerRule
from james_airflow.approval import (
    APPROVAL_BODY,
    MailboxJobOperator,
    approval_needed,
    approval_params,
    approval_step,
    summarize_offline_repair,
)
from james_airflow.consistency_dag import HEAVY_POOL, KEYSPACE_PATTERN, deployment_keyspace
from james_airflow.notifiers import ConsistencyAlert
from james_consistency.mailboxes.options import DEFAULT_MAX_PASSES, ORPHAN_PATH_POLICIES, RECREATE

with DAG(
    dag_id="mailbox_offline_repair",
    description="Offline repair of mailbox <-> path, after a human approval",
    doc_md=__doc__,
    schedule=None,
    start_date=datetime(2026, 1, 1, tzinfo=ZoneInfo("UTC")),
    catchup=False,
    max_active_runs=1,
    tags=["james", "consistency", "mailboxes", "offline"],
    params={
        "keyspace": Param(
            deployment_keyspace(),
            type="string",
            pattern=KEYSPACE_PATTERN,
            title="Keyspace",
            description="The James keyspace whose mailbox and path tables are diagnosed and repaired.",
        ),
        "orphan_paths": Param(
            RECREATE,
            type="string",
            enum=list(ORPHAN_PATH_POLICIES),
            title="Orphan paths",
            description="A path registered to a mailbox id without a mailbox row: re-create the row from the path "
            "(recreate, as James 3.9.x), re-create it only when messages reference the id and else delete the path "
            "(recreate-when-referenced), or always delete the path (delete, as James 3.9.0 and ADR-0020).",
            section="Repair",
        ),
        "merge": Param(
            False,
            type="boolean",
            title="Merge two ids claiming one path",
            description="Move the unregistered id's messages and ACL into the registered one (only when certain).",
            section="Repair",
        ),
        "max_passes": Param(
            DEFAULT_MAX_PASSES, type="integer", minimum=1, maximum=20, title="Passes at most", section="Repair"
        ),
    },
    default_args={
        "owner": "mail-platform",
        "retries": 0,
        "on_failure_callback": ConsistencyAlert("mailbox_offline_repair: a step failed"),
        "execution_timeout": timedelta(hours=6),
    },
) as dag:
    check = MailboxJobOperator(task_id="check", mode="check", pool=HEAVY_POOL)
    anything_to_repair = ShortCircuitOperator(
        task_id="anything_to_repair", python_callable=approval_needed, ignore_downstream_trigger_rules=False
    )
    approve = approval_step(
        subject="Offline mailbox repair of {{ params.keyspace }}: approve once James is stopped",
        body=APPROVAL_BODY,
        params=approval_params(),
    )
    repair = MailboxJobOperator(task_id="repair", mode="repair", pool=HEAVY_POOL)
    verify = MailboxJobOperator(task_id="verify", mode="verify", pool=HEAVY_POOL)
    report = PythonOperator(
        task_id="report", python_callable=summarize_offline_repair, trigger_rule=TriggerRule.NONE_FAILED
    )
    check >> anything_to_repair >> approve >> repair >> verify >> report
