"""Every DAG of the package's DAGs folder (james_airflow.dags: the repository's dags/) imports cleanly, fast, without
I/O, and follows the project's rules for repair DAGs."""

import json
import os
import subprocess
import sys

from james_airflow.bundle import DAGS_FOLDER as PACKAGE_DAGS_FOLDER
from james_consistency.settings import setting

DAGS_FOLDER = str(PACKAGE_DAGS_FOLDER)
REPAIR_DAGS = {"message_consistency", "acl_consistency", "index_rebuild", "attachment_integrity"}  # on a cron
SCHEDULED_DAGS = REPAIR_DAGS | {"counters_recompute"}  # counters_recompute runs on the message repair's asset
HEAVY_POOL = "cassandra_heavy"
DEPLOYMENT_VARIABLES = (
    "JAMES_REPAIR_TIMEZONE",
    "JAMES_MESSAGE_REPAIR_CRON",
    "JAMES_INDEX_REBUILD_CRON",
    "JAMES_ATTACHMENT_CHECK_CRON",
    "JAMES_REPAIR_WINDOW_MINUTES",
)


def is_heavy(task) -> bool:
    """Spark jobs scan or write whole Cassandra tables."""
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    return isinstance(task, SparkSubmitOperator)


def parse_in_subprocess(code: str, **env: str) -> list[str]:
    """Run `code` after a DagBag of dags/ in a fresh interpreter (nothing imported by other tests), without the
    deployment variables of this shell unless given."""
    clean = {k: v for k, v in os.environ.items() if not k.endswith(DEPLOYMENT_VARIABLES)}
    probe = (
        "import sys, time, json\n"
        "started = time.perf_counter()\n"
        "from airflow.dag_processing.dagbag import DagBag\n"
        "imported = time.perf_counter()\n"
        f"dagbag = DagBag({DAGS_FOLDER!r})\n"
        "parsed = time.perf_counter()\n" + code
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env={**clean, **env}, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip().splitlines()


def test_no_import_errors(dagbag):
    assert dagbag.import_errors == {}
    assert REPAIR_DAGS <= set(dagbag.dag_ids)


def alerts_on_failure(callbacks) -> bool:
    from james_airflow.notifiers import ConsistencyAlert

    callbacks = callbacks if isinstance(callbacks, list) else [callbacks]
    return any(isinstance(callback, ConsistencyAlert) for callback in callbacks)


def test_every_dag_has_tags_an_owner_and_a_failure_alert(dagbag):
    """The alert is a task-level notifier (a DAG-level one fails under dag.test()); every Spark job has it, and a
    task may go without only when what makes it fail has already alerted (index_rebuild's summary)."""
    for dag_id, dag in dagbag.dags.items():
        assert dag.tags, dag_id
        assert dag.description and dag.doc_md, dag_id
        assert alerts_on_failure(dag.default_args.get("on_failure_callback")), f"{dag_id}: default_args alert"
        for task in dag.tasks:
            assert task.owner not in ("", "airflow"), (dag_id, task.task_id)
            if is_heavy(task):
                assert alerts_on_failure(task.on_failure_callback), (dag_id, task.task_id)
    assert all(alerts_on_failure(task.on_failure_callback) for task in dagbag.get_dag("message_consistency").tasks)


def test_repair_dags_follow_the_rules(dagbag):
    from airflow.timetables.trigger import CronTriggerTimetable

    for dag_id in REPAIR_DAGS:
        dag = dagbag.get_dag(dag_id)
        assert dag.max_active_runs == 1, dag_id
        assert dag.catchup is False, dag_id
        assert isinstance(dag.timetable, CronTriggerTimetable), dag_id
        assert dag.timetable._timezone.name == setting("JAMES_REPAIR_TIMEZONE"), dag_id
        heavy = [task for task in dag.tasks if is_heavy(task)]
        assert heavy, dag_id
        for task in heavy:
            assert task.pool == HEAVY_POOL and task.pool_slots == 1, (dag_id, task.task_id)
            assert task.execution_timeout, (dag_id, task.task_id)


def test_a_night_overrunning_its_window_alerts_and_only_spark_jobs_are_retried(dagbag):
    windows = parse_in_subprocess(
        "import os\n"
        f"for dag_id in {sorted(SCHEDULED_DAGS)!r}:\n"
        "    (window,) = dagbag.get_dag(dag_id).deadline\n"
        "    print('WINDOW', dag_id, type(window.reference).__name__, window.interval.total_seconds(),"
        " window.callback.path, window.callback.kwargs)\n"
        "os.environ['JAMES_REPAIR_WINDOW_MINUTES'] = '45'\n"
        f"print('SET', DagBag({DAGS_FOLDER!r}).get_dag('acl_consistency').deadline[0].interval.total_seconds())\n"
    )
    callback = "james_airflow.notifiers.repair_window_overrun {'window_minutes': 180.0}"
    assert sorted(line for line in windows if line.startswith("WINDOW")) == [
        f"WINDOW {dag_id} DagRunQueuedAtDeadline 10800.0 {callback}" for dag_id in sorted(SCHEDULED_DAGS)
    ]
    assert "SET 2700.0" in windows
    for dag_id in SCHEDULED_DAGS:
        dag = dagbag.get_dag(dag_id)
        for task in dag.tasks:
            # Spark jobs retry (only their transient exit 5: the operator fails anything else at once); a failed
            # report or decision would fail the same way again.
            expected = (2, 2.0) if is_heavy(task) else (0, 0)
            assert (task.retries, task.retry_exponential_backoff) == expected, (dag_id, task.task_id)


def test_the_trigger_form_is_complete_and_its_defaults_are_valid(dagbag):
    for dag_id in SCHEDULED_DAGS:
        dag = dagbag.get_dag(dag_id)
        assert set(dag.params) >= {
            "keyspace",
            "dry_run",
            "messages_per_second",
            "max_destructive_share",
            "recheck_delay_seconds",
        }, dag_id
        validated = dag.params.validate()  # Param defaults are not validated at parse time
        assert validated["dry_run"] is False and 0 < validated["max_destructive_share"] < 1, dag_id
        for name in dag.params:
            param = dag.params.get_param(name)
            assert param.schema.get("title") and param.description, (dag_id, name)


def test_message_consistency_is_gate_check_repair_gate_report(dagbag):
    from airflow.providers.standard.operators.python import ShortCircuitOperator

    dag = dagbag.get_dag("message_consistency")
    chain = ["check", "anything_to_repair", "repair", "verify", "report"]

    assert [task.task_id for task in dag.topological_sort()] == chain
    for upstream, downstream in zip(chain, chain[1:], strict=False):
        assert dag.get_task(upstream).downstream_task_ids == {downstream}
    assert isinstance(dag.get_task("anything_to_repair"), ShortCircuitOperator)
    assert [task.task_id for task in dag.tasks if is_heavy(task)] == ["check", "repair", "verify"]
    assert {dag.get_task(t).mode for t in ("check", "repair", "verify")} == {"check", "repair", "verify"}
    assert dag.get_task("check")._conn_id == "spark_default"


def test_task_ids_are_named_after_their_step_with_the_target_only_in_multi_target_dags(dagbag):
    steps = ("check", "anything_to_repair", "approve", "repair", "verify", "report", "remove_expired_before_images")
    for dag_id, dag in dagbag.dags.items():
        targets = {task.target for task in dag.tasks if is_heavy(task)}
        expected_suffixes = {f"_{target}" for target in targets} if len(targets) > 1 else {""}
        for task in dag.tasks:
            step = next((step for step in steps if task.task_id.startswith(step)), None)
            assert step, (dag_id, task.task_id)
            suffix = task.task_id[len(step) :]
            if step == "report":
                assert suffix == "", (dag_id, task.task_id)
            else:
                assert suffix in expected_suffixes, (dag_id, task.task_id)


def test_a_setting_that_does_not_parse_is_an_import_error_naming_it_and_its_value():
    shown = parse_in_subprocess(
        "print(json.dumps({path.rsplit('/', 1)[-1]: error for path, error in dagbag.import_errors.items()}))",
        JAMES_REPAIR_RETRIES="two",
    )
    errors = json.loads(shown[-1])

    assert "message_consistency.py" in errors and "mailbox_offline_repair.py" not in errors
    assert "setting JAMES_REPAIR_RETRIES='two' is not valid: expected an integer" in errors["message_consistency.py"]


def test_dag_files_parse_fast_without_io_or_heavy_imports():
    heavy = (
        "pyspark",
        "great_expectations",
        "cassandra",
        "james_consistency.cassandra.cql",
        "james_consistency.engine",
    )
    last = parse_in_subprocess(
        f"heavy = sorted(m for m in {heavy!r} if m in sys.modules)\n"
        "print(json.dumps({'errors': list(dagbag.import_errors), 'dags': len(dagbag.dags), 'heavy': heavy,"
        " 'airflow_import': imported - started, 'parse': parsed - imported}))"
    )[-1]
    found = json.loads(last)

    assert found["errors"] == [] and found["dags"] >= len(REPAIR_DAGS)
    assert found["heavy"] == [], "no Spark, GX or Cassandra driver code imported at parse time"
    assert found["parse"] < 3, f"dags/ parsed in {found['parse']:.2f}s"
    print(f"DagBag: Airflow import {found['airflow_import']:.2f}s, parse of dags/ {found['parse']:.2f}s")


def test_a_dag_unpaused_after_its_slot_waits_for_the_next_one(dagbag, monkeypatch):
    """Airflow starts a missed slot at once when unpaused shortly after it unless told not to: a repair unpaused
    late in tonight's window (or by make run's demo 19 minutes after the slot) would start a whole repair at once."""
    from datetime import UTC, datetime, timedelta

    import airflow.timetables.trigger as trigger
    from airflow.timetables.base import TimeRestriction

    for dag_id in REPAIR_DAGS:
        timetable = dagbag.get_dag(dag_id).timetable
        slot = timetable._align_to_prev(datetime(2026, 11, 25, 12, 0, tzinfo=UTC))
        monkeypatch.setattr(trigger, "utcnow", lambda slot=slot: slot + timedelta(minutes=19))

        first = timetable.next_dagrun_info(
            last_automated_data_interval=None, restriction=TimeRestriction(earliest=None, latest=None, catchup=False)
        )

        assert first.run_after > slot + timedelta(minutes=19), (dag_id, slot, first.run_after)


def test_schedule_and_timezone_come_from_the_environment_or_airflow_variables():
    settings = [
        {},
        {"JAMES_MESSAGE_REPAIR_CRON": "15 3 * * 6", "JAMES_REPAIR_TIMEZONE": "America/New_York"},
        {"AIRFLOW_VAR_JAMES_MESSAGE_REPAIR_CRON": "0 4 * * 0", "AIRFLOW_VAR_JAMES_REPAIR_TIMEZONE": "UTC"},
    ]
    shown = parse_in_subprocess(
        f"import os\nfor env in {settings!r}:\n"
        "    os.environ.update(env)\n"
        f"    dag = DagBag({DAGS_FOLDER!r}).get_dag('message_consistency')\n"
        "    print('SCHEDULE', dag.timetable._expression, dag.timetable._timezone.name)\n"
        "    for name in env: del os.environ[name]\n"
    )

    assert [line.removeprefix("SCHEDULE ") for line in shown if line.startswith("SCHEDULE ")] == [
        "30 2 * * * Europe/Paris",
        "15 3 * * 6 America/New_York",
        "0 4 * * 0 UTC",
    ]


def test_the_safety_threshold_of_scheduled_runs_is_a_deployment_setting():
    """A scheduled or asset-triggered run takes the form's defaults: the threshold comes from the environment."""
    shown = parse_in_subprocess(
        "import os\n"
        "for value in (None, '0.2'):\n"
        "    if value: os.environ['JAMES_MAX_DESTRUCTIVE_SHARE'] = value\n"
        f"    bag = DagBag({DAGS_FOLDER!r})\n"
        "    print('SHARE', sorted({bag.get_dag(d).params['max_destructive_share'] for d in "
        "('message_consistency', 'counters_recompute', 'acl_consistency', 'index_rebuild')}))\n"
    )

    assert [line for line in shown if line.startswith("SHARE ")] == ["SHARE [0.05]", "SHARE [0.2]"]
