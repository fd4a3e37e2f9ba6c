"""The shape every online repair DAG shares, so each DAG file only says which projection it repairs and when:

    check (Spark: scan, diff, truth-health gate; a dry run)
      -> anything_to_repair (short-circuit: nothing inconsistent, or a dry run, ends the run here)
      -> repair (Spark: plan-safety gate, delayed re-check, fixes; from the check's kept scan)
      -> verify (Spark: re-check of the check's candidates and sample, a full re-scan on JAMES_FULL_VERIFY_WEEKDAY;
                 the projection-matches-truth gate)
      -> report (a summary of the three job reports; announces the keyspace's asset through its alias outlets)

`multi_target_consistency_dag` runs that chain for several projections, one branch each (task ids check_<target>,
anything_to_repair_<target>, repair_<target>, verify_<target>, then one report); `independent_repairs_dag` runs
rebuilds without a check step. One scan per run: the branch's first job scans the ring in journalled token ranges
(stopping at a range boundary at the window's end, JAMES_REPAIR_WINDOW_MINUTES after the run was due: the repair
and verify go on with what the finished ranges decide, the run ends well, "window ended, N ranges left", and the next
one goes on) and keeps its scan in the run's work folder; the later jobs reuse it. The Spark tasks share the one-slot
`cassandra_heavy` pool, so two heavy scans never overlap. A failed gate (job exit 4), a partial repair (exit 3) or
any failed job fails its task and calls the alert notifier. Deployment settings (crons, timezone, keyspace,
retries, window) come from james_consistency.settings: the environment, as NAME or as the Airflow Variable
AIRFLOW_VAR_NAME, read without touching the metadata database.
"""

import logging
from datetime import timedelta

from airflow.providers.standard.operators.python import PythonOperator, ShortCircuitOperator
from airflow.sdk import DAG, AssetAlias, AsyncCallback, DeadlineAlert, DeadlineReference, Param, TriggerRule
from airflow.timetables.trigger import CronTriggerTimetable
from james_consistency.cassandra.consistency_levels import AS_JAMES, CONSISTENCY_LEVELS
from james_consistency.report.run_report import ENDED_WELL
from james_consistency.settings import setting

from james_airflow.notifiers import ConsistencyAlert, repair_window_overrun
from james_airflow.operators import ConsistencyJobOperator, nothing_decided
from james_airflow.runs import read_report
from james_airflow.schedules import keyspace_asset

log = logging.getLogger(__name__)

HEAVY_POOL = "cassandra_heavy"
KEYSPACE_PATTERN = "^[A-Za-z][A-Za-z0-9_]{0,47}$"


def schedule_from_environment(cron_setting: str) -> CronTriggerTimetable:
    """The off-peak schedule: a cron (per DAG, its setting `cron_setting`) in the deployment's timezone
    (JAMES_REPAIR_TIMEZONE, shared by the repair DAGs). A DAG deployed or unpaused after its slot waits for the next
    one: `run_immediately=timedelta(0)`, because Airflow 3.3 reads False like None and starts a missed daily slot
    at once when it is less than 2.4 hours old (10 % of the gap between slots)."""
    return CronTriggerTimetable(
        setting(cron_setting), timezone=setting("JAMES_REPAIR_TIMEZONE"), run_immediately=timedelta(0)
    )


def deployment_keyspace() -> str:
    """The keyspace scheduled runs repair (the trigger form's default)."""
    return setting("JAMES_KEYSPACE")


def repair_window() -> DeadlineAlert | None:
    """An alert when a run is still going JAMES_REPAIR_WINDOW_MINUTES (default 180: 02:30 to 05:30) after it was
    queued, i.e. when the night's repair overruns its off-peak window; 0 means no window."""
    minutes = setting("JAMES_REPAIR_WINDOW_MINUTES")
    if minutes <= 0:
        return None
    return DeadlineAlert(
        reference=DeadlineReference.DAGRUN_QUEUED_AT,
        interval=timedelta(minutes=minutes),
        callback=AsyncCallback(repair_window_overrun, kwargs={"window_minutes": minutes}),
    )


def transient_retries() -> dict:
    """Retries of the Spark jobs, for an infrastructure failure only (ConsistencyJobOperator fails anything else at
    once): JAMES_REPAIR_RETRIES (default 2) after JAMES_REPAIR_RETRY_DELAY_SECONDS (default 300), doubling."""
    return {
        "retries": setting("JAMES_REPAIR_RETRIES"),
        "retry_delay": timedelta(seconds=setting("JAMES_REPAIR_RETRY_DELAY_SECONDS")),
        "retry_exponential_backoff": 2.0,
        "max_retry_delay": timedelta(hours=1),
    }


def _spark_job(task_id: str, target: str, mode: str, **kwargs) -> ConsistencyJobOperator:
    """One mode of one repair job, in the one-slot heavy pool, retried on transient failures only."""
    return ConsistencyJobOperator(
        task_id=task_id, target=target, mode=mode, pool=HEAVY_POOL, **transient_retries(), **kwargs
    )


def repair_params(target_title: str) -> dict[str, Param]:
    return {
        "keyspace": Param(
            deployment_keyspace(),
            type="string",
            pattern=KEYSPACE_PATTERN,
            title="Keyspace",
            description="The James keyspace to check and repair.",
        ),
        "dry_run": Param(
            False,
            type="boolean",
            title="Dry run",
            description=f"Only diagnose {target_title}: same counts as a repair, nothing written.",
        ),
        "messages_per_second": Param(
            0,
            type="number",
            minimum=0,
            title="Rate limit (rows per second)",
            description="Fixes per second across the job, like James's messagesPerSecond. 0 = unthrottled.",
            section="Repair",
        ),
        "recheck_delay_seconds": Param(
            5,
            type="number",
            minimum=0,
            maximum=3600,
            title="Re-check delay (seconds)",
            description="Wait between the scan and the re-check of each candidate against live Cassandra.",
            section="Repair",
        ),
        "max_destructive_share": Param(
            setting("JAMES_MAX_DESTRUCTIVE_SHARE"),
            type="number",
            minimum=0,
            maximum=1,
            title="Safety threshold",
            description="Largest share of projection rows the plan may delete or rewrite (0..1).",
            section="Safety",
        ),
        "allow_destructive": Param(
            False,
            type="boolean",
            title="Allow a plan above the safety threshold",
            description="Only after looking at the dry run's report.",
            section="Safety",
        ),
        "full_verify": Param(
            False,
            type="boolean",
            title="Full verify",
            description="The verify scans everything again instead of re-checking the check's candidates and sample "
            "(it does so every JAMES_FULL_VERIFY_WEEKDAY anyway).",
            section="Safety",
        ),
        "truth_consistency": Param(
            AS_JAMES,
            type="string",
            enum=[AS_JAMES, *CONSISTENCY_LEVELS],
            values_display={AS_JAMES: "As James is configured"},
            title="Re-check consistency of the truth",
            description="As James: imapUidTable at SERIAL when James writes messages with lightweight transactions "
            "(JAMES_MESSAGE_WRITE_STRONG_CONSISTENCY), the rest at LOCAL_QUORUM. A level chosen here is used for "
            "every truth re-read.",
            section="Safety",
        ),
        **load_params(),
    }


def load_params() -> dict[str, Param]:
    """The scan's load on the ring (engine.load_limits): its limit, the adaptive mode, the canary's target, the
    floor. A limit below the floor is refused by the task before spark-submit (a form checks fields one by one)."""
    target = setting("JAMES_LATENCY_TARGET_MS")
    return {
        "scan_rows_per_second": Param(
            setting("JAMES_SCAN_ROWS_PER_SECOND"),
            type="number",
            minimum=0,
            title="Scan rate limit (rows per second)",
            description="Rows a second the scan may read across the cluster, both tables together. 0 = no limit.",
            section="Load on the ring",
        ),
        "adaptive": Param(
            False,
            type="boolean",
            title="Adapt the scan's rate to James's latency",
            description="Read slower while a canary read of James's keyspace is slower than the target, faster again "
            "when it is not. Scheduled runs adapt as JAMES_ADAPTIVE_RATE says (on unless set to 0); a manual run "
            "only when this is ticked.",
            section="Load on the ring",
        ),
        "latency_target_ms": Param(
            target or None,
            type=["null", "number"],
            exclusiveMinimum=0,
            title="Latency target (ms)",
            description="The canary's p99 the adaptive mode keeps under. Empty: derived when the run starts (the "
            "canary's p99 before the scan plus 20 ms, or twice it if more).",
            section="Load on the ring",
        ),
        "rate_floor": Param(
            setting("JAMES_RATE_FLOOR_ROWS_PER_SECOND"),
            type="number",
            minimum=0,
            title="Rate floor (rows per second)",
            description="The adaptive mode never reads slower than this, so that the night always progresses.",
            section="Load on the ring",
        ),
    }


def repair_after_check(check_step: str = "check", **context) -> bool:
    """Continue to the repair only when the check found something and the run is not a dry run."""
    report = read_report(context["dag"].dag_id, context["run_id"], check_step)
    if report is None:
        raise RuntimeError("the check step wrote no report")
    if nothing_decided(report):
        log.warning("%s: nothing is repaired tonight, the next run goes on from the journal", report.windowEnded)
        return False
    log.info("check found %d inconsistencies: %s", report.found, report.inconsistencies)
    if context["params"]["dry_run"]:
        log.info("dry run: stopping before the repair")
        return False
    return report.found > 0


# What each step's summary (the report task's XCom) shows of its report.
SUMMARY_FIELDS = (
    "status",
    "reason",
    "inconsistencies",
    "durationSeconds",
    "remainingInconsistencies",
    "windowEnded",
    "ranges",
    "reusedScan",
)


def summarize_steps(**context) -> dict:
    """Log one line per job report of this run and return a small summary (XCom)."""
    summary = {}
    for step in [task.task_id for task in context["dag"].tasks]:
        report = read_report(context["dag"].dag_id, context["run_id"], step)
        if report is None:
            continue
        written = report.as_json()
        summary[step] = {key: written[key] for key in SUMMARY_FIELDS if key in written}
        summary[step].update(report.fixed_counts())
        log.info("%s: %s", step, summary[step])
    return summary


def summarize_and_announce(**context) -> dict:
    """The summary; then, unless this was a dry run, an event of the run's keyspace asset for each alias outlet (the
    task only runs when nothing failed, so the event says: this keyspace's projection matches its truth now)."""
    summary = summarize_steps(**context)
    keyspace = context["params"]["keyspace"]
    for alias in (outlet for outlet in context["task"].outlets if isinstance(outlet, AssetAlias)):
        if context["params"]["dry_run"]:
            log.info("dry run: %s not announced", alias.name)
            continue
        asset = keyspace_asset(alias, keyspace)
        context["outlet_events"][alias].add(asset, extra={"keyspace": keyspace, "run_id": context["run_id"]})
        log.info("announced %s", asset.uri)
    return summary


def summarize_rebuilds(**context) -> dict:
    """The summary of independent rebuilds; fails (so the run shows failed) when any of them did not complete."""
    summary = summarize_steps(**context)
    incomplete = sorted(
        task.task_id
        for task in context["dag"].tasks
        if task.task_id.startswith(("check_", "repair_", "verify_"))
        and task.task_id in summary
        and summary[task.task_id].get("status") not in ENDED_WELL
    )
    # The first job of each branch always runs: no report means it failed before writing one (bad input, no node).
    first_steps = [task.task_id for task in context["dag"].tasks if task.task_id.startswith("check_")] or [
        task.task_id for task in context["dag"].tasks if task.task_id.startswith("repair_")
    ]
    incomplete += sorted(step for step in first_steps if step not in summary)
    if incomplete:
        raise RuntimeError(
            f"steps that did not complete: {', '.join(incomplete)} (the other branches ran to their end)"
        )
    return summary


def _repair_dag(
    *, dag_id, description, doc_md, schedule, form_title, tags, alert_title, priority_weight=None, extra_params=None
) -> DAG:
    """What every repair DAG shares: off-peak schedule, one run at a time, the trigger form, the failure alert."""
    default_args = {
        "owner": "mail-platform",
        "on_failure_callback": ConsistencyAlert(f"{dag_id}: {alert_title}"),
        "execution_timeout": timedelta(hours=6),
    }
    if priority_weight is not None:
        default_args["priority_weight"] = priority_weight
    return DAG(
        dag_id=dag_id,
        description=description,
        doc_md=doc_md,
        schedule=schedule,
        # No start_date: a DAG deployed or unpaused after tonight's slot waits for the next one instead of starting
        # the missed repair at once (see schedule_from_environment).
        catchup=False,
        max_active_runs=1,
        deadline=repair_window(),
        params={**repair_params(form_title), **(extra_params or {})},
        tags=["james", "consistency", *tags],
        default_args=default_args,
    )


def _branch_report() -> PythonOperator:
    return PythonOperator(
        task_id="report",
        python_callable=summarize_rebuilds,
        trigger_rule=TriggerRule.ALL_DONE,
        on_failure_callback=None,  # each failed branch already alerted
    )


def consistency_dag(
    *,
    dag_id: str,
    target: str,
    target_title: str,
    cron_variable: str,
    doc_md: str,
    schedule=None,
    outlets=(),
):
    """A repair DAG for one projection of the reconcile engine (`schedule` overrides the cron, e.g. an asset).
    `outlets` are emitted by the final report, which runs only when nothing failed; for an AssetAlias outlet the
    report emits the asset of the run's keyspace (`keyspace_asset`), and nothing on a dry run."""
    with _repair_dag(
        dag_id=dag_id,
        description=f"Check and repair {target_title}, gated by Great Expectations",
        doc_md=doc_md,
        schedule=schedule or schedule_from_environment(cron_variable),
        form_title=target_title,
        tags=[target],
        alert_title="a check or repair failed",
    ) as dag:
        check = _spark_job(task_id="check", target=target, mode="check")
        anything_to_repair = ShortCircuitOperator(
            task_id="anything_to_repair", python_callable=repair_after_check, ignore_downstream_trigger_rules=False
        )
        repair = _spark_job(task_id="repair", target=target, mode="repair", scan_step="check")
        verify = _spark_job(task_id="verify", target=target, mode="verify", scan_step="check")
        report = PythonOperator(
            task_id="report",
            python_callable=summarize_and_announce,
            trigger_rule=TriggerRule.NONE_FAILED,
            outlets=list(outlets),
        )
        check >> anything_to_repair >> repair >> verify >> report
    return dag


def multi_target_consistency_dag(
    *,
    dag_id: str,
    targets: dict[str, str],
    title: str,
    doc_md: str,
    cron_variable: str | None = None,
    after: AssetAlias | None = None,
    priority_weight: int = 1,
):
    """Several independent projections, each check -> short-circuit -> repair -> verify on its own branch (one
    failing does not stop the others), then one report that fails the run if any branch failed. Task ids:
    check_<target>, anything_to_repair_<target>, repair_<target>, verify_<target>, report.

    Scheduled off-peak by cron, or, with `after`, on the asset of the deployment's keyspace that a DAG emits through
    that alias when it ended well on it (no cron: the DAG waits for it)."""
    with _repair_dag(
        dag_id=dag_id,
        description=f"Check and repair {title}, gated by Great Expectations",
        doc_md=doc_md,
        schedule=_cron_or_asset(dag_id, cron_variable, after),
        form_title=title,
        tags=list(targets),
        alert_title="a check or repair failed",
        priority_weight=priority_weight,
    ) as dag:
        verifications = [_target_branch(target, target_title) for target, target_title in targets.items()]
        verifications >> _branch_report()
    return dag


def _cron_or_asset(dag_id: str, cron_variable: str | None, after: AssetAlias | None):
    """The asset of the deployment's keyspace announced through `after`, else the cron of `cron_variable`."""
    if after is not None:
        return [keyspace_asset(after, deployment_keyspace())]
    if cron_variable:
        return schedule_from_environment(cron_variable)
    raise ValueError(f"{dag_id}: give a cron setting (cron_variable) or the alias to run after")


def _target_branch(target: str, target_title: str) -> ConsistencyJobOperator:
    """One target's branch: check_<target> -> anything_to_repair_<target> -> repair_<target> -> verify_<target>,
    the last returned."""
    check = _spark_job(task_id=f"check_{target}", target=target, mode="check", doc_md=f"Check {target_title}")
    anything_to_repair = ShortCircuitOperator(
        task_id=f"anything_to_repair_{target}",
        python_callable=repair_after_check,
        op_kwargs={"check_step": f"check_{target}"},
        ignore_downstream_trigger_rules=False,
    )
    repair = _spark_job(task_id=f"repair_{target}", target=target, mode="repair", scan_step=f"check_{target}")
    verify = _spark_job(task_id=f"verify_{target}", target=target, mode="verify", scan_step=f"check_{target}")
    check >> anything_to_repair >> repair >> verify
    return verify


def independent_repairs_dag(
    *, dag_id: str, targets: dict[str, str], cron_variable: str, doc_md: str, priority_weight: int
):
    """Several low-priority repairs in one run, each its own SparkSubmit repair then verify, independent of each
    other (a failed one does not stop the others), then one summary of them all."""
    with _repair_dag(
        dag_id=dag_id,
        description="Rebuild low-priority projections from their truth, each independently",
        doc_md=doc_md,
        schedule=schedule_from_environment(cron_variable),
        form_title="the low-priority indexes",
        tags=list(targets),
        alert_title="a rebuild failed",
        priority_weight=priority_weight,
        extra_params={
            "remove_unused_flags": Param(
                False,
                type="boolean",
                title="Remove unused keywords (applicableFlag)",
                description="Also remove keywords no message of the mailbox uses; James itself only ever adds them.",
                section="Repair",
            )
        },
    ) as dag:
        verifications = []
        for target, title in targets.items():
            repair = _spark_job(task_id=f"repair_{target}", target=target, mode="repair", doc_md=f"Rebuild {title}")
            verify = _spark_job(task_id=f"verify_{target}", target=target, mode="verify", scan_step=f"repair_{target}")
            repair >> verify
            verifications.append(verify)
        verifications >> _branch_report()
    return dag
