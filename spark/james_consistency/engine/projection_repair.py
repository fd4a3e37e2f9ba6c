"""A projection spec as the engine runs it: the parts of `Repair` for every projection derived from a truth.

scan        engine.projection_scan: the diff of the projection the truth derives against the scanned one
describe    James's processed counts, the inconsistencies per kind, the plan (what a repair would add, rewrite and
            delete, and how destructive that is)
safety      the plan-safety gate: a plan deleting or rewriting more than the allowed share stops before writing
candidates  the scan's candidates (a verify reusing the scan also re-checks its sample of consistent keys), with
            their live rows read in the executors (by partition, by direct join) when the spec can take them so
policy      engine.apply.ProjectionPolicy: the spec's writer and re-check
summarize   James's added / updated / removed counts, samples of the fixes and failures
verify      the candidates re-checked without writing; the projection-matches-truth gate on what is left
"""

import json
import logging
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from james_consistency import gates
from james_consistency.cassandra.consistency_levels import read_levels
from james_consistency.engine import apply, joined, projection_scan, reports
from james_consistency.engine.candidates import SAMPLED
from james_consistency.engine.diff import DIGEST, KINDS, MISSING, ORPHAN, OUTDATED
from james_consistency.engine.live import now_micros
from james_consistency.engine.run import Run, Scan, gate, reason, reconcile, spread_over_executors
from james_consistency.engine.spec import ProjectionSpec, Repair
from james_consistency.engine.tables import direct_join_table, partition_read_key, read_by_partition
from james_consistency.report.run_report import COMPLETED, PARTIAL, WINDOW_ENDED

log = logging.getLogger("james_consistency")

# How the re-check read the candidates' live rows (the report's liveReads).
DIRECT_JOIN = "direct join"
PARTITION_READS = "projection by partition, truth by direct join"
PER_CANDIDATE = "per candidate"
# What a re-check found at a key, as the inconsistency it was.
KIND_OF_ACTION = {apply.ADDED: MISSING, apply.UPDATED: OUTDATED, apply.REMOVED: ORPHAN}
FIXED_ACTIONS = (apply.ADDED, apply.UPDATED, apply.REMOVED)


@dataclass
class ProjectionRepair(Repair):
    spec: ProjectionSpec
    generation: str

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def report_type(self) -> str:
        return f"{self.spec.name}-consistency"

    @property
    def health_suite(self) -> str:
        return self.spec.health.suite

    @property
    def health_asset(self) -> str:
        return f"{self.spec.name}_truth_health"

    @property
    def tables(self) -> tuple[str, ...]:
        return (*self.spec.truth.tables, self.spec.projection_table)

    def report_fields(self, run: Run) -> dict:
        options, names = run.options, self.spec.report_names
        levels = read_levels(options.truth_consistency)
        return {
            "truthTable": self.spec.truth.table,
            "projectionTable": self.spec.projection_table,
            names.processed_truth: 0,
            names.processed_projection: 0,
            names.added: 0,
            names.updated: 0,
            names.removed: 0,
            "inconsistencies": dict.fromkeys(KINDS, 0),
            "runningOptions": {
                "messagesPerSecond": options.messages_per_second,
                "recheckDelaySeconds": options.recheck_delay_seconds,
                # The levels the run reads at: given (--truth-consistency) or as James is configured.
                "truthConsistency": levels.truth,
                "messageTruthConsistency": levels.message_truth,
                "scanConsistency": levels.scan,
                "writeConsistency": options.write_consistency,
                "maxDestructiveShare": options.max_destructive_share,
                "allowDestructive": options.allow_destructive,
                "reuseScan": options.reuse_scan,
                "ranges": options.ranges,
                "until": datetime.fromtimestamp(options.until, UTC).isoformat() if options.until else None,
            },
        }

    # ---- scan and judge ---------------------------------------------------------------------------------------

    def scan(self, run: Run) -> Scan:
        return projection_scan.scan(run)

    def problem_sample(self, truth: DataFrame, size: int) -> list[dict]:
        """A few truth rows the health gate objects to (a second, filtered scan, only when the gate failed)."""
        rows = truth.where(self.spec.health.problem()).drop(DIGEST).limit(min(size, 20)).collect()
        return json.loads(json.dumps([row.asDict() for row in rows], default=str))

    def describe_truth(self, run: Run, scanned: Scan) -> None:
        spec, report = self.spec, run.report
        report[spec.report_names.processed_truth] = scanned.health["truth_rows"]
        report["truthHealth"] = scanned.health
        if spec.unreadable is not None:
            report["unreadableTruth"] = scanned.unreadable
            if scanned.unreadable_errors:
                report["errors"] = list(scanned.unreadable_errors)

    def describe(self, run: Run, scanned: Scan) -> None:
        spec, report, options, metrics = self.spec, run.report, run.options, scanned.metrics
        report[spec.report_names.processed_projection] = metrics["projection_rows"]
        report["rowsScanned"] = {"truth": scanned.health["truth_rows"], "projection": metrics["projection_rows"]}
        report["expectedProjectionRows"] = metrics["expected_rows"]
        report["inconsistencies"] = dict(scanned.found)
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

    def keep_health_verdict(self, run: Run, scanned: Scan, verdict: gates.GateResult) -> None:
        projection_scan.keep_health_verdict(run, scanned, verdict)

    def check(self, run: Run, scanned: Scan) -> str:
        return PARTIAL if run.report.get("unreadableTruth") else COMPLETED

    # ---- plan ---------------------------------------------------------------------------------------------------

    def safety(self, run: Run, scanned: Scan) -> None:
        options = run.options
        if not options.gates_enabled:
            return
        planned = run.report["plan"]
        threshold = 1.0 if options.allow_destructive else options.max_destructive_share
        figures = {
            "destructive_share": float(planned["destructiveShare"]),
            "destructive_rows": planned["destructiveRows"],
            "projection_rows": scanned.metrics["projection_rows"],
        }
        gate(run, gates.validate_figures(figures, "plan_safety", {"max_destructive_share": threshold}))

    def anything_to_fix(self, run: Run, scanned: Scan) -> bool:
        return sum(scanned.found.values()) > 0

    # ---- reconcile ----------------------------------------------------------------------------------------------

    def candidates(self, run: Run, scanned: Scan, context: apply.ApplyContext):
        """The scan's candidates; the sampled consistent keys only for a verify that reuses the check's scan (a
        verify that scanned again has its own candidates, and a repair has nothing to do with them)."""
        options = run.options
        candidates = run.spark.read.parquet(scanned.candidates)
        if not (options.mode == "verify" and options.reuse_scan):
            candidates = candidates.where(F.col("kind") != SAMPLED)
        run.report["liveReads"] = PER_CANDIDATE
        # A throttled run keeps to its rate candidate by candidate, its reads included.
        if self.spec.writing.joined_truth is not None and not context.rate_per_task:
            return self._with_joined_reads(run, candidates, context)
        return candidates, context

    def _with_joined_reads(self, run: Run, candidates: DataFrame, context: apply.ApplyContext):
        """The candidates with their live rows read in the executors (engine.joined: the projection's a partition at a
        time where its key allows, the truth's by direct join), and the context that stamps the writes with the moment
        before those reads. Should the reads fail (a node lost), nothing has been written yet:
        each candidate is then re-read through the Python driver, which reports the failures candidate by candidate."""
        spark, spec, mode = run.spark, self.spec, run.options.mode
        reads_from = now_micros()
        joined_path = run.path(f"{mode}-live-rows")
        projected = None
        try:
            read_key = partition_read_key(run.settings, run.keyspace, spec.projection_table, spec.key)
            by_partition = None
            if read_key is not None:
                by_partition = partial(read_by_partition, spark, run.keyspace, spec.projection_table, read_key)
            live = joined.LiveTables(
                partial(direct_join_table, spark, run.keyspace),
                projection_consistency=context.projection_consistency,
                # The truth read by direct join is imapUidTable (messages'): read as James re-reads it.
                truth_consistency=context.message_truth_consistency,
                projection_by_partition=by_partition,
            )
            # The check writes its candidates as one file (adaptive execution coalesces its shuffle's small
            # partitions), and a direct join reads a partition's keys in one task: unspread, one core would read
            # every key of the night, however many executors the cluster has.
            spread = spread_over_executors(spark, candidates)
            # Kept in the executors while the truth's reads use it (its keys, then the rows they are joined back to),
            # in the spread's partitions: the projection is read once, and the truth's reads are spread as its were.
            # A block lost meanwhile is read again, later than `reads_from`: a later read cannot undo a user's write.
            # Spread again: rows read by partition are joined back in a shuffle, which adaptive execution coalesces.
            projected = spread_over_executors(spark, joined.with_live_projection(spread, live, spec.projection))
            projected = projected.persist()
            spec.writing.joined_truth(projected, live).write.mode("overwrite").parquet(joined_path)
        except Exception as error:  # noqa: BLE001 - Spark and connector errors: the per-candidate reads report them
            cause = reason(error)
            run.report["liveReads"] = f"{PER_CANDIDATE}: the reads in the executors failed ({cause})"
            log.warning("the live reads in the executors failed (%s): each candidate is re-read on its own", cause)
            return candidates, context
        finally:
            if projected is not None:
                projected.unpersist()
        run.report["liveReads"] = DIRECT_JOIN if read_key is None else PARTITION_READS
        return spark.read.parquet(joined_path), replace(context, joined_reads_from=reads_from)

    def policy(self, run: Run) -> apply.ProjectionPolicy:
        return apply.ProjectionPolicy(self.spec)

    # ---- summarize ----------------------------------------------------------------------------------------------

    def count_pass(self, run: Run, number: int, scanned: Scan, outcomes: DataFrame) -> int:
        report, names, size = run.report, self.spec.report_names, run.options.sample_size
        report["outcomes"] = reports.outcome_counts(outcomes)
        counted = reports.by_action(report["outcomes"])
        report[names.added] = counted.get(apply.ADDED, 0)
        report[names.updated] = counted.get(apply.UPDATED, 0)
        report[names.removed] = counted.get(apply.REMOVED, 0)
        report["alreadyConsistentOnRecheck"] = counted.get(apply.ALREADY_CONSISTENT, 0)
        fixed = outcomes.where(F.col("action").isin(*FIXED_ACTIONS))
        report["fixedInconsistencies"] = [json.loads(row["sample"]) for row in fixed.limit(size).collect()]
        failed = outcomes.where(F.col("action") == apply.FAILED)
        report["failedCount"] = counted.get(apply.FAILED, 0)
        report["errors"] = report.get("errors", []) + [_error_entry(row) for row in failed.limit(size).collect()]
        return sum(counted.get(action, 0) for action in FIXED_ACTIONS)

    def summarize(self, run: Run, scanned: Scan) -> str:
        report = run.report
        return PARTIAL if report.get("failedCount") or report.get("unreadableTruth") else COMPLETED

    def verify(self, run: Run, scanned: Scan) -> str:
        report, options = run.report, run.options
        outcomes = reconcile(run, scanned, "verification", write=False)
        report["outcomes"] = reports.outcome_counts(outcomes)
        counted = reports.by_action(report["outcomes"])
        remaining = outcomes.where(F.col("action") != apply.ALREADY_CONSISTENT)
        report["remainingInconsistencies"] = sum(
            count for action, count in counted.items() if action != apply.ALREADY_CONSISTENT
        )
        report["remainingSample"] = [_error_entry(row) for row in remaining.limit(options.sample_size).collect()]
        if options.reuse_scan:
            # What is found now, not what the check found before the repair.
            report["inconsistencies"] = dict.fromkeys(KINDS, 0)
            for action, kind in KIND_OF_ACTION.items():
                report["inconsistencies"][kind] = counted.get(action, 0)
            verified = [(entry["kind"] == SAMPLED, entry["count"]) for entry in report["outcomes"]]
            report["verifiedCandidates"] = sum(count for sampled, count in verified if not sampled)
            report["verifiedSample"] = sum(count for sampled, count in verified if sampled)
        if options.gates_enabled:
            gate(
                run,
                gates.validate_counted(
                    remaining,
                    report["remainingInconsistencies"],
                    "projection_matches_truth",
                    asset=f"{self.spec.name}_remaining",
                ),
            )
        return COMPLETED

    def finish_report(self, run: Run, status: str) -> str:
        report = run.report
        if self.spec.finish_report is not None:
            self.spec.finish_report(report)
        if run.ranged is None:
            return status
        progress = run.ranged.progress
        if progress.window_ended and "windowEnded" not in report:
            reports.note_window_end(report, progress)
        if progress.window_ended and status == COMPLETED:
            status = WINDOW_ENDED  # what the finished ranges decided is done; the rest waits for the next run
        report["ranges"] = progress.as_report()
        # A scan that went round the ring is done with, whatever the run became (a failed gate's rows must not be
        # resumed as tomorrow's truth); one stopped part-way stays journalled for the next run.
        if status != WINDOW_ENDED and progress.total and progress.done >= progress.total:
            run.ranged.close()
        return status


def _error_entry(outcome) -> dict:
    return {**json.loads(outcome["sample"]), "kind": outcome["kind"], "error": outcome["error"]}
