"""One run of the engine for one projection: check (dry run), repair, or verify.

    scan truth + scan projection -> diff -> gates -> delayed re-check against live Cassandra -> apply -> report

Nothing is collected to the driver but counts and bounded samples: candidates and outcomes go through parquet
files in the run's work folder.
"""

import json
import logging
import math
import time
import uuid
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from james_consistency import gates
from james_consistency.cql import CassandraSettings, close, connect, require_tables, table_names
from james_consistency.engine import apply as apply_module
from james_consistency.engine.diff import (
    ACTUAL_PREFIX,
    EXPECTED_PREFIX,
    KINDS,
    PRESENCE,
    compare,
    inconsistencies,
    plan_metrics,
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
CONSISTENCY_LEVELS = ("ONE", "LOCAL_ONE", "QUORUM", "LOCAL_QUORUM", "ALL", "SERIAL", "LOCAL_SERIAL")


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
    except (OperatorError, GateFailed):
        raise
    except Exception as error:  # noqa: BLE001 - Spark and connector errors, named in one line
        run.report["error"] = f"{name} failed: {_reason(error)}"
        run.report["failedStage"] = name
        log.error(run.report["error"])
        raise RunFailed(_finish(run, run.report, FAILED)) from None


UNREACHABLE_HINTS = (
    "NoHostAvailable",
    "AllNodesFailed",
    "NoNodeAvailable",
    "Failed to open native connection",
    "ClosedConnection",
    "Connection refused",
    "DriverTimeout",
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

    def validate(self) -> None:
        validate_keyspace_name(self.keyspace)
        if self.mode not in ("check", "repair", "verify"):
            raise OperatorError(f"unknown mode '{self.mode}': check, repair or verify")
        if self.messages_per_second < 0 or self.recheck_delay_seconds < 0:
            raise OperatorError("messages-per-second and recheck-delay must be 0 or more")
        if not 0 <= self.max_destructive_share <= 1:
            raise OperatorError(f"max destructive share {self.max_destructive_share} is outside 0..1")
        for level in (self.truth_consistency, self.write_consistency):
            if level not in CONSISTENCY_LEVELS:
                raise OperatorError(f"unknown consistency level '{level}': one of {', '.join(CONSISTENCY_LEVELS)}")

    @property
    def dry_run(self) -> bool:
        return self.mode != "repair"


@dataclass
class Run:
    options: RunOptions
    settings: CassandraSettings
    spark: SparkSession
    report: dict = field(default_factory=dict)

    def __post_init__(self):
        self.run_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
        self.work_dir = Path(self.options.run_dir or LOCAL_DIR / "runs" / self.run_id)
        self.started = time.time()


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


def candidates_by_key(spec: ProjectionSpec, found: DataFrame, truth: DataFrame) -> DataFrame:
    """One candidate per projection key, carrying its kind, every value of the scan's hint columns seen at that key
    (arrays: a broken truth may hold two rows for one key, and the re-check must see both), and the sample identity.

    Hints come from both sides of the diff, or, for a projection without them, from the spec's locator over every
    truth row at the key (grouped per key before the join: a per-mailbox projection has many truth rows per key)."""
    expected_rows = F.count(F.col(EXPECTED_PREFIX + PRESENCE)).alias("expected_rows_at_key")
    if spec.locate is None:
        hints = [
            F.array_distinct(
                F.flatten(F.collect_list(F.array(F.col(EXPECTED_PREFIX + name), F.col(ACTUAL_PREFIX + name))))
            ).alias(name + "_seen")
            for name in spec.hint_columns
        ]
        identity = [
            F.first(F.coalesce(F.col(EXPECTED_PREFIX + name), F.col(ACTUAL_PREFIX + name)), ignorenulls=True).alias(
                name
            )
            for name in spec.sample_columns
            if name not in spec.key
        ]
        return found.groupBy(*spec.key).agg(F.first("kind").alias("kind"), expected_rows, *hints, *identity)

    per_key = found.groupBy(*spec.key).agg(F.first("kind").alias("kind"), expected_rows)
    located = spec.locate(truth).select(*spec.key, *(F.col(name).alias(LOCATED + name) for name in spec.hint_columns))
    empty = F.array().cast("array<string>")
    return (
        per_key.join(located, on=list(spec.key), how="left")
        .groupBy(*spec.key)
        .agg(
            F.first("kind").alias("kind"),
            F.first("expected_rows_at_key").alias("expected_rows_at_key"),
            *(
                F.coalesce(F.array_distinct(F.collect_list(LOCATED + name)), empty).alias(name + "_seen")
                for name in spec.hint_columns
            ),
            *(
                F.first(LOCATED + name, ignorenulls=True).alias(name)
                for name in spec.sample_columns
                if name not in spec.key
            ),
        )
    )


def _problem_sample(truth: DataFrame, spec: ProjectionSpec, size: int) -> list[dict]:
    """A few truth rows the health gate objects to (a second, filtered scan, only when the gate failed)."""
    rows = truth.where(spec.truth_problem()).limit(min(size, 20)).collect()
    return json.loads(json.dumps([row.asDict() for row in rows], default=str))


LOCATED = "located_"


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
        require_tables(session, keyspace, [spec.truth_table, *spec.extra_truth_tables, spec.projection_table])
    finally:
        close(session)
    return spec, generation


def execute(spark: SparkSession, settings: CassandraSettings, options: RunOptions) -> dict:
    """Run the engine; returns the report. Raises OperatorError for bad input, GateFailed for a failed gate."""
    options.validate()
    # Adaptive execution prunes the plan after a stage that comes out empty (nothing inconsistent), and the plan's
    # Observation (the scan counts) would be lost with it.
    spark.conf.set(
        "spark.sql.adaptive.optimizer.excludedRules",
        "org.apache.spark.sql.execution.adaptive.AQEPropagateEmptyRelation",
    )
    run = Run(options, settings, spark)
    keyspace = options.keyspace.lower()
    try:
        spec, generation = resolve_target(
            settings, options.target, keyspace, remove_unused_flags=options.remove_unused_flags
        )
    except NotApplicable as reason:
        return _not_applicable(run, keyspace, str(reason))

    report = _new_report(run, spec, generation)
    run.report = report
    run.spec = spec
    run.truth_rows_field = spec.report_names.processed_truth
    log.info("%s %s on keyspace %s (James %s)", options.mode, spec.name, keyspace, generation)

    # One pass: the truth and the projection are scanned once, the diff is written to the run's work folder, and
    # the truth's health and the plan are measured on the way (Observations). The gates then judge those figures
    # before anything is written to Cassandra; the driver never holds more than counts and samples.
    with _stage(run, "scan"):
        truth = (
            spec.read_truth(lambda table, columns: read_table(spark, keyspace, table, columns))
            if spec.read_truth
            else read_table(spark, keyspace, spec.truth_table, spec.truth_columns)
        )
        projection = read_table(spark, keyspace, spec.projection_table, spec.columns)
        if spec.projection_view is not None:
            projection = spec.projection_view(projection)
        truth_health = Observation(f"truth-{run.run_id}")
        observed_truth = truth.observe(truth_health, F.count(F.lit(1)).alias("truth_rows"), *spec.truth_metrics())
        compared = compare(
            spec.derive(observed_truth),
            projection,
            spec.key,
            spec.value_columns,
            spec.equivalent() if spec.equivalent else None,
        )
        if spec.unreadable is not None:
            compared = _leave_unreadable_truth_alone(run, spec, truth, compared)
        plan = Observation(f"plan-{run.run_id}")
        keys = Observation(f"keys-{run.run_id}")
        candidates = candidates_by_key(spec, inconsistencies(compared.observe(plan, *plan_metrics(compared))), truth)
        candidates_path = run.work_dir / "candidates"
        candidates.observe(
            keys, F.count(F.when(F.col("expected_rows_at_key") > 1, 1)).alias("duplicate_truth_keys")
        ).write.mode("overwrite").parquet(str(candidates_path))
        health, metrics = {**truth_health.get, **keys.get}, plan.get
        scan_finished = time.time()

    truth_rows = health["truth_rows"]
    report[spec.report_names.processed_truth] = truth_rows
    report["truthHealth"] = health
    if options.gates_enabled:
        health_frame = spark.createDataFrame([health])
        result = gates.validate(health_frame, spec.truth_suite_name, asset=f"{spec.name}_truth_health")
        if not result.success:
            result.sample_rows = _problem_sample(truth, spec, options.sample_size)
        _gate(run, result)

    report[spec.report_names.processed_projection] = metrics["projection_rows"]
    report["expectedProjectionRows"] = metrics["expected_rows"]
    report["inconsistencies"] = {kind: metrics[kind] for kind in KINDS}
    destructive = sum(metrics[kind] for kind in spec.destructive_kinds)
    report["plan"] = {
        "toAdd": metrics["missing"],
        "toRewrite": metrics["outdated"],
        "toDelete": metrics["orphan"],
        "destructiveShare": destructive / max(metrics["projection_rows"], 1),
        "maxDestructiveShare": options.max_destructive_share,
        "allowDestructive": options.allow_destructive,
    }
    total = sum(report["inconsistencies"].values())
    log.info(
        "scan: %d truth rows, %d projection rows, inconsistencies %s",
        truth_rows,
        metrics["projection_rows"],
        report["inconsistencies"],
    )

    if options.mode == "check" or (options.mode == "repair" and total == 0):
        return _finish(run, report, PARTIAL if report.get("unreadableTruth") else COMPLETED)

    if options.mode == "repair":
        if options.gates_enabled:
            threshold = 1.0 if options.allow_destructive else options.max_destructive_share
            plan_frame = spark.createDataFrame(
                [(float(report["plan"]["destructiveShare"]), destructive, metrics["projection_rows"])],
                "destructive_share double, destructive_rows long, projection_rows long",
            )
            _gate(run, gates.validate(plan_frame, "plan_safety", {"max_destructive_share": threshold}))
        _wait_until(scan_finished + options.recheck_delay_seconds)

    with _stage(run, "re-check and fix"):
        outcomes = _reconcile(run, spec, candidates_path, write=options.mode == "repair")

    if options.mode == "verify":
        remaining = outcomes.where(F.col("action") != apply_module.ALREADY_CONSISTENT)
        report["remainingInconsistencies"] = remaining.count()
        report["remainingSample"] = [
            {**json.loads(row["sample"]), "kind": row["kind"], "error": row["error"]}
            for row in remaining.limit(options.sample_size).collect()
        ]
        if options.gates_enabled:
            _gate(run, gates.validate(remaining, "projection_matches_truth", asset=f"{spec.name}_remaining"))
        return _finish(run, report, COMPLETED)
    _summarize_outcomes(report, spec, outcomes, options)
    status = PARTIAL if report["failedCount"] or report.get("unreadableTruth") else COMPLETED
    return _finish(run, report, status)


def _not_applicable(run: Run, keyspace: str, reason: str) -> dict:
    log.info("%s: %s", run.options.target, reason)
    report = {
        "type": f"{run.options.target}-consistency",
        "target": run.options.target,
        "mode": run.options.mode,
        "dryRun": run.options.dry_run,
        "keyspace": keyspace,
        "runId": run.run_id,
        "reason": reason,
        "inconsistencies": {kind: 0 for kind in KINDS},
    }
    return _finish(run, report, NOT_APPLICABLE)


def _leave_unreadable_truth_alone(run: Run, spec: ProjectionSpec, truth: DataFrame, compared: DataFrame) -> DataFrame:
    """Truth units (e.g. a mailbox's ACL) that cannot be read are reported as errors, and every projection row of
    theirs is taken out of the diff: an unreadable truth must never look like an empty one."""
    scope = spec.scope_column
    bad = spec.unreadable(truth).select(F.col("mailbox").cast("string").alias(scope), "problem").cache()
    count = bad.count()
    run.report["unreadableTruth"] = count
    if count:
        label = spec.sample_names.get(scope, scope)
        run.report["errors"] = [
            {label: row[scope], "kind": "unreadable-truth", "error": row["problem"]}
            for row in bad.limit(run.options.sample_size).collect()
        ]
        log.warning("%d truth units cannot be read; their projection rows are left untouched", count)
    return compared.join(F.broadcast(bad.select(scope)), on=scope, how="left_anti")


def _reconcile(run: Run, spec: ProjectionSpec, candidates_path: Path, write: bool) -> DataFrame:
    """Re-check (and, when `write`, fix) every candidate in the executors; outcomes go to parquet."""
    spark, options = run.spark, run.options
    candidates = spark.read.parquet(str(candidates_path))
    parallelism = max(spark.sparkContext.defaultParallelism, 1)
    rate_per_task = options.messages_per_second / parallelism if options.messages_per_second else 0.0
    context = apply_module.ApplyContext(
        settings=run.settings,
        keyspace=options.keyspace.lower(),
        truth_consistency=options.truth_consistency,
        write_consistency=options.write_consistency,
        rate_per_task=rate_per_task,
        write=write,
    )
    outcomes_path = run.work_dir / ("outcomes" if write else "verification")
    if spec.group_columns:
        candidates = candidates.repartition(parallelism, *spec.group_columns).sortWithinPartitions(*spec.group_columns)
    else:
        candidates = candidates.repartition(parallelism)
    rows = candidates.rdd.mapPartitions(apply_module.apply_partition(context, spec))
    spark.createDataFrame(rows, apply_module.OUTCOME_SCHEMA).write.mode("overwrite").parquet(str(outcomes_path))
    return spark.read.parquet(str(outcomes_path))


def _summarize_outcomes(report: dict, spec: ProjectionSpec, outcomes: DataFrame, options: RunOptions) -> None:
    counts = {
        (row["kind"], row["action"]): row["count"] for row in outcomes.groupBy("kind", "action").count().collect()
    }
    by_action: dict[str, int] = {}
    for (_, action), count in counts.items():
        by_action[action] = by_action.get(action, 0) + count
    names = spec.report_names
    report[names.added] = by_action.get(apply_module.ADDED, 0)
    report[names.updated] = by_action.get(apply_module.UPDATED, 0)
    report[names.removed] = by_action.get(apply_module.REMOVED, 0)
    report["alreadyConsistentOnRecheck"] = by_action.get(apply_module.ALREADY_CONSISTENT, 0)
    report["outcomes"] = [
        {"kind": kind, "action": action, "count": count} for (kind, action), count in sorted(counts.items())
    ]
    fixed = outcomes.where(F.col("action").isin(apply_module.ADDED, apply_module.UPDATED, apply_module.REMOVED))
    report["fixedInconsistencies"] = [json.loads(row["sample"]) for row in fixed.limit(options.sample_size).collect()]
    failed = outcomes.where(F.col("action") == apply_module.FAILED)
    report["failedCount"] = by_action.get(apply_module.FAILED, 0)
    report["errors"] = report.get("errors", []) + [
        {**json.loads(row["sample"]), "kind": row["kind"], "error": row["error"]}
        for row in failed.limit(options.sample_size).collect()
    ]


def _gate(run: Run, result: gates.GateResult) -> None:
    run.report.setdefault("gates", []).append(result.as_dict())
    log.info(result.summary())
    if not result.success:
        raise GateFailed(_finish(run, run.report, FAILED))


def _wait_until(moment: float) -> None:
    delay = moment - time.time()
    if delay > 0:
        log.info("waiting %.1fs before re-checking candidates", delay)
        time.sleep(delay)


def _new_report(run: Run, spec: ProjectionSpec, generation: str) -> dict:
    options = run.options
    names = spec.report_names
    return {
        "type": f"{spec.name}-consistency",
        "target": spec.name,
        "mode": options.mode,
        "dryRun": options.dry_run,
        "keyspace": options.keyspace.lower(),
        "generation": generation,
        "truthTable": spec.truth_table,
        "projectionTable": spec.projection_table,
        "runId": run.run_id,
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
        },
        "gates": [],
    }


def _finish(run: Run, report: dict, status: str) -> dict:
    spec = getattr(run, "spec", None)
    if spec is not None and spec.finish_report is not None:
        spec.finish_report(report)
    finished = time.time()
    report["status"] = status
    report["result"] = status
    report["finishedAt"] = datetime.fromtimestamp(finished, UTC).isoformat()
    report["durationSeconds"] = round(finished - run.started, 3)
    truth_rows = report.get(getattr(run, "truth_rows_field", ""), 0)
    if truth_rows and report["durationSeconds"] > 0:
        report["truthRowsPerSecond"] = math.floor(truth_rows / report["durationSeconds"])
    return report


def write_report(report: dict, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, default=str) + "\n")
    return path


def summary_line(report: dict) -> str:
    found = ", ".join(f"{kind} {count}" for kind, count in report.get("inconsistencies", {}).items())
    line = f"{report['target']} {report['mode']} on {report['keyspace']}: {report['status']}; found {found}"
    if report["mode"] == "repair":
        keys = [k for k in report if k.startswith(("added", "updated", "removed"))]
        line += "; " + ", ".join(f"{k} {report[k]}" for k in keys)
        line += f"; already consistent on re-check {report.get('alreadyConsistentOnRecheck', 0)}"
        line += f"; errors {report.get('failedCount', 0)}"
    if report["mode"] == "verify":
        line += f"; remaining {report.get('remainingInconsistencies', 0)}"
    return line + f" ({report.get('durationSeconds', 0)}s)"


def as_dict(options: RunOptions) -> dict:
    return asdict(options)
