"""A projection's scan: the truth and the projection read once (whole, or in journalled token ranges), the projection
the truth derives compared with the one scanned, key by key, and the inconsistent keys written to the run's work
folder as candidates; the truth's health and the plan measured on the way (one pass, Observations). A repair or
verify with `reuse_scan` takes the scan the check kept in the same work folder instead.
"""

import json
import logging
import time
from datetime import UTC, datetime
from functools import partial

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from james_consistency.cassandra.consistency_levels import read_levels
from james_consistency.cassandra.cql import CassandraSettings, close, column_types, connect
from james_consistency.engine import work_folder
from james_consistency.engine.candidates import candidates_by_key, with_sample
from james_consistency.engine.diff import (
    KINDS,
    ORPHAN,
    compare,
    compared_by,
    digested,
    normalize_empty_collections,
    plan_metrics,
)
from james_consistency.engine.load import ScanLoad
from james_consistency.engine.ranges import (
    Journal,
    RangedScan,
    ScannedTable,
    Window,
    WindowEnded,
    estimated_ranges,
    in_ranges,
    partition_key,
    read_ranges,
    token_ranges,
)
from james_consistency.engine.run import Run, Scan
from james_consistency.engine.spec import ProjectionSpec
from james_consistency.engine.tables import read_table
from james_consistency.errors import OperatorError
from james_consistency.gates import GateResult
from james_consistency.runtime.paths import LOCAL_DIR

log = logging.getLogger("james_consistency")

# A kept scan older than this is not reused: the repair would work from a picture of another night.
MAX_REUSED_SCAN_AGE_SECONDS = 24 * 3600
CANDIDATES = "candidates"
# The health gate's verdict on a kept scan, as the check that made the scan judged it.
HEALTH_VERDICT = "health-gate.json"


def scan(run: Run) -> Scan:
    """The truth and the projection scanned once (or the check's scan reused); the diff's candidates written to the
    work folder, the truth's health and the plan measured on the way. Kept for a repair or verify that reuses it."""
    if run.options.reuse_scan:
        return kept_scan(run)
    spec = run.repair.spec
    run.load = ScanLoad(run.options.load, run.settings, run.keyspace)
    started = time.time()
    ranged = _scans_in_ranges(run)
    hashed = hashed_as_serialized(run.settings, run.keyspace, spec)
    decided = _scan_ranges(run, hashed) if ranged else None
    # Without ranges, a truth digested as serialized is read by the same reader, over the whole ring, nothing kept;
    # so is every table of a scan with a rate limit: the connector's scan has no limit in rows (its readsPerSec
    # paces only its joins).
    streamed = _whole_ring(run) if (hashed or run.options.load.rows_per_second) and not ranged else None
    truth = spec.truth.scan(partial(_read, run, hashed, streamed))
    projection = _read_projection(run, hashed, streamed)
    truth_health = Observation(f"truth-{run.run_id}")
    observed_truth = truth.observe(truth_health, F.count(F.lit(1)).alias("truth_rows"), *spec.health.metrics())
    as_digests = spec.mirrored_truth and (run.ranged is not None or streamed is not None)
    compared = diff_with_truth(spec, observed_truth, projection, decided, as_digests)
    unreadable, unreadable_errors = 0, []
    if spec.unreadable is not None:
        compared, unreadable, unreadable_errors = _leave_unreadable_truth_alone(run, truth, compared)
    plan_figures = Observation(f"plan-{run.run_id}")
    keys = Observation(f"keys-{run.run_id}")
    _write_candidates(run, compared.observe(plan_figures, *plan_metrics(compared)), truth, keys)
    # The write above was the action over the observed frames: their Observations have their figures now.
    metrics = plan_figures.get
    if run.ranged is None:  # a ranged scan measured each batch of ranges; a whole scan is one measure
        run.load.observe(started, truth_health.get["truth_rows"] + metrics["projection_rows"], None)
    scanned = Scan(
        health={**truth_health.get, **keys.get},
        metrics=metrics,
        found={kind: metrics[kind] for kind in KINDS},
        finished_at=time.time(),
        run_id=run.run_id,
        candidates=run.path(CANDIDATES),
        unreadable=unreadable,
        unreadable_errors=unreadable_errors,
        truth=truth,
        rate=run.load.rate,
    )
    _write_json(run.spark, run.path("scan"), {"target": spec.name, "keyspace": run.keyspace, **_kept(scanned)})
    return scanned


def _kept(scanned: Scan) -> dict:
    """What a repair or verify reusing the scan needs of it (the work folder's `scan` document)."""
    return {
        "health": scanned.health,
        "metrics": scanned.metrics,
        "finishedAt": scanned.finished_at,
        "runId": scanned.run_id,
        "unreadable": scanned.unreadable,
        "unreadableErrors": scanned.unreadable_errors,
        "rowsPerSecond": scanned.rate,
    }


def _scans_in_ranges(run: Run) -> bool:
    """Token ranges asked for, or an unfinished ranged scan of this target and keyspace to resume (unless fresh)."""
    options = run.options
    return options.ranged or (
        not options.fresh and Journal(run.settings, run.repair.spec.name, run.keyspace).unfinished()
    )


def _scan_ranges(run: Run, hashed: tuple[str, ...]):
    """Scan the run's tables in journalled token ranges. None when every range is done; when the window ended first,
    for a truth whose every expected row comes from one partition of its table, the filter of the expected rows the
    finished ranges decide (their projection partition is scanned); WindowEnded for any other truth, or when no range
    of the truth or of the projection is finished yet."""
    spec = run.repair.spec
    run.ranged = _ranged_scan(run)
    run.ranged.start((*spec.truth.tables, spec.projection_table))
    tables = _tables_read(run, hashed)
    try:
        run.ranged.scan(tables)
        return None
    except WindowEnded:
        done = run.ranged.done_ranges(tables[-1])
        if not (spec.truth.partition_local and done and run.ranged.done_ranges(tables[0])):
            raise
    key = [name.strip('"') for name in partition_key(run.settings, run.keyspace, spec.projection_table)]
    key_types = {column: spec.projection.cql_types[column] for column in key}
    run.report["decidedByFinishedRanges"] = True
    log.warning("window ended: fixing what %d finished ranges decide; the rest waits for the cycle's end", len(done))
    return lambda expected: in_ranges(expected, key_types, run.ranged.count, done)


def _tables_read(run: Run, hashed: tuple[str, ...]) -> list[ScannedTable]:
    """Every table the run's truth and projection read, as a ranged scan reads and keeps it, the projection last."""
    tables = []

    def record(table: str, columns: tuple[str, ...]) -> DataFrame:
        tables.append(_scanned(run, table, read_table(run.spark, run.keyspace, table, columns), hashed))
        return tables[-1].source

    run.repair.spec.truth.scan(record)
    record(run.repair.spec.projection_table, run.repair.spec.columns)
    return tables


def _scanned(run: Run, table: str, source: DataFrame, hashed: tuple[str, ...]) -> ScannedTable:
    """A table of the ranged scan: whole rows kept, or, for a mirrored truth, the digested rows the diff compares,
    with the columns the candidates (and, of the truth, the health figures) read. The digest is of the `hashed`
    columns' serialized values, taken on the JVM side (see `hashed_as_serialized`), or else of their values."""
    spec = run.repair.spec
    if not spec.mirrored_truth:
        return ScannedTable(table, source)
    carried = spec.diff_carried_columns
    if table == spec.truth.table:
        carried = (*carried, *spec.health.columns)
    carried = tuple(column for column in dict.fromkeys(carried) if column not in spec.key)
    if hashed:
        converted = source.select(*spec.key, *carried)
        return ScannedTable(table, converted, lambda rows, _: normalize_empty_collections(rows), hashed)

    def keep(rows: DataFrame, passthrough: tuple[str, ...]) -> DataFrame:
        return digested(rows, (*passthrough, *spec.key), spec.value_columns, carried)[0]

    return ScannedTable(table, source, keep)


# CQL types serialized one way per value (never a float's two zeros, a decimal's scales, a list's orders), and a
# set of them, which Cassandra serializes sorted and, not frozen, stores empty as no value at all.
SERIALIZED_ONCE = frozenset(
    {"uuid", "timeuuid", "text", "varchar", "ascii", "bigint", "int", "smallint", "tinyint", "varint", "boolean",
     "timestamp", "date", "time", "blob", "inet"}
)  # fmt: skip


def serialized_once(cql_type: str | None) -> bool:
    if cql_type is not None and cql_type.startswith("set<") and cql_type.endswith(">"):
        return cql_type[4:-1] in SERIALIZED_ONCE
    return cql_type in SERIALIZED_ONCE


def hashed_as_serialized(settings: CassandraSettings, keyspace: str, spec: ProjectionSpec) -> tuple[str, ...]:
    """For a mirrored truth: the value columns a ranged scan reads into one digest of their values as Cassandra
    serialized them (spared decoding and converting: jvm/TokenRangeScan), when each is of the same type in the truth
    and the projection and serialized one way per value; () otherwise, when the digest is of converted values."""
    if not spec.mirrored_truth:
        return ()
    session = connect(settings)
    try:
        truth, projection = (
            column_types(session, keyspace, table) for table in (spec.truth.table, spec.projection_table)
        )
    finally:
        close(session)
    same = all(truth.get(column) == projection.get(column) for column in spec.value_columns)
    return spec.value_columns if same and all(serialized_once(truth.get(c)) for c in spec.value_columns) else ()


def _ranged_scan(run: Run) -> RangedScan:
    options = run.options
    return RangedScan(
        run.spark,
        run.settings,
        run.repair.spec.name,
        run.keyspace,
        read_levels(options.truth_consistency).scan,  # never a serial level
        Window(options.until, options.max_ranges),
        ranges=options.ranges or 0,
        fresh=options.fresh,
        work_root=options.work_root or str(LOCAL_DIR / "runs"),
        load=run.load,
        on_progress=lambda done: run.progress.ranges(done.done, done.total, done.scanned, done.rows),
    )


def _whole_ring(run: Run) -> list[tuple[int, int, int]]:
    """The (index, start, end] token ranges a scan without a journal reads the tables in: a Spark task each."""
    spec, parallelism = run.repair.spec, max(run.spark.sparkContext.defaultParallelism, 1)
    count = estimated_ranges(run.settings, run.keyspace, [*spec.truth.tables, spec.projection_table], parallelism)
    return [(index, start, end) for index, (start, end) in enumerate(token_ranges(count))]


def _read(run: Run, hashed: tuple[str, ...], streamed: list | None, table: str, columns: tuple[str, ...]) -> DataFrame:
    """A table as the run reads it: a connector scan; in a ranged scan, the rows its ranges kept; or, `streamed`,
    the digested rows read range by range as a ranged scan reads them, at the connector's read consistency."""
    connector_scan = read_table(run.spark, run.keyspace, table, columns)
    if run.ranged:
        return run.ranged.table(_scanned(run, table, connector_scan, hashed))
    if streamed is None:
        return connector_scan
    scanned = _scanned(run, table, connector_scan, hashed)
    consistency = run.spark.conf.get("spark.cassandra.input.consistency.level", "LOCAL_ONE")
    key = partition_key(run.settings, run.keyspace, table)
    # Each table's tasks may run beside the other's, within the executors' cores: each core gets its share.
    per_task = run.load.per_task(max(run.spark.sparkContext.defaultParallelism, 1))
    rows = read_ranges(
        run.spark, run.keyspace, table, scanned.read_schema, key, streamed, consistency, hashed, per_task
    )
    return scanned.keep(rows, ()).drop("range_index")


def _read_projection(run: Run, hashed: tuple[str, ...], streamed: list | None) -> DataFrame:
    """The projection's columns, only the part of the table this repair owns (the spec's view)."""
    spec = run.repair.spec
    projection = _read(run, hashed, streamed, spec.projection_table, spec.columns)
    return spec.projection.view(projection) if spec.projection.view is not None else projection


def diff_with_truth(
    spec: ProjectionSpec, truth: DataFrame, projection: DataFrame, decided=None, kept_as_digests: bool = False
) -> DataFrame:
    """The projection the truth derives, compared with the one scanned, key by key. With `decided` (a filter of the
    expected rows whose projection partition was scanned), only what a part of the ring decides: missing and
    outdated rows there; an orphan's truth may lie in a part not scanned yet. `kept_as_digests`: both sides are
    the digested rows a range-by-range read of a mirrored truth gave, the truth's rows already the expected ones."""
    in_decided = decided or (lambda expected: expected)
    if kept_as_digests:
        by = compared_by(projection, spec.value_columns)
        expected = truth.select(*spec.key, *spec.diff_carried_columns, *by)
        compared = compare(in_decided(expected), projection, spec.key, by)
    elif spec.projection.equivalent is not None:  # an equivalence reads the values themselves
        expected = in_decided(spec.derive(truth))
        compared = compare(expected, projection, spec.key, spec.value_columns, spec.projection.equivalent())
    else:
        carried = spec.diff_carried_columns
        expected, by = digested(in_decided(spec.derive(truth)), spec.key, spec.value_columns, carried)
        projection, _ = digested(projection, spec.key, spec.value_columns, carried)
        compared = compare(expected, projection, spec.key, by)
    return compared if decided is None else compared.where(F.col("kind").isNull() | (F.col("kind") != ORPHAN))


def _write_candidates(run: Run, compared: DataFrame, truth: DataFrame, keys: Observation) -> None:
    """The diff's inconsistent keys, and a sample of its consistent ones for a verify, written to the work folder as
    one candidate per key; `keys` counts the keys several truth rows claim."""
    found = with_sample(compared, run.options.verify_sample_fraction, seed=7)
    candidates_by_key(run.repair.spec, found, truth).observe(
        keys, F.count(F.when(F.col("expected_rows_at_key") > 1, 1)).alias("duplicate_truth_keys")
    ).write.mode("overwrite").parquet(run.path(CANDIDATES))


def keep_health_verdict(run: Run, scanned: Scan, verdict: GateResult) -> None:
    """The health gate's verdict on the scan this run kept, for the repair and verify that reuse the scan: they
    repeat it rather than judge the same figures again."""
    document = {"scanRunId": scanned.run_id, "verdict": verdict.as_dict()}
    _write_json(run.spark, run.path(HEALTH_VERDICT), document)


def _kept_health_verdict(run: Run, scan_run_id: str) -> dict | None:
    """The verdict kept with the scan of `scan_run_id`; None when that scan was not judged (a check without gates
    leaves none, and one left by an older check is another scan's)."""
    url = run.path(HEALTH_VERDICT)
    if not work_folder.exists(run.spark, url):
        return None
    document = _read_json(run.spark, url)
    return document["verdict"] if document.get("scanRunId") == scan_run_id else None


def kept_scan(run: Run) -> Scan:
    """The scan a check kept in this run's work folder, for this target and keyspace, not older than a day."""
    try:
        kept = _read_json(run.spark, run.path("scan"))
    except Exception:  # noqa: BLE001 - a missing or unreadable folder, said in one line
        raise OperatorError(
            f"no scan kept in {run.work_dir}: run the check with --run-dir {run.work_dir} first"
        ) from None
    if (kept.get("target"), kept.get("keyspace")) != (run.repair.spec.name, run.keyspace):
        raise OperatorError(
            f"{run.work_dir} holds a scan of {kept.get('target')} on {kept.get('keyspace')}, "
            f"not of {run.repair.spec.name} on {run.keyspace}"
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
        found={kind: kept["metrics"][kind] for kind in KINDS},
        finished_at=kept["finishedAt"],
        run_id=kept["runId"],
        candidates=run.path(CANDIDATES),
        unreadable=kept["unreadable"],
        unreadable_errors=kept["unreadableErrors"],
        health_verdict=_kept_health_verdict(run, kept["runId"]),
        rate=kept.get("rowsPerSecond"),  # not kept by a check of an older version
    )


def _leave_unreadable_truth_alone(run: Run, truth: DataFrame, compared: DataFrame) -> tuple[DataFrame, int, list]:
    """Truth units (e.g. a mailbox's ACL) that cannot be read are reported as errors, and every projection row of
    theirs is taken out of the diff: an unreadable truth must never look like an empty one."""
    spec = run.repair.spec
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
