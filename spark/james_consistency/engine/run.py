"""One run of the engine for one projection: check (dry run), repair, or verify, in five steps.

    scan       truth + projection -> diff -> candidates, written to the run's work folder; the truth's health and
               the plan are measured on the way (one pass, Observations)
    judge      the truth-health gate judges what the scan measured; the report gets what was found
    plan       the plan-safety gate judges the planned fixes (repair); the re-check waits for its delay
    reconcile  every candidate re-checked against live Cassandra in the executors, fixed when repairing
    summarize  the outcomes counted into the report

A repair or verify with `reuse_scan` takes the scan the check kept in the same work folder instead of scanning again:
a DAG run (check -> repair -> verify) costs one scan plus the candidates' round trips. The verify then re-checks
the check's candidates and a random sample of the keys the check found consistent.

Nothing is collected to the driver but counts and bounded samples. The work folder may be a local path or a Hadoop
filesystem URL (file://, hdfs://, s3a://): only Spark reads and writes it.
"""

import json
import logging
import math
import time
import uuid
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from functools import partial

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from james_consistency import gates
from james_consistency.consistency_levels import CONSISTENCY_LEVELS
from james_consistency.cql import CassandraSettings, close, connect, require_tables, table_names
from james_consistency.engine import apply as apply_module
from james_consistency.engine import joined, work_folder
from james_consistency.engine.candidates import SAMPLED, candidates_by_key, with_sample
from james_consistency.engine.diff import KINDS, MISSING, ORPHAN, OUTDATED, compare, digested, plan_metrics
from james_consistency.engine.live import now_micros
from james_consistency.engine.ranges import (
    Journal,
    RangedScan,
    RangeProgress,
    Window,
    WindowEnded,
    in_ranges,
    partition_key,
)
from james_consistency.engine.spec import ProjectionSpec
from james_consistency.errors import NotApplicable, OperatorError
from james_consistency.paths import LOCAL_DIR
from james_consistency.projections import projection_spec
from james_consistency.schema import detect_generation, validate_keyspace_name
from james_consistency.spark_env import refresh_connector_schema

log = logging.getLogger("james_consistency")

COMPLETED = "COMPLETED"
NOT_APPLICABLE = "NOT_APPLICABLE"
PARTIAL = "PARTIAL"
FAILED = "FAILED"
# The run stopped at its window's end, at a range boundary: nothing half-done, the next run goes on.
WINDOW_ENDED = "WINDOW_ENDED"
# A kept scan older than this is not reused: the repair would work from a picture of another night.
MAX_REUSED_SCAN_AGE_SECONDS = 24 * 3600
# Adaptive execution's default advisory partition size: the limit under which a shuffled partition is hashed.
HASHED_JOIN_PARTITION_BYTES = "64MB"
# How the re-check read the candidates' live rows (the report's liveReads).
DIRECT_JOIN = "direct join"
PER_CANDIDATE = "per candidate"
# What a re-check found at a key, as the inconsistency it was.
KIND_OF_ACTION = {apply_module.ADDED: MISSING, apply_module.UPDATED: OUTDATED, apply_module.REMOVED: ORPHAN}


class RunFailed(Exception):
    """The run stopped on an infrastructure failure (e.g. the node went away during the scan): the report says at
    which stage; nothing is written before the re-check stage, and a re-run converges."""

    def __init__(self, report: dict):
        super().__init__(report.get("error", "run failed"))
        self.report = report


@contextmanager
def _stage(run: "Run", name: str):
    try:
        yield
    except (OperatorError, GateFailed, WindowEnded):
        raise
    except Exception as error:  # noqa: BLE001 - Spark and connector errors, named in one line
        run.report["error"] = f"{name} failed: {_reason(error)}"
        run.report["failedStage"] = name
        log.error(run.report["error"])
        raise RunFailed(_finish(run, FAILED)) from None


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


def _reason(error: Exception) -> str:
    """One line: the root cause of a Spark/connector failure (a Py4JJavaError's first line says only which call)."""
    text = str(error)
    root = getattr(error, "java_exception", None)
    while root is not None and root.getCause() is not None:
        root = root.getCause()
    line = str(root.toString()) if root is not None else (text.strip().splitlines() or [""])[0]
    if any(hint in text or hint in line for hint in UNREACHABLE_HINTS):
        return f"Cassandra became unreachable ({line[:240]})"
    return line[:300] if root is not None else f"{type(error).__name__}: {line[:300]}"


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
    truth_consistency: str = "LOCAL_QUORUM"
    write_consistency: str = "LOCAL_QUORUM"
    max_destructive_share: float = 0.05
    allow_destructive: bool = False
    sample_size: int = 100
    run_dir: str | None = None
    gates_enabled: bool = True
    # applicableFlag: also remove keywords no message of the mailbox uses (James itself only ever adds them).
    remove_unused_flags: bool = False
    # repair/verify: work from the scan the check kept in `run_dir` instead of scanning again.
    reuse_scan: bool = False
    # The share of consistent keys the check keeps for a verify that reuses its scan.
    verify_sample_fraction: float = 0.001
    # Scan in journalled token ranges (0: as many as the data size asks for; None: one connector scan), resuming
    # the unfinished scan of the same target and keyspace unless `fresh`; stop at a range boundary after `until`.
    ranges: int | None = None
    until: float | None = None
    fresh: bool = False
    # At most this many ranges scanned by this run, then it stops as at its window's end (a bounded night's work).
    max_ranges: int | None = None
    # Where the ranges' kept rows go (a path or a Hadoop URL; default .local/runs).
    work_root: str | None = None

    def validate(self) -> None:
        validate_keyspace_name(self.keyspace)
        if self.mode not in ("check", "repair", "verify"):
            raise OperatorError(f"unknown mode '{self.mode}': check, repair or verify")
        if self.messages_per_second < 0 or self.recheck_delay_seconds < 0:
            raise OperatorError("messages-per-second and recheck-delay must be 0 or more")
        if not 0 <= self.max_destructive_share <= 1:
            raise OperatorError(f"max destructive share {self.max_destructive_share} is outside 0..1")
        if not 0 <= self.verify_sample_fraction <= 1:
            raise OperatorError(f"verify sample fraction {self.verify_sample_fraction} is outside 0..1")
        for level in (self.truth_consistency, self.write_consistency):
            if level not in CONSISTENCY_LEVELS:
                raise OperatorError(f"unknown consistency level '{level}': one of {', '.join(CONSISTENCY_LEVELS)}")
        if self.reuse_scan and self.mode == "check":
            raise OperatorError("a check makes the scan: --reuse-scan is for repair and verify")
        if self.reuse_scan and not self.run_dir:
            raise OperatorError("--reuse-scan needs --run-dir: the work folder of the check whose scan is reused")
        if self.ranges is not None and self.ranges < 0:
            raise OperatorError(f"ranges must be 0 (from the data size) or more, not {self.ranges}")
        if self.max_ranges is not None and self.max_ranges < 1:
            raise OperatorError(f"max ranges must be 1 or more, not {self.max_ranges}")
        if (self.until is not None or self.max_ranges is not None) and self.ranges is None:
            self.ranges = 0  # a window is kept at range boundaries

    @property
    def ranged(self) -> bool:
        return self.ranges is not None and not self.reuse_scan

    @property
    def dry_run(self) -> bool:
        return self.mode != "repair"


@dataclass
class Run:
    """One run's identity and state; `spec` and `generation` are known once the target is resolved."""

    options: RunOptions
    settings: CassandraSettings
    spark: SparkSession
    run_id: str = field(default_factory=lambda: f"{datetime.now(UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}")
    started: float = field(default_factory=time.time)
    spec: ProjectionSpec | None = None
    generation: str = ""
    report: dict = field(default_factory=dict)
    ranged: RangedScan | None = None

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
    """What a scan left: the candidates (in the work folder) and the figures measured on the way."""

    health: dict
    metrics: dict
    finished_at: float
    run_id: str
    unreadable: int = 0
    unreadable_errors: list = field(default_factory=list)
    truth: DataFrame | None = None  # only for a scan made by this run: the health gate's problem sample

    def kept(self) -> dict:
        return {
            "health": self.health,
            "metrics": self.metrics,
            "finishedAt": self.finished_at,
            "runId": self.run_id,
            "unreadable": self.unreadable,
            "unreadableErrors": self.unreadable_errors,
        }


def read_table(spark: SparkSession, keyspace: str, table: str, columns: tuple[str, ...]) -> DataFrame:
    """A full scan of a Cassandra table through the connector, only the named columns.

    A long-lived Spark session's connector may not have seen a keyspace created after it connected (already
    checked with CQL by `resolve_target`): its schema metadata is refreshed once before giving up.
    """
    from pyspark.errors import AnalysisException

    def load():
        return (
            spark.read.format("org.apache.spark.sql.cassandra")
            .options(keyspace=keyspace, table=table.lower())
            .load()
            .select(*columns)
        )

    try:
        return load()
    except AnalysisException:
        refresh_connector_schema(spark)
    try:
        return load()
    except AnalysisException as error:
        raise OperatorError(f"cannot read {keyspace}.{table} through the connector: {error}") from None


def resolve_target(
    settings: CassandraSettings, target: str, keyspace: str, **spec_options
) -> tuple[ProjectionSpec, str]:
    """The projection spec for the keyspace's James generation; OperatorError for a wrong keyspace or table."""
    keyspace = validate_keyspace_name(keyspace)
    session = connect(settings, keyspace)
    try:
        generation = detect_generation(session, keyspace)
        if generation is None:
            raise OperatorError(f"keyspace '{keyspace}' has no James message tables (imapUidTable is missing)")
        keyspace_tables = frozenset(table_names(session, keyspace))
        spec = projection_spec(target, generation, keyspace_tables=keyspace_tables, **spec_options)
        require_tables(session, keyspace, [*spec.truth.tables, spec.projection_table])
    finally:
        close(session)
    return spec, generation


def execute(spark: SparkSession, settings: CassandraSettings, options: RunOptions) -> dict:
    """Run the engine; returns the report. Raises OperatorError for bad input, GateFailed for a failed gate,
    RunFailed for an infrastructure failure."""
    options.validate()
    _keep_scan_figures(spark)
    _hash_small_joins(spark)
    run = Run(options, settings, spark)
    try:
        run.spec, run.generation = resolve_target(
            settings, options.target, run.keyspace, remove_unused_flags=options.remove_unused_flags
        )
    except NotApplicable as reason:
        return _not_applicable(run, str(reason))
    run.report = _new_report(run)
    log.info("%s %s on keyspace %s (James %s)", options.mode, run.spec.name, run.keyspace, run.generation)

    try:
        scanned = kept_scan(run) if options.reuse_scan else scan(run)
    except WindowEnded as ended:
        return _window_ended(run, ended.progress)
    judge(run, scanned)
    if options.mode == "check" or (options.mode == "repair" and not sum(run.report["inconsistencies"].values())):
        return _finish(run, PARTIAL if run.report.get("unreadableTruth") else COMPLETED)
    plan(run, scanned)
    with _stage(run, "re-check and fix"):
        outcomes = reconcile(run)
    return summarize(run, outcomes)


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
    """The truth and the projection scanned once; the diff's candidates written to the work folder, the truth's health
    and the plan measured on the way. Kept for a repair or verify that reuses it."""
    spec = run.spec
    with _stage(run, "scan"):
        decided = _scan_ranges(run) if _scans_in_ranges(run) else None
        truth = spec.truth.scan(partial(_read, run))
        projection = _read_projection(run)
        truth_health = Observation(f"truth-{run.run_id}")
        observed_truth = truth.observe(truth_health, F.count(F.lit(1)).alias("truth_rows"), *spec.health.metrics())
        compared = diff_with_truth(spec, observed_truth, projection, decided)
        unreadable, unreadable_errors = 0, []
        if spec.unreadable is not None:
            compared, unreadable, unreadable_errors = _leave_unreadable_truth_alone(run, truth, compared)
        plan_figures = Observation(f"plan-{run.run_id}")
        keys = Observation(f"keys-{run.run_id}")
        _write_candidates(run, compared.observe(plan_figures, *plan_metrics(compared)), truth, keys)
        # The write above was the action over the observed frames: their Observations have their figures now.
        scanned = Scan(
            health={**truth_health.get, **keys.get},
            metrics=plan_figures.get,
            finished_at=time.time(),
            run_id=run.run_id,
            unreadable=unreadable,
            unreadable_errors=unreadable_errors,
            truth=truth,
        )
        _write_json(run.spark, run.path("scan"), {"target": spec.name, "keyspace": run.keyspace, **scanned.kept()})
    return scanned


def _scans_in_ranges(run: Run) -> bool:
    """Token ranges asked for, or an unfinished ranged scan of this target and keyspace to resume (unless fresh)."""
    options = run.options
    return options.ranged or (not options.fresh and Journal(run.settings, run.spec.name, run.keyspace).unfinished())


def _scan_ranges(run: Run):
    """Scan the run's tables in journalled token ranges. None when every range is done; when the window ended first,
    for a truth whose every expected row comes from one partition of its table, the filter of the expected rows the
    finished ranges decide (their projection partition is scanned); WindowEnded for any other truth, or when no range
    of the truth or of the projection is finished yet."""
    spec = run.spec
    run.ranged = _ranged_scan(run)
    run.ranged.start((*spec.truth.tables, spec.projection_table))
    tables = _tables_read(run)
    try:
        run.ranged.scan(tables)
        return None
    except WindowEnded:
        projection_table, projection_like = tables[-1]
        done = run.ranged.done_ranges(projection_table, projection_like)
        if not (spec.truth.partition_local and done and run.ranged.done_ranges(*tables[0])):
            raise
    key = [name.strip('"') for name in partition_key(run.settings, run.keyspace, projection_table)]
    key_types = {column: spec.projection.cql_types[column] for column in key}
    run.report["decidedByFinishedRanges"] = True
    log.warning("window ended: fixing what %d finished ranges decide; the rest waits for the cycle's end", len(done))
    return lambda expected: in_ranges(expected, key_types, run.ranged.count, done)


def _tables_read(run: Run) -> list[tuple[str, DataFrame]]:
    """Every (table, columns as a lazy connector read) the run's truth and projection read, the projection last."""
    tables = []

    def record(table: str, columns: tuple[str, ...]) -> DataFrame:
        tables.append((table, read_table(run.spark, run.keyspace, table, columns)))
        return tables[-1][1]

    run.spec.truth.scan(record)
    record(run.spec.projection_table, run.spec.columns)
    return tables


def _ranged_scan(run: Run) -> RangedScan:
    options = run.options
    return RangedScan(
        run.spark,
        run.settings,
        run.spec.name,
        run.keyspace,
        options.truth_consistency,
        Window(options.until, options.max_ranges),
        ranges=options.ranges or 0,
        fresh=options.fresh,
        work_root=options.work_root or str(LOCAL_DIR / "runs"),
    )


def _read(run: Run, table: str, columns: tuple[str, ...]) -> DataFrame:
    """A table as the run reads it: a connector scan, or, in a ranged scan, the rows its ranges kept."""
    connector_scan = read_table(run.spark, run.keyspace, table, columns)
    return run.ranged.table(table, connector_scan) if run.ranged else connector_scan


def _read_projection(run: Run) -> DataFrame:
    """The projection's columns, only the part of the table this repair owns (the spec's view)."""
    spec = run.spec
    projection = _read(run, spec.projection_table, spec.columns)
    return spec.projection.view(projection) if spec.projection.view is not None else projection


def diff_with_truth(spec: ProjectionSpec, truth: DataFrame, projection: DataFrame, decided=None) -> DataFrame:
    """The projection the truth derives, compared with the one scanned, key by key. With `decided` (a filter of the
    expected rows whose projection partition was scanned), only what a part of the ring decides: missing and
    outdated rows there; an orphan's truth may lie in a part not scanned yet."""
    equivalent = spec.projection.equivalent
    expected = spec.derive(truth) if decided is None else decided(spec.derive(truth))
    if equivalent is not None:  # an equivalence reads the values themselves
        compared = compare(expected, projection, spec.key, spec.value_columns, equivalent())
    else:
        carried = spec.diff_carried_columns
        expected, compared_by = digested(expected, spec.key, spec.value_columns, carried)
        projection, _ = digested(projection, spec.key, spec.value_columns, carried)
        compared = compare(expected, projection, spec.key, compared_by)
    return compared if decided is None else compared.where(F.col("kind").isNull() | (F.col("kind") != ORPHAN))


def _write_candidates(run: Run, compared: DataFrame, truth: DataFrame, keys: Observation) -> None:
    """The diff's inconsistent keys, and a sample of its consistent ones for a verify, written to the work folder as
    one candidate per key; `keys` counts the keys several truth rows claim."""
    found = with_sample(compared, run.options.verify_sample_fraction, seed=7)
    candidates_by_key(run.spec, found, truth).observe(
        keys, F.count(F.when(F.col("expected_rows_at_key") > 1, 1)).alias("duplicate_truth_keys")
    ).write.mode("overwrite").parquet(run.path("candidates"))


def kept_scan(run: Run) -> Scan:
    """The scan a check kept in this run's work folder, for this target and keyspace, not older than a day."""
    try:
        kept = _read_json(run.spark, run.path("scan"))
    except Exception:  # noqa: BLE001 - a missing or unreadable folder, said in one line
        raise OperatorError(
            f"no scan kept in {run.work_dir}: run the check with --run-dir {run.work_dir} first"
        ) from None
    if (kept.get("target"), kept.get("keyspace")) != (run.spec.name, run.keyspace):
        raise OperatorError(
            f"{run.work_dir} holds a scan of {kept.get('target')} on {kept.get('keyspace')}, "
            f"not of {run.spec.name} on {run.keyspace}"
        )
    age = time.time() - kept["finishedAt"]
    if age > MAX_REUSED_SCAN_AGE_SECONDS:
        raise OperatorError(f"the scan kept in {run.work_dir} is {age / 3600:.0f} hours old: run a new check")
    run.report["reusedScan"] = {
        "runId": kept["runId"],
        "scannedAt": datetime.fromtimestamp(kept["finishedAt"], UTC).isoformat(),
    }
    return Scan(
        health=kept["health"],
        metrics=kept["metrics"],
        finished_at=kept["finishedAt"],
        run_id=kept["runId"],
        unreadable=kept["unreadable"],
        unreadable_errors=kept["unreadableErrors"],
    )


def _leave_unreadable_truth_alone(run: Run, truth: DataFrame, compared: DataFrame) -> tuple[DataFrame, int, list]:
    """Truth units (e.g. a mailbox's ACL) that cannot be read are reported as errors, and every projection row of
    theirs is taken out of the diff: an unreadable truth must never look like an empty one."""
    spec = run.spec
    scope = spec.unreadable.scope_column
    bad = spec.unreadable.find(truth).select(F.col("mailbox").cast("string").alias(scope), "problem").cache()
    count = bad.count()
    errors = []
    if count:
        label = spec.sample.names.get(scope, scope)
        errors = [
            {label: row[scope], "kind": "unreadable-truth", "error": row["problem"]}
            for row in bad.limit(run.options.sample_size).collect()
        ]
        log.warning("%d truth units cannot be read; their projection rows are left untouched", count)
    return compared.join(F.broadcast(bad.select(scope)), on=scope, how="left_anti"), count, errors


def _write_json(spark: SparkSession, url: str, document: dict) -> None:
    work_folder.write_text(spark, url, json.dumps(document, default=str))


def _read_json(spark: SparkSession, url: str) -> dict:
    return json.loads(work_folder.read_text(spark, url))


# ---- 2. judge -----------------------------------------------------------------------------------------------------


def judge(run: Run, scanned: Scan) -> None:
    """The truth-health gate judges the scan's figures; the report gets what the scan found."""
    spec, report, options, metrics = run.spec, run.report, run.options, scanned.metrics
    report[spec.report_names.processed_truth] = scanned.health["truth_rows"]
    report["truthHealth"] = scanned.health
    if spec.unreadable is not None:
        report["unreadableTruth"] = scanned.unreadable
        if scanned.unreadable_errors:
            report["errors"] = list(scanned.unreadable_errors)
    if options.gates_enabled:
        result = gates.validate_figures(scanned.health, spec.health.suite, asset=f"{spec.name}_truth_health")
        if not result.success and scanned.truth is not None:
            result.sample_rows = _problem_sample(scanned.truth, spec, options.sample_size)
        _gate(run, result)
    report[spec.report_names.processed_projection] = metrics["projection_rows"]
    report["expectedProjectionRows"] = metrics["expected_rows"]
    report["inconsistencies"] = {kind: metrics[kind] for kind in KINDS}
    destructive = sum(metrics[kind] for kind in spec.projection.destructive_kinds)
    report["plan"] = {
        "toAdd": metrics["missing"],
        "toRewrite": metrics["outdated"],
        "toDelete": metrics["orphan"],
        "destructiveRows": destructive,
        "destructiveShare": destructive / max(metrics["projection_rows"], 1),
        "maxDestructiveShare": options.max_destructive_share,
        "allowDestructive": options.allow_destructive,
    }
    log.info(
        "scan: %d truth rows, %d projection rows, inconsistencies %s",
        scanned.health["truth_rows"],
        metrics["projection_rows"],
        report["inconsistencies"],
    )


def _problem_sample(truth: DataFrame, spec: ProjectionSpec, size: int) -> list[dict]:
    """A few truth rows the health gate objects to (a second, filtered scan, only when the gate failed)."""
    rows = truth.where(spec.health.problem()).limit(min(size, 20)).collect()
    return json.loads(json.dumps([row.asDict() for row in rows], default=str))


# ---- 3. plan ------------------------------------------------------------------------------------------------------


def plan(run: Run, scanned: Scan) -> None:
    """Before a repair writes: the plan-safety gate, then the delay that lets in-flight James writes land."""
    options = run.options
    if options.mode != "repair":
        return
    if options.gates_enabled:
        planned = run.report["plan"]
        threshold = 1.0 if options.allow_destructive else options.max_destructive_share
        figures = {
            "destructive_share": float(planned["destructiveShare"]),
            "destructive_rows": planned["destructiveRows"],
            "projection_rows": scanned.metrics["projection_rows"],
        }
        _gate(run, gates.validate_figures(figures, "plan_safety", {"max_destructive_share": threshold}))
    _wait_until(scanned.finished_at + options.recheck_delay_seconds)


def _wait_until(moment: float) -> None:
    delay = moment - time.time()
    if delay > 0:
        log.info("waiting %.1fs before re-checking candidates", delay)
        time.sleep(delay)


# ---- 4. reconcile -------------------------------------------------------------------------------------------------


def reconcile(run: Run) -> DataFrame:
    """Re-check (and, in a repair, fix) every candidate in the executors; outcomes go to the work folder.

    The sampled consistent keys are re-checked only by a verify that reuses the check's scan: a verify that scanned
    again has its own candidates, and a repair has nothing to do with them."""
    spark, options, spec = run.spark, run.options, run.spec
    candidates = spark.read.parquet(run.path("candidates"))
    if not (options.mode == "verify" and options.reuse_scan):
        candidates = candidates.where(F.col("kind") != SAMPLED)
    parallelism = max(spark.sparkContext.defaultParallelism, 1)
    context = apply_module.ApplyContext(
        settings=run.settings,
        keyspace=run.keyspace,
        truth_consistency=options.truth_consistency,
        write_consistency=options.write_consistency,
        rate_per_task=options.messages_per_second / parallelism if options.messages_per_second else 0.0,
        write=options.mode == "repair",
    )
    run.report["liveReads"] = PER_CANDIDATE
    # A throttled run keeps to its rate candidate by candidate, its reads included.
    if spec.writing.joined_truth is not None and not options.messages_per_second:
        candidates, context = _with_joined_reads(run, candidates, context)
    group = spec.writing.group_columns
    if group:
        candidates = candidates.repartition(parallelism, *group).sortWithinPartitions(*group)
    else:
        candidates = candidates.repartition(parallelism)
    outcomes_path = run.path("outcomes" if options.mode == "repair" else "verification")
    rows = candidates.rdd.mapPartitions(apply_module.apply_partition(context, spec))
    spark.createDataFrame(rows, apply_module.OUTCOME_SCHEMA).write.mode("overwrite").parquet(outcomes_path)
    return spark.read.parquet(outcomes_path)


def _with_joined_reads(run: Run, candidates: DataFrame, context: apply_module.ApplyContext):
    """The candidates with their live rows read by direct join (engine.joined), and the context that stamps the
    writes with the moment before those reads. Should the reads fail (a node lost), nothing has been written yet:
    each candidate is then re-read through the Python driver, which reports the failures candidate by candidate."""
    spark, spec, mode = run.spark, run.spec, run.options.mode
    live = joined.LiveTables(
        partial(_direct_join_table, spark, run.keyspace),
        projection_consistency=context.projection_consistency,
        truth_consistency=context.truth_consistency,
    )
    reads_from = now_micros()
    try:
        projected_path, joined_path = run.path(f"{mode}-live-projection"), run.path(f"{mode}-live-rows")
        joined.with_live_projection(candidates, live, spec.projection).write.mode("overwrite").parquet(projected_path)
        spec.writing.joined_truth(spark.read.parquet(projected_path), live).write.mode("overwrite").parquet(joined_path)
    except Exception as error:  # noqa: BLE001 - Spark and connector errors: the per-candidate reads report them
        reason = _reason(error)
        run.report["liveReads"] = f"{PER_CANDIDATE}: the direct join failed ({reason})"
        log.warning("the live reads by direct join failed (%s): each candidate is re-read on its own", reason)
        return candidates, context
    run.report["liveReads"] = DIRECT_JOIN
    return spark.read.parquet(joined_path), replace(context, joined_reads_from=reads_from)


def _direct_join_table(spark: SparkSession, keyspace: str, table: str, consistency: str) -> DataFrame:
    return (
        spark.read.format("org.apache.spark.sql.cassandra")
        .options(keyspace=keyspace, table=table.lower(), directJoinSetting="on")
        .option("spark.cassandra.input.consistency.level", consistency)
        .load()
    )


# ---- 5. summarize -------------------------------------------------------------------------------------------------


def summarize(run: Run, outcomes: DataFrame) -> dict:
    if run.options.mode == "verify":
        return _summarize_verification(run, outcomes)
    report, spec, size = run.report, run.spec, run.options.sample_size
    by_action = _count_by_action(report, outcomes)
    names = spec.report_names
    report[names.added] = by_action.get(apply_module.ADDED, 0)
    report[names.updated] = by_action.get(apply_module.UPDATED, 0)
    report[names.removed] = by_action.get(apply_module.REMOVED, 0)
    report["alreadyConsistentOnRecheck"] = by_action.get(apply_module.ALREADY_CONSISTENT, 0)
    fixed = outcomes.where(F.col("action").isin(apply_module.ADDED, apply_module.UPDATED, apply_module.REMOVED))
    report["fixedInconsistencies"] = [json.loads(row["sample"]) for row in fixed.limit(size).collect()]
    failed = outcomes.where(F.col("action") == apply_module.FAILED)
    report["failedCount"] = by_action.get(apply_module.FAILED, 0)
    report["errors"] = report.get("errors", []) + [_error_entry(row) for row in failed.limit(size).collect()]
    return _finish(run, PARTIAL if report["failedCount"] or report.get("unreadableTruth") else COMPLETED)


def _summarize_verification(run: Run, outcomes: DataFrame) -> dict:
    report, options = run.report, run.options
    by_action = _count_by_action(report, outcomes)
    remaining = outcomes.where(F.col("action") != apply_module.ALREADY_CONSISTENT)
    report["remainingInconsistencies"] = sum(
        count for action, count in by_action.items() if action != apply_module.ALREADY_CONSISTENT
    )
    report["remainingSample"] = [_error_entry(row) for row in remaining.limit(options.sample_size).collect()]
    if options.reuse_scan:
        # What is found now, not what the check found before the repair.
        report["inconsistencies"] = {kind: 0 for kind in KINDS}
        for action, kind in KIND_OF_ACTION.items():
            report["inconsistencies"][kind] = by_action.get(action, 0)
        verified = [(entry["kind"] == SAMPLED, entry["count"]) for entry in report["outcomes"]]
        report["verifiedCandidates"] = sum(count for sampled, count in verified if not sampled)
        report["verifiedSample"] = sum(count for sampled, count in verified if sampled)
    if options.gates_enabled:
        _gate(
            run,
            gates.validate_counted(
                remaining,
                report["remainingInconsistencies"],
                "projection_matches_truth",
                asset=f"{run.spec.name}_remaining",
            ),
        )
    return _finish(run, COMPLETED)


def _error_entry(outcome) -> dict:
    return {**json.loads(outcome["sample"]), "kind": outcome["kind"], "error": outcome["error"]}


def _count_by_action(report: dict, outcomes: DataFrame) -> dict[str, int]:
    counts = {
        (row["kind"], row["action"]): row["count"] for row in outcomes.groupBy("kind", "action").count().collect()
    }
    report["outcomes"] = [
        {"kind": kind, "action": action, "count": count} for (kind, action), count in sorted(counts.items())
    ]
    by_action: dict[str, int] = {}
    for (_, action), count in counts.items():
        by_action[action] = by_action.get(action, 0) + count
    return by_action


# ---- the report ---------------------------------------------------------------------------------------------------


def _gate(run: Run, result: gates.GateResult) -> None:
    run.report.setdefault("gates", []).append(result.as_dict())
    log.info(result.summary())
    if not result.success:
        if run.ranged is not None:
            run.ranged.close()  # refused rows must not come back as the next run's truth
        raise GateFailed(_finish(run, FAILED))


def _window_ended(run: Run, progress: RangeProgress) -> dict:
    _note_window_end(run, progress)
    return _finish(run, WINDOW_ENDED)


def _note_window_end(run: Run, progress: RangeProgress) -> None:
    run.report["windowEnded"] = f"window ended, {progress.total - progress.done} ranges left"
    log.warning("%s: the next run goes on from here", run.report["windowEnded"])


def _not_applicable(run: Run, reason: str) -> dict:
    log.info("%s: %s", run.options.target, reason)
    run.report = {
        "type": f"{run.options.target}-consistency",
        "target": run.options.target,
        "mode": run.options.mode,
        "dryRun": run.options.dry_run,
        "keyspace": run.keyspace,
        "runId": run.run_id,
        "reason": reason,
        "inconsistencies": {kind: 0 for kind in KINDS},
    }
    return _finish(run, NOT_APPLICABLE)


def _new_report(run: Run) -> dict:
    options, spec = run.options, run.spec
    names = spec.report_names
    return {
        "type": f"{spec.name}-consistency",
        "target": spec.name,
        "mode": options.mode,
        "dryRun": options.dry_run,
        "keyspace": run.keyspace,
        "generation": run.generation,
        "truthTable": spec.truth.table,
        "projectionTable": spec.projection_table,
        "runId": run.run_id,
        "workDir": run.work_dir,
        "startedAt": datetime.fromtimestamp(run.started, UTC).isoformat(),
        names.processed_truth: 0,
        names.processed_projection: 0,
        names.added: 0,
        names.updated: 0,
        names.removed: 0,
        "inconsistencies": {kind: 0 for kind in KINDS},
        "fixedInconsistencies": [],
        "errors": [],
        "runningOptions": {
            "messagesPerSecond": options.messages_per_second,
            "recheckDelaySeconds": options.recheck_delay_seconds,
            "truthConsistency": options.truth_consistency,
            "writeConsistency": options.write_consistency,
            "maxDestructiveShare": options.max_destructive_share,
            "allowDestructive": options.allow_destructive,
            "reuseScan": options.reuse_scan,
            "ranges": options.ranges,
            "until": datetime.fromtimestamp(options.until, UTC).isoformat() if options.until else None,
        },
        "gates": [],
    }


def _finish(run: Run, status: str) -> dict:
    report = run.report
    if run.spec is not None and run.spec.finish_report is not None:
        run.spec.finish_report(report)
    if run.ranged is not None:
        progress = run.ranged.progress
        if progress.window_ended and "windowEnded" not in report:
            _note_window_end(run, progress)
        if progress.window_ended and status == COMPLETED:
            status = WINDOW_ENDED  # what the finished ranges decided is done; the rest waits for the next run
        report["ranges"] = progress.as_report()
        # A scan that went round the ring is done with, whatever the run became (a failed gate's rows must not be
        # resumed as tomorrow's truth); one stopped part-way stays journalled for the next run.
        if status != WINDOW_ENDED and progress.total and progress.done >= progress.total:
            run.ranged.close()
    finished = time.time()
    report["status"] = status
    report["result"] = status
    report["finishedAt"] = datetime.fromtimestamp(finished, UTC).isoformat()
    report["durationSeconds"] = round(finished - run.started, 3)
    truth_rows = report.get(run.spec.report_names.processed_truth, 0) if run.spec else 0
    if truth_rows and report["durationSeconds"] > 0:
        report["truthRowsPerSecond"] = math.floor(truth_rows / report["durationSeconds"])
    return report


def as_dict(options: RunOptions) -> dict:
    return asdict(options)
