"""The SparkSubmitOperator that runs one mode of one repair job, configured from the trigger form at run time.

Cassandra's address and credentials come from the Airflow connection when the task runs (never at parse time):
host and port go to the connector's Spark conf, the username and password to the job's environment, so the
password is neither on the spark-submit command line nor in a rendered template.
"""

import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSkipException
from james_consistency.cassandra.consistency_levels import AS_JAMES
from james_consistency.report.exit_codes import EXIT_WINDOW_ENDED, TRANSIENT_EXIT_CODE
from james_consistency.report.run_report import RunReport, Status
from james_consistency.runtime.package_data import entry_point
from james_consistency.settings import setting

from james_airflow.connections import cassandra_environment
from james_airflow.runs import read_report, read_report_file, report_path, run_folder

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


@dataclass(frozen=True)
class RunScan:
    """How a DAG run scans once: the first job of a branch scans (in journalled token ranges, stopping at the
    window's end) and keeps its scan in the run's work folder; the later ones reuse it."""

    run_dir: str
    reuse: bool
    work_root: str | None = None
    until: datetime | None = None
    ranges: int = 0
    full_verify: bool = False
    # The night's load limits as the job's arguments (engine.load_limits.LoadLimits.as_arguments): its scan's, and
    # the pace of the re-checks of the jobs that reuse the scan.
    load: tuple[str, ...] = ()

    def arguments(self, mode: str) -> list[str]:
        arguments = ["--run-dir", self.run_dir]
        if self.work_root:
            arguments += ["--work-root", self.work_root]
        if self.reuse and not (mode == "verify" and self.full_verify):
            return [*arguments, "--reuse-scan", *self.load]
        arguments += ["--ranges", str(self.ranges)]
        if self.until is not None:
            arguments += ["--until", self.until.isoformat()]
        return [*arguments, *self.load]


def run_load(params: dict, scheduled: bool):
    """The scan's limits of a DAG run: the trigger form's (the settings' for a field it lacks); the adaptive mode as
    JAMES_ADAPTIVE_RATE says on a scheduled (or asset-triggered) run, as the form says on a manual one. A limit that
    makes no sense fails the task at once, before spark-submit (never retried)."""
    from james_consistency.engine.load_limits import LoadLimits
    from james_consistency.errors import OperatorError

    try:
        return LoadLimits.from_settings(
            adaptive=setting("JAMES_ADAPTIVE_RATE") if scheduled else bool(params.get("adaptive")),
            rows_per_second=params.get("scan_rows_per_second"),
            # An empty target in the form means derived (0), whatever the setting.
            latency_target_ms=(params["latency_target_ms"] or 0.0) if "latency_target_ms" in params else None,
            floor=params.get("rate_floor"),
        ).validate()
    except OperatorError as error:
        raise AirflowFailException(f"the scan's limits: {error}") from None


def job_arguments(target: str, mode: str, params: dict, report: str, scan: RunScan | None = None) -> list[str]:
    """The reconcile job's command-line arguments for this mode, from the DAG run's params."""
    if mode == "repair" and params.get("dry_run"):
        mode = "check"
    arguments = ["--target", target, "--keyspace", str(params["keyspace"]), "--mode", mode, "--report", report]
    if scan is not None and not (mode == "check" and scan.reuse):
        arguments += scan.arguments(mode)
    if mode == "repair":
        arguments += [
            "--messages-per-second",
            str(params["messages_per_second"]),
            "--recheck-delay",
            str(params["recheck_delay_seconds"]),
            "--max-destructive-share",
            str(params["max_destructive_share"]),
        ]
        if params.get("truth_consistency", AS_JAMES) != AS_JAMES:  # a level chosen in the form wins over James's
            arguments += ["--truth-consistency", str(params["truth_consistency"])]
        if params.get("allow_destructive"):
            arguments.append("--allow-destructive")
    if mode == "verify" and "recheck_delay_seconds" in params:  # a key found wrong is read again this long after
        arguments += ["--recheck-delay", str(params["recheck_delay_seconds"])]
    if target == "flags" and params.get("remove_unused_flags"):
        arguments.append("--remove-unused-flags")
    return arguments


class ConsistencyJobOperator(SparkSubmitOperator):
    """spark-submit of the reconcile entry point in one mode (check, repair or verify) for one target.

    `scan_step` names the task of the same DAG run whose kept scan this one reuses (None: this task scans). A task
    whose scan step ended at the window's end with nothing decided is skipped: the next run goes on from the
    journal."""

    def __init__(
        self,
        *,
        target: str,
        mode: str,
        scan_step: str | None = None,
        cassandra_conn_id: str = "cassandra_default",
        **kwargs,
    ):
        super().__init__(application=str(entry_point("reconcile.py")), name=f"james-{target}-{mode}", **kwargs)
        self.target = target
        self.mode = mode
        self.scan_step = scan_step
        self.cassandra_conn_id = cassandra_conn_id

    def execute(self, context):
        from james_consistency.cassandra.cql import CassandraSettings
        from james_consistency.runtime.connector_jars import spark_jars
        from james_consistency.runtime.spark_env import (
            cluster_shipping_conf,
            connector_conf,
            driver_java_options,
            local_driver_conf,
        )

        report = report_path(context["dag"].dag_id, context["run_id"], self.task_id)
        report.parent.mkdir(parents=True, exist_ok=True)
        if self.scan_step is not None:
            scanned = read_report(context["dag"].dag_id, context["run_id"], self.scan_step)
            if scanned is not None and nothing_decided(scanned):
                raise AirflowSkipException(f"{self.scan_step}: {scanned.windowEnded}; the next run goes on")
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
        master = self._get_hook()._connection["master"]  # spark_default's master, resolved as spark-submit will
        self.conf = {
            **connector_conf(settings),
            # On a cluster the executors get the product zip and a Python of their own (nothing of this machine).
            **cluster_shipping_conf(master),
            **local_driver_conf(master),
            "spark.driver.extraJavaOptions": driver_java_options(quick_jit=True),
            **self._user_conf,
        }
        self.env_vars = {**metrics_environment(), **self._user_env, **environment}
        self.jars = ",".join(str(jar) for jar in spark_jars())
        self.application_args = self.arguments(context, str(report))
        try:
            return super().execute(context)
        except AirflowException as failure:
            if exit_code(failure) == EXIT_WINDOW_ENDED:
                ended = read_report_file(report) if report.exists() else None
                self.log.warning("%s; the next run goes on", ended.windowEnded if ended else "window ended")
                return None
            if exit_code(failure) == TRANSIENT_EXIT_CODE:
                raise  # up for retry while retries are left
            message = f"{failure} Not retried: only exit {TRANSIENT_EXIT_CODE} is transient."
            raise AirflowFailException(message) from None

    def arguments(self, context, report: str) -> list[str]:
        """The job's command-line arguments (a job of its own overrides them: the mailbox repair, the undo)."""
        return job_arguments(self.target, self.mode, context["params"], report, self.run_scan(context))

    def run_scan(self, context) -> RunScan:
        """The run's work folder for this target, and the window's end: the run's due time plus
        JAMES_REPAIR_WINDOW_MINUTES (a manual run is due when triggered)."""
        dag_id, run_id = context["dag"].dag_id, context["run_id"]
        root = setting("JAMES_WORK_ROOT")
        if root:
            run_dir = f"{root.rstrip('/')}/airflow/{dag_id}/{run_folder(dag_id, run_id).name}/{self.target}"
        else:
            run_dir = str(run_folder(dag_id, run_id) / "work" / self.target)
        dag_run = context.get("dag_run")
        due = getattr(dag_run, "run_after", None) or getattr(dag_run, "start_date", None) or datetime.now(UTC)
        window = setting("JAMES_REPAIR_WINDOW_MINUTES")
        weekday = setting("JAMES_FULL_VERIFY_WEEKDAY").lower()[:3]
        scheduled = getattr(dag_run, "run_type", "manual") != "manual"
        return RunScan(
            run_dir=run_dir,
            reuse=self.scan_step is not None,
            work_root=root,
            until=due + timedelta(minutes=window) if window > 0 else None,
            ranges=setting("JAMES_TOKEN_RANGES"),
            full_verify=bool(context["params"].get("full_verify"))
            or (weekday in WEEKDAYS and due.weekday() == WEEKDAYS.index(weekday)),
            load=tuple(run_load(context["params"], scheduled).as_arguments()),
        )


def nothing_decided(report: RunReport) -> bool:
    """A run whose window ended before any range decided anything: nothing to repair or verify from its scan."""
    return report.status == Status.WINDOW_ENDED and not report.decidedByFinishedRanges


def metrics_environment() -> dict[str, str]:
    """Airflow's [metrics] settings as the job reads them (AIRFLOW__METRICS__*), so it sends its figures where
    Airflow sends its own; a variable already in the task's environment reaches the job as it is."""
    from airflow.sdk.configuration import conf
    from james_consistency.report.metrics import ENV_PREFIX, SETTINGS

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
