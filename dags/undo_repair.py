"""undo_repair: take a repair back from its before-images (James's tables as they were before it, later writes kept),
behind a human approval. Manual only; the run to undo is chosen in the trigger form by its work folder, as
`james-consistency history` lists the undoable runs (those of the last JAMES_UNDO_RETENTION_DAYS).

    check (Spark: refuses a folder that is no undoable run's, naming those that are; then a dry run of the undo)
      -> anything_to_repair (nothing to take back ends the run successfully; else the plan goes to the form)
      -> approve (human-in-the-loop: the plan per table and action; the approvers of JAMES_MAILBOX_APPROVERS; no
         answer within JAMES_MAILBOX_APPROVAL_TIMEOUT_MINUTES means Reject; undoing the offline mailbox repair
         needs ALL-SERVICES-ARE-OFFLINE typed, as the repair did)
      -> repair (Spark: the undo applied) -> report
"""

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from airflow.providers.standard.operators.python import PythonOperator, ShortCircuitOperator
from airflow.sdk import DAG, Param, TriggerRule
from james_airflow.approval import approval_params, approval_step
from james_airflow.consistency_dag import HEAVY_POOL
from james_airflow.notifiers import ConsistencyAlert
from james_airflow.undo import (
    APPROVAL_BODY,
    APPROVAL_SUBJECT,
    CONFIRMATION_HELP,
    RUN_DIR,
    UndoApprovalOperator,
    UndoApprovalRequest,
    UndoJobOperator,
    summarize_undo,
    undo_needed,
)

with DAG(
    dag_id="undo_repair",
    description="Take a repair back from its before-images, after a human approval",
    doc_md=__doc__,
    schedule=None,
    start_date=datetime(2026, 1, 1, tzinfo=ZoneInfo("UTC")),
    catchup=False,
    max_active_runs=1,
    tags=["james", "consistency", "undo"],
    params={
        RUN_DIR: Param(
            type="string",
            minLength=1,
            title="Work folder of the repair to undo",
            description_md=(
                "As `james-consistency history` lists it under *Undoable runs* (the repair report's `workDir`). "
                "The `check` task refuses any other folder and lists the undoable ones in its log."
            ),
        ),
    },
    default_args={
        "owner": "mail-platform",
        "retries": 0,
        "on_failure_callback": ConsistencyAlert("undo_repair: a step failed"),
        "execution_timeout": timedelta(hours=6),
    },
) as dag:
    check = UndoJobOperator(task_id="check", apply=False, pool=HEAVY_POOL)
    anything_to_repair = ShortCircuitOperator(
        task_id="anything_to_repair", python_callable=undo_needed, ignore_downstream_trigger_rules=False
    )
    approve = approval_step(
        subject=APPROVAL_SUBJECT,
        body=APPROVAL_BODY,
        params=approval_params(CONFIRMATION_HELP),
        operator=UndoApprovalOperator,
        notifier=UndoApprovalRequest,
    )
    repair = UndoJobOperator(task_id="repair", apply=True, pool=HEAVY_POOL)
    report = PythonOperator(task_id="report", python_callable=summarize_undo, trigger_rule=TriggerRule.NONE_FAILED)
    check >> anything_to_repair >> approve >> repair >> report
