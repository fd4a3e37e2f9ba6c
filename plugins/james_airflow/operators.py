"""The SparkSubmitOperator that runs one mode of one repair job, configured from the trigger form at run time.

Cassandra's address and credentials come from the Airflow connection when the task runs (never at parse time):
host and port go to the connector's Spark conf, the username and password to the job's environment, so the
password is neither on the spark-submit command line nor in a rendered template.
"""

import os
import re

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk.exceptions import AirflowException, AirflowFailException
from james_consistency.exit_codes import TRANSIENT_EXIT_CODE
from james_consistency.paths import JOBS_DIR

from james_airflow.connections import cassandra_environment
from james_airflow.runs import report_path


def job_arguments(target: str, mode: str, params: dict, report: str) -> list[str]:
    """The reconcile job's command-line arguments for this mode, from the DAG run's params."""
    if mode == "repair" and params.get("dry_run"):
        mode = "check"
    arguments = ["--target", target, "--keyspace", str(params["keyspace"]), "--mode", mode, "--report", report]
    if mode == "repair":
        arguments += [
            "--messages-per-second",
            str(params["messages_per_second"]),
            "--recheck-delay",
            str(params["recheck_delay_seconds"]),
            "--truth-consistency",
            str(params["truth_consistency"]),
            "--max-destructive-share",
            str(params["max_destructive_share"]),
        ]
        if params.get("allow_destructive"):
            arguments.append("--allow-destructive")
    if target == "flags" and params.get("remove_unused_flags"):
        arguments.append("--remove-unused-flags")
    return arguments


class ConsistencyJobOperator(SparkSubmitOperator):
    """spark-submit of spark/jobs/reconcile.py in one mode (check, repair or verify) for one target."""

    def __init__(self, *, target: str, mode: str, cassandra_conn_id: str = "cassandra_default", **kwargs):
        super().__init__(application=str(JOBS_DIR / "reconcile.py"), name=f"james-{target}-{mode}", **kwargs)
        self.target = target
        self.mode = mode
        self.cassandra_conn_id = cassandra_conn_id

    def execute(self, context):
        from james_consistency.cql import CassandraSettings
        from james_consistency.paths import spark_jars
        from james_consistency.spark_env import connector_conf, driver_java_options

        report = report_path(context["dag"].dag_id, context["run_id"], self.task_id)
        report.parent.mkdir(parents=True, exist_ok=True)
        cassandra_conf, environment = cassandra_environment(self.cassandra_conn_id)
        settings = CassandraSettings(
            host=cassandra_conf["spark.cassandra.connection.host"],
            port=int(cassandra_conf["spark.cassandra.connection.port"]),
            username=environment.get("CASSANDRA_USERNAME"),
            local_dc=environment.get("CASSANDRA_LOCAL_DC"),
            tls_truststore=environment.get("CASSANDRA_TLS_TRUSTSTORE"),
        )
        # The DAG author's conf and env are kept apart so a second execute() starts from them again.
        self._user_conf = getattr(self, "_user_conf", dict(self.conf or {}))
        self._user_env = getattr(self, "_user_env", dict(self.env_vars or {}))
        self.conf = {
            **connector_conf(settings),
            "spark.driver.extraJavaOptions": driver_java_options(quick_jit=True),
            **self._user_conf,
        }
        self.env_vars = {**metrics_environment(), **self._user_env, **environment}
        self.jars = ",".join(str(jar) for jar in spark_jars())
        self.application_args = job_arguments(self.target, self.mode, context["params"], str(report))
        try:
            return super().execute(context)
        except AirflowException as failure:
            if exit_code(failure) == TRANSIENT_EXIT_CODE:
                raise  # up for retry while retries are left
            message = f"{failure} Not retried: only exit {TRANSIENT_EXIT_CODE} is transient."
            raise AirflowFailException(message) from None


def metrics_environment() -> dict[str, str]:
    """Airflow's [metrics] settings as the job reads them (AIRFLOW__METRICS__*), so it sends its figures where
    Airflow sends its own; a variable already in the task's environment reaches the job as it is."""
    from airflow.sdk.configuration import conf
    from james_consistency.metrics import ENV_PREFIX, SETTINGS

    environment = {}
    for name in SETTINGS:
        variable = ENV_PREFIX + name.upper()
        value = conf.get("metrics", name, fallback=None)
        if variable not in os.environ and value is not None:
            environment[variable] = str(value)
    return environment


def exit_code(failure: Exception) -> int | None:
    """The spark-submit exit code in SparkSubmitHook's failure message ("... Error code is: 4.")."""
    found = re.search(r"Error code is: (-?\d+)", str(failure))
    return int(found.group(1)) if found else None
