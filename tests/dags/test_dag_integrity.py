"""Every DAG of dags/ imports cleanly, fast, and follows the project's rules for repair DAGs."""

import subprocess
import sys
import time

from james_consistency.paths import PROJECT_ROOT

REPAIR_DAGS = {"message_consistency", "index_rebuild"}


def test_no_import_errors(dagbag):
    assert dagbag.import_errors == {}
    assert REPAIR_DAGS <= set(dagbag.dag_ids)


def test_repair_dags_follow_the_rules(dagbag):
    for dag_id in REPAIR_DAGS:
        dag = dagbag.get_dag(dag_id)
        assert dag.max_active_runs == 1, dag_id
        assert dag.catchup is False, dag_id
        assert "james" in dag.tags, dag_id
        assert dag.timetable.summary, dag_id
        assert str(dag.timetable._timezone) in ("Europe/Paris", "UTC") or dag.timetable._timezone, dag_id
        for task in dag.tasks:
            assert task.owner == "mail-platform", (dag_id, task.task_id)
            assert task.on_failure_callback or task.task_id == "report", (dag_id, task.task_id)
            if type(task).__name__ == "ConsistencyJobOperator":
                assert task.pool == "cassandra_heavy", (dag_id, task.task_id)
        assert set(dag.params) >= {
            "keyspace",
            "dry_run",
            "messages_per_second",
            "max_destructive_share",
            "recheck_delay_seconds",
        }


def test_schedule_and_timezone_come_from_the_environment():
    probe = (
        "from airflow.dag_processing.dagbag import DagBag;"
        f"dag = DagBag({str(PROJECT_ROOT / 'dags')!r}).get_dag('message_consistency');"
        "print(dag.timetable._expression, dag.timetable._timezone)"
    )
    env = {"JAMES_MESSAGE_REPAIR_CRON": "15 3 * * 6", "JAMES_REPAIR_TIMEZONE": "America/New_York"}
    import os

    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env={**os.environ, **env}, timeout=120
    )
    assert result.stdout.strip().splitlines()[-1] == "15 3 * * 6 America/New_York"


def test_dag_files_parse_fast_without_touching_cassandra_or_spark():
    started = time.perf_counter()
    probe = (
        "import sys; from airflow.dag_processing.dagbag import DagBag;"
        f"DagBag({str(PROJECT_ROOT / 'dags')!r});"
        "heavy = ('pyspark', 'great_expectations', 'james_consistency.cql', 'james_consistency.engine');"
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.stdout.strip().splitlines()[-1] == "[]", (
        "no Spark, GX or Cassandra session code imported at parse time"
    )
    assert time.perf_counter() - started < 30
