"""One run of the engine for one repair: check (dry run), repair, or verify, in five stages.

    scan       the tables read once; the candidates written to the run's work folder; what the gates judge measured
               on the way (the repair's `scan`)
    judge      the health gate judges what the scan measured; the report gets what was found
    plan       the gates before anything is written (the repair's `safety`: a projection's plan-safety, the mailbox
               repair's typed confirmation was checked at the start); the re-check waits for its delay
    reconcile  every candidate re-checked against live Cassandra in the executors by the one partition applier, with
               the repair's policy plugged in (and fixed when repairing)
    summarize  the outcomes counted into the report

A repair may work in passes (the offline mailbox repair): scan -> reconcile again while a pass fixes something. The
engine is handed its repair: it never looks a target up (james_consistency.jobs.targets does, for the job entry points).

Nothing is collected to the driver but counts and bounded samples. The work folder may be a local path or a Hadoop
filesystem URL (file://, hdfs://, s3a://): only Spark reads and writes it.
"""

import logging
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from james_consistency import gates
from james_consistency.cassandra.consistency_levels import CONSISTENCY_LEVELS, DEFAULT_CONSISTENCY_LEVEL, read_levels
from james_consistency.cassandra.cql import CassandraSettings
from james_consistency.cassandra.schema import validate_keyspace_name
from james_consistency.engine import apply, before_images, reports
from james_consistency.engine.load import ScanLoad
from james_consistency.engine.load_limits import LoadLimits, recheck_rate
from james_consistency.engine.ranges import RangedScan, WindowEnded
from james_consistency.engine.spec import Repair
from james_consistency.errors import OperatorError
from james_consistency.report.progress import ProgressFile
from james_consistency.report.run_report import FAILED, WINDOW_ENDED, ReportDraft
from james_consistency.runtime.paths import LOCAL_DIR
from james_consistency.settings import DEFAULT_MAX_DESTRUCTIVE_SHARE, setting

log = logging.getLogger("james_consistency")

MODES = ("check", "repair", "verify")
# The stages a run's progress names (report.progress), in their order.
STAGES = ("scan", "judge", "plan", "reconcile", "summarize")
# Adaptive execution's default advisory partition size: the limit under which a shuffled partition is hashed.
HASHED_JOIN_PARTITION_BYTES = "64MB"
# Whole-stage code generation: compiled plans pay off over the scan and its diff (every row of the tables); what
# follows them handles the candidates, about 1 % of the rows, and runs interpreted (see `execute`).
WHOLE_STAGE_CODEGEN = "spark.sql.codegen.wholeStage"
# The least time a verify waits before reading a key it found wrong again: James writes imapUidTable, then the
# projection, tens of milliseconds apart, and a user's write in flight lands well within it.
MIN_SECOND_LOOK_SECONDS = 1.0


class RunFailed(Exception):
    """The run stopped on an infrastructure failure (e.g. the node went away during the scan): the report says at
    which stage; nothing is written before the re-check stage, and a re-run converges."""

    def __init__(self, report: dict):
        super().__init__(report.get("error", "run failed"))
        self.report = report


class GateFailed(Exception):
    """A Great Expectations gate failed: the run stopped before writing (or the repair left differences)."""

    def __init__(self, report: dict):
        super().__init__(report["gates"][-1]["name"] if report.get("gates") else "gate")
        self.report = report


@dataclass
class RunOptions:
    target: str
    keyspace: str
    mode: str = "check"  # check (dry run) | repair | verify
    messages_per_second: float = 0.0  # 0 = unthrottled
    recheck_delay_seconds: float = 0.0
    # The level of every truth re-read (and of a ranged scan, unless serial); None: as James is configured
    # (cassandra.consistency_levels.read_levels).
    truth_consistency: str | None = None
    write_consistency: str = DEFAULT_CONSISTENCY_LEVEL
    max_destructive_share: float = DEFAULT_MAX_DESTRUCTIVE_SHARE
    allow_destructive: bool = False
    sample_size: int = 100
    run_dir: str | None = None
    gates_enabled: bool = True
    # repair/verify: work from the scan the check kept in `run_dir` instead of scanning again.
    reuse_scan: bool = False
    # The share of consistent keys the check keeps for a verify that reuses its scan.
    verify_sample_fraction: float = 0.001
    # Scan in journalled token ranges (0: as many as the data size asks for; None: one scan, nothing journalled),
    # resuming the unfinished scan of the same target and keyspace unless `fresh`; stop at a range boundary after
    # `until`.
    ranges: int | None = None
    until: float | None = None
    fresh: bool = False
    # At most this many ranges scanned by this run, then it stops as at its window's end (a bounded night's work).
    max_ranges: int | None = None
    # Where the ranges' kept rows go (a path or a Hadoop URL; default .local/runs).
    work_root: str | None = None
    # How hard the scan may read the ring: a rows-a-second limit per cluster, the adaptive mode (engine.load_limits).
    load: LoadLimits = field(default_factory=LoadLimits)
    # Where the run publishes its progress while it runs (report.progress: beside its report); None: nowhere.
    progress_file: str | None = None
    # The target's own options, a frozen dataclass the target defines (mailboxes.options.MailboxOptions,
    # projections.flags.FlagOptions), handed to its repair when the target is resolved (jobs.targets); None: the
    # target's defaults. Checked with the rest when it has a `validate()`.
    target_options: Any = None

    def validate(self) -> None:
        validate_keyspace_name(self.keyspace)
        if self.mode not in MODES:
            raise OperatorError(f"unknown mode '{self.mode}': check, repair or verify")
        if self.messages_per_second < 0 or self.recheck_delay_seconds < 0:
            raise OperatorError("messages-per-second and recheck-delay must be 0 or more")
        if not 0 <= self.max_destructive_share <= 1:
            raise OperatorError(f"max destructive share {self.max_destructive_share} is outside 0..1")
        if not 0 <= self.verify_sample_fraction <= 1:
            raise OperatorError(f"verify sample fraction {self.verify_sample_fraction} is outside 0..1")
        if self.write_consistency not in CONSISTENCY_LEVELS:
            level = self.write_consistency
            raise OperatorError(f"unknown consistency level '{level}': one of {', '.join(CONSISTENCY_LEVELS)}")
        read_levels(self.truth_consistency)  # a wrong level, given or set, said before anything starts
        if self.reuse_scan and self.mode == "check":
            raise OperatorError("a check makes the scan: --reuse-scan is for repair and verify")
        if self.reuse_scan and not self.run_dir:
            raise OperatorError("--reuse-scan needs --run-dir: the work folder of the check whose scan is reused")
        if self.ranges is not None and self.ranges < 0:
            raise OperatorError(f"ranges must be 0 (from the data size) or more, not {self.ranges}")
        if self.max_ranges is not None and self.max_ranges < 1:
            raise OperatorError(f"max ranges must be 1 or more, not {self.max_ranges}")
        if hasattr(self.target_options, "validate"):
            self.target_options.validate()
        self.load.validate()
        if (self.until is not None or self.max_ranges is not None) and self.ranges is None:
            self.ranges = 0  # a window is kept at range boundaries
        if self.load.adaptive and self.ranges is None:
            self.ranges = 0  # the rate adapts between batches of token ranges

    @property
    def ranged(self) -> bool:
        return self.ranges is not None and not self.reuse_scan

    @property
    def dry_run(self) -> bool:
        return self.mode != "repair"


def new_run_id() -> str:
    return f"{datetime.now(UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}"


@dataclass
class Run:
    """One run's identity and state."""

    options: RunOptions
    settings: CassandraSettings
    spark: SparkSession
    repair: Repair
    run_id: str = field(default_factory=new_run_id)
    started: float = field(default_factory=time.time)
    report: ReportDraft = field(default_factory=ReportDraft)
    ranged: RangedScan | None = None
    # The scan's rate and what it measured (the report's `load`), for a run that scans.
    load: ScanLoad | None = None
    # The session's whole-stage code generation, which the scan keeps (the stages after it run interpreted).
    scan_codegen: str = "true"
    # What the run publishes of its progress while it runs (nothing until `_execute` opens it).
    progress: ProgressFile = field(default_factory=lambda: ProgressFile(None, {}, STAGES))

    @property
    def keyspace(self) -> str:
        return self.options.keyspace.lower()

    @property
    def work_dir(self) -> str:
        return (self.options.run_dir or str(LOCAL_DIR / "runs" / self.run_id)).rstrip("/")

    def path(self, name: str) -> str:
        return f"{self.work_dir}/{name}"


@dataclass
class Scan:
    """What a scan left: where its candidates are (in the work folder), what it found per kind, the figures the
    health gate judges (`health`) and the others it measured (`metrics`), and a bounded sample of its findings."""

    health: dict
    metrics: dict
    found: dict[str, int]
    finished_at: float
    run_id: str
    candidates: str
    sample: list[dict] = field(default_factory=list)
    unreadable: int = 0
    unreadable_errors: list = field(default_factory=list)
    truth: DataFrame | None = None  # only for a scan made by this run: the health gate's problem sample
    # A kept scan's health verdict, as the run that made the scan judged it (GateResult fields), when it was judged.
    health_verdict: dict | None = None
    # The rows a second the scan read at when it ended (its limit, or the adaptive mode's last rate; 0: unlimited);
    # None when not known. Under a night's load limits the re-check keeps to it (engine.load_limits.recheck_rate).
    rate: float | None = None


@contextmanager
def stage(run: Run, name: str):
    """A stage whose infrastructure failure ends the run with a report naming the stage (RunFailed)."""
    started = time.perf_counter()
    try:
        yield
        log.info("%s: %.1f s", name, time.perf_counter() - started)
    except (OperatorError, GateFailed, WindowEnded, RunFailed):
        raise
    except Exception as error:  # noqa: BLE001 - Spark and connector errors, named in one line
        run.report["error"] = f"{name} failed: {reason(error)}"
        run.report["failedStage"] = name
        log.error(run.report["error"])
        raise RunFailed(reports.finish(run, FAILED)) from None


UNREACHABLE_HINTS = (
    "NoHostAvailable",
    "AllNodesFailed",
    "NoNodeAvailable",
    "Failed to open native connection",
    "ClosedConnection",
    "Connection refused",
    "DriverTimeout",
    "Control channel not available",
)


def reason(error: Exception) -> str:
    """One line: the root cause of a Spark/connector failure (a Py4JJavaError's first line says only which call)."""
    text = str(error)
    root = getattr(error, "java_exception", None)
    while root is not None and root.getCause() is not None:
        root = root.getCause()
    line = str(root.toString()) if root is not None else (text.strip().splitlines() or [""])[0]
    if any(hint in text or hint in line for hint in UNREACHABLE_HINTS):
        return f"Cassandra became unreachable ({line[:240]})"
    return line[:300] if root is not None else f"{type(error).__name__}: {line[:300]}"


def execute(spark: SparkSession, settings: CassandraSettings, options: RunOptions, repair: Repair) -> dict:
    """Run `repair` through the five stages; returns the report. Raises OperatorError for bad input, GateFailed for a
    failed gate, RunFailed for an infrastructure failure."""
    options.validate()
    if options.mode == "repair" and repair.confirmation and repair.typed_confirmation != repair.confirmation:
        raise OperatorError(f"{repair.name}: a repair needs the typed confirmation {repair.confirmation}")
    _keep_scan_figures(spark)
    _hash_small_joins(spark)
    run = Run(options, settings, spark, repair, scan_codegen=spark.conf.get(WHOLE_STAGE_CODEGEN, "true"))
    # The re-check's queries each handle thousands of rows: compiling their plans cost more than running them (on
    # the 1M bench, the JIT compiler took nearly half of the JVM's CPU in the repair and verify steps).
    with whole_stage_codegen(spark, "false"):
        return _execute(run)


def _execute(run: Run) -> dict:
    options, repair = run.options, run.repair
    run.report = reports.new_report(run)
    identity = {"runId": run.run_id, "target": repair.name, "keyspace": run.keyspace, "mode": options.mode}
    run.progress = ProgressFile(options.progress_file, identity, STAGES)
    log.info("%s %s on keyspace %s (James %s)", options.mode, repair.name, run.keyspace, repair.generation)
    if options.mode == "repair":
        # Before the scan: a table created later is a schema change the connector's session refreshes for, and a
        # node lost during that refresh left the session waiting on it for good.
        _prepare_before_images(run)

    try:
        scanned = scan(run)
    except WindowEnded as ended:
        reports.note_window_end(run.report, ended.progress)
        log.warning("%s: the next run goes on from here", run.report["windowEnded"])
        return reports.finish(run, WINDOW_ENDED)
    judge(run, scanned)
    if options.mode == "check":
        run.progress.stage("summarize")
        return reports.finish(run, repair.check(run, scanned))
    if options.mode == "verify":
        return reports.finish(run, repair.verify(run, scanned))
    return reports.finish(run, repair_in_passes(run, scanned))


@contextmanager
def whole_stage_codegen(spark: SparkSession, enabled: str):
    """Whole-stage code generation set to `enabled` ("true" or "false") meanwhile, then as it was."""
    before = spark.conf.get(WHOLE_STAGE_CODEGEN, "true")
    spark.conf.set(WHOLE_STAGE_CODEGEN, enabled)
    try:
        yield
    finally:
        spark.conf.set(WHOLE_STAGE_CODEGEN, before)


def _keep_scan_figures(spark: SparkSession) -> None:
    # Adaptive execution prunes the plan after a stage that comes out empty (nothing inconsistent), and the plan's
    # Observation (the scan counts) would be lost with it.
    spark.conf.set(
        "spark.sql.adaptive.optimizer.excludedRules",
        "org.apache.spark.sql.execution.adaptive.AQEPropagateEmptyRelation",
    )


def _hash_small_joins(spark: SparkSession) -> None:
    # The diff's join without sorting both sides, when adaptive execution sees that every partition of the shuffled
    # sides is small enough to hash in memory; a larger table keeps the sort-merge join, which spills instead.
    spark.conf.set("spark.sql.adaptive.maxShuffledHashJoinLocalMapThreshold", HASHED_JOIN_PARTITION_BYTES)


# ---- 1. scan ------------------------------------------------------------------------------------------------------


def scan(run: Run) -> Scan:
    """The repair's scan, its failure named as the scan stage's, compiled as the session compiles."""
    run.progress.stage("scan")
    with stage(run, "scan"), whole_stage_codegen(run.spark, run.scan_codegen):
        return run.repair.scan(run)


# ---- 2. judge -----------------------------------------------------------------------------------------------------


def judge(run: Run, scanned: Scan) -> None:
    """The report gets what the scan measured of the truth; the health gate judges those figures (with a sample of
    the rows it objects to); the report gets what the scan found."""
    repair, options = run.repair, run.options
    run.progress.stage("judge")
    repair.describe_truth(run, scanned)
    if options.gates_enabled and repair.health_suite:
        if scanned.health_verdict is not None:
            # A kept scan's figures were judged by the run that made it: the same figures, the same verdict.
            result = gates.GateResult(**{**scanned.health_verdict, "judged_by_run": scanned.run_id})
        else:
            result = gates.validate_figures(scanned.health, repair.health_suite, asset=repair.health_asset)
            if not result.success and scanned.truth is not None and hasattr(repair, "problem_sample"):
                result.sample_rows = repair.problem_sample(scanned.truth, options.sample_size)
            repair.keep_health_verdict(run, scanned, result)
        gate(run, result)
    repair.describe(run, scanned)


def gate(run: Run, result: gates.GateResult, stop: bool = True) -> bool:
    """A gate's verdict into the report; a failure stops the run (GateFailed) unless `stop` is False (a gate whose
    failure is an answer, such as the mailbox repair's `mailbox_nothing_to_do`)."""
    verdict = result.as_dict()
    if not stop:
        verdict["blocking"] = False  # its failure is an answer, not a fault: not shown as a failed gate
    run.report.setdefault("gates", []).append(verdict)
    log.info(result.summary())
    if stop and not result.success:
        if run.ranged is not None:
            run.ranged.close()  # refused rows must not come back as the next run's truth
        raise GateFailed(reports.finish(run, FAILED))
    return result.success


# ---- 3. plan ------------------------------------------------------------------------------------------------------


def plan(run: Run, scanned: Scan) -> None:
    """Before a repair writes: the repair's safety gates, then the delay that lets in-flight James writes land."""
    run.progress.stage("plan")
    run.repair.safety(run, scanned)
    wait_until(scanned.finished_at + run.options.recheck_delay_seconds)


def second_look_seconds(options: RunOptions) -> float:
    """How long after its first read a verify reads a key it found wrong again: the run's re-check delay, the rule
    the repair keeps between its scan and its re-check, and at least MIN_SECOND_LOOK_SECONDS."""
    return max(options.recheck_delay_seconds, MIN_SECOND_LOOK_SECONDS)


def wait_until(moment: float) -> None:
    delay = moment - time.time()
    if delay > 0:
        log.info("waiting %.1fs before re-checking candidates", delay)
        time.sleep(delay)


# ---- 4. reconcile -------------------------------------------------------------------------------------------------


def apply_context(run: Run, write: bool, scan_rate: float | None = None) -> apply.ApplyContext:
    """How the executors reach Cassandra for this run's re-checks: consistencies, the rate per task (the one given,
    else the night's load as its scan ended at `scan_rate`), write or not (a writing run records the before-image of
    every write first; a verify reads a key it finds wrong a second time)."""
    options = run.options
    parallelism = max(run.spark.sparkContext.defaultParallelism, 1)
    retention = int(setting("JAMES_UNDO_RETENTION_DAYS") * 24 * 3600)
    levels = read_levels(options.truth_consistency)
    per_second = recheck_rate(options.messages_per_second, options.load, scan_rate)
    return apply.ApplyContext(
        settings=run.settings,
        keyspace=run.keyspace,
        truth_consistency=levels.truth,
        message_truth_consistency=levels.message_truth,
        write_consistency=options.write_consistency,
        rate_per_task=per_second / parallelism if per_second else 0.0,
        write=write,
        imaging=apply.Imaging(run.run_id, run.repair.name, retention) if write else None,
        second_look_seconds=second_look_seconds(options) if options.mode == "verify" and not write else 0.0,
    )


def reconcile(run: Run, scanned: Scan, outcomes_name: str, write: bool) -> DataFrame:
    """Every candidate re-checked (and, when `write`, fixed) in the executors by the partition applier with the
    repair's policy; the outcomes (engine.apply.OUTCOME_SCHEMA) written to the work folder as `outcomes_name`."""
    spark, repair = run.spark, run.repair
    run.progress.stage("reconcile")
    with stage(run, "re-check and fix"):
        parallelism = max(spark.sparkContext.defaultParallelism, 1)
        context = apply_context(run, write, scanned.rate)
        if "runningOptions" in run.report:  # the re-check's pace in force (0: unthrottled), given or from the load
            run.report["runningOptions"]["recheckPerSecond"] = round(context.rate_per_task * parallelism, 1)
        candidates, context = repair.candidates(run, scanned, context)
        policy = repair.policy(run)
        group = policy.group_columns
        if group:
            candidates = candidates.repartition(parallelism, *group).sortWithinPartitions(*group, *policy.order)
        else:
            candidates = spread_over_executors(spark, candidates)
        rows = candidates.rdd.mapPartitions(apply.apply_partition(context, policy))
        path = run.path(outcomes_name)
        spark.createDataFrame(rows, apply.OUTCOME_SCHEMA).write.mode("overwrite").parquet(path)
    return spark.read.parquet(path)


def spread_over_executors(spark, frame: DataFrame) -> DataFrame:
    """The rows in as many partitions as the executors have cores."""
    return frame.repartition(max(spark.sparkContext.defaultParallelism, 1))


def _prepare_before_images(run: Run) -> None:
    try:
        before_images.prepare(run.settings, run.keyspace)
    except Exception as error:  # noqa: BLE001 - safe to go on: a write whose image is not recorded is not sent
        log.warning("the before-image tables could not be created: %s", reason(error))


def _export_before_images(run: Run) -> None:
    try:
        run.report["beforeImages"] = before_images.export(
            run.spark, run.settings, run.run_id, run.work_dir, _undo_summary(run)
        )
    except Exception as error:  # noqa: BLE001 - never hides why the run stopped; the images stay in Cassandra
        log.warning("the before-images of run %s were not exported to %s: %s", run.run_id, run.work_dir, reason(error))


def _undo_summary(run: Run) -> dict:
    """What an undo of this run must know besides the images: the run, its repair, where and when."""
    return {
        "target": run.repair.name,
        "keyspace": run.keyspace,
        "generation": run.repair.generation,
        "startedAt": run.report.get("startedAt"),
        "confirmation": run.repair.confirmation,
    }


# ---- 5. summarize (in passes) -------------------------------------------------------------------------------------


def repair_in_passes(run: Run, scanned: Scan) -> str:
    """Plan, reconcile and count a pass while there is something to fix; a repair that works in passes scans again
    after each and stops after a pass that fixed nothing. The before-images its writes recorded are exported to the
    work folder (even none: an undo of this run then has nothing to do); the repair then sums the passes up."""
    repair = run.repair
    passes = repair.max_passes if repair.passes else 1
    try:
        for number in range(1, passes + 1):
            if not repair.anything_to_fix(run, scanned):
                break
            if number == 1:
                plan(run, scanned)
            outcomes = reconcile(run, scanned, "outcomes" if passes == 1 else f"outcomes-{number}", write=True)
            fixed = repair.count_pass(run, number, scanned, outcomes)
            if not repair.passes:
                break
            scanned = scan(run)
            if not fixed:
                break
    finally:
        # However the passes ended (a node lost mid-way stops them after some writes), what they wrote can be undone.
        _export_before_images(run)
    run.progress.stage("summarize")
    return repair.summarize(run, scanned)
