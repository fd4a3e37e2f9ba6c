"""One run of the offline mailbox repair: check (diagnosis and the plan, nothing written), repair (passes of
diagnose -> act, at most `max_passes`, while a pass fixes something), or verify (diagnose again; the gate fails when
anything but a reported conflict is left). `spark/jobs/mailboxes.py` calls `main()`.

Exit codes as the other jobs: 0 completed (conflicts are reported, and the report's status is then PARTIAL, as
James's), 2 bad input or a repair without the typed confirmation, 3 some actions failed (listed; a re-run
converges), 4 a Great Expectations gate failed (nothing written when it was the health gate), 5 the node went away.
"""

import argparse
import json
import logging
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from james_consistency import gates
from james_consistency.cql import CassandraSettings, close, connect, require_tables
from james_consistency.engine.job import configure_logging, print_error, publish, settings_from_spark, spark_session
from james_consistency.errors import OperatorError
from james_consistency.exit_codes import EXIT_BAD_INPUT, EXIT_COMPLETED, EXIT_GATE_FAILED, EXIT_PARTIAL, EXIT_RUN_FAILED
from james_consistency.mailboxes import CONFIRMATION
from james_consistency.mailboxes import diagnosis as d
from james_consistency.mailboxes import policy as p
from james_consistency.mailboxes import report as r
from james_consistency.paths import LOCAL_DIR
from james_consistency.schema import detect_generation, validate_keyspace_name
from james_consistency.spark_env import refresh_connector_schema

log = logging.getLogger("james_consistency.mailboxes")

COMPLETED, PARTIAL, FAILED = "COMPLETED", "PARTIAL", "FAILED"
# What a merge leaves for the projection repairs of the shared engine (the truth they read is already right).
MERGE_FOLLOW_UP = ("messages", "deleted", "unseen", "recent", "flags", "counters", "acl")


class GateFailed(Exception):
    def __init__(self, report: dict):
        super().__init__(report["gates"][-1]["name"])
        self.report = report


@dataclass
class MailboxOptions:
    keyspace: str
    mode: str = "check"  # check | repair | verify
    confirmation: str | None = None  # repair only: must be ALL-SERVICES-ARE-OFFLINE
    merge: bool = False
    orphan_paths: str = p.RECREATE_WHEN_REFERENCED
    max_passes: int = 5
    sample_size: int = 100
    gates_enabled: bool = True
    run_dir: str | None = None

    def validate(self) -> None:
        validate_keyspace_name(self.keyspace)
        if self.mode not in ("check", "repair", "verify"):
            raise OperatorError(f"unknown mode '{self.mode}': check, repair or verify")
        if self.orphan_paths not in p.ORPHAN_PATH_POLICIES:
            raise OperatorError(
                f"unknown orphan-path policy '{self.orphan_paths}': {', '.join(p.ORPHAN_PATH_POLICIES)}"
            )
        if self.max_passes < 1:
            raise OperatorError("max passes must be 1 or more")
        if self.mode == "repair" and self.confirmation != CONFIRMATION:
            raise OperatorError(
                "the mailbox repair can cancel users' actions and must only run while James's SMTP, IMAP and JMAP "
                f"services are stopped: confirm with --i-know-what-i-am-doing {CONFIRMATION}"
            )


@dataclass
class Scan:
    """One diagnosis: the findings (parquet in the run folder), their counts, a bounded sample, the health."""

    findings: DataFrame
    counts: dict[str, int]
    sample: list[dict]
    health: dict
    truth: DataFrame = field(repr=False)


def path_table(generation: str) -> str:
    return "mailboxpathv3" if generation == "3.9" else "mailboxpathv2"


def resolve(settings: CassandraSettings, keyspace: str) -> str:
    """The keyspace's James generation; OperatorError for a wrong keyspace or missing tables."""
    session = connect(settings, keyspace)
    try:
        generation = detect_generation(session, keyspace)
        if generation is None:
            raise OperatorError(f"keyspace '{keyspace}' has no James message tables (imapUidTable is missing)")
        require_tables(session, keyspace, ["mailbox", path_table(generation), "messageidtable"])
    finally:
        close(session)
    return generation


def _load(spark: SparkSession, keyspace: str, table: str) -> DataFrame:
    """A full-scan source of the table (every column: the path table's WRITETIME is read from it)."""
    from pyspark.errors import AnalysisException

    def load():
        return spark.read.format("org.apache.spark.sql.cassandra").options(keyspace=keyspace, table=table).load()

    try:
        return load()
    except AnalysisException:
        # A long-lived session's connector may not have seen a keyspace created after it connected.
        refresh_connector_schema(spark)
    return load()


def scan(spark: SparkSession, keyspace: str, generation: str, work_dir: Path, sample_size: int, merge=False) -> Scan:
    """Both full scans (and imapUidTable for the message references), joined; findings written to parquet."""
    mailboxes = d.mailbox_entries(_load(spark, keyspace, "mailbox")).cache()
    paths_raw = _load(spark, keyspace, path_table(generation))
    paths = d.path_entries(
        paths_raw.select(
            "namespace", "user", "mailboxname", "mailboxid", F.expr("writetime(mailboxid)").alias("written")
        )
    ).cache()
    truth = _load(spark, keyspace, "imapuidtable").select("messageid", "mailboxid", "uid", "modseq")
    mailbox_metrics, path_metrics = d.health_metrics(mailboxes, paths)
    health = {**mailboxes.agg(*mailbox_metrics).first().asDict(), **paths.agg(*path_metrics).first().asDict()}
    findings = d.diagnose(mailboxes, paths, d.message_references(truth))
    if merge:
        findings = _with_loser_messages(findings, truth)
    target = work_dir / f"findings-{uuid.uuid4().hex[:6]}"
    findings.write.mode("overwrite").parquet(str(target))
    mailboxes.unpersist()
    paths.unpersist()
    findings = spark.read.parquet(str(target))
    counts = findings.agg(*d.kind_counts(findings)).first().asDict()
    ranked = findings.withColumn(
        "rank", F.row_number().over(Window.partitionBy("kind").orderBy("mailboxPath", "mailboxId"))
    )
    sample = [
        row.asDict(recursive=True)
        for row in ranked.where(F.col("rank") <= sample_size)
        .drop("rank", "loserMessages", "winnerHighestUid", "winnerHighestModseq")
        .collect()
    ]
    sample.sort(key=lambda f: (d.KINDS.index(f["kind"]), f["mailboxPath"] or "", f["mailboxId"] or ""))
    return Scan(findings, counts, sample, health, truth)


def _with_loser_messages(findings: DataFrame, truth: DataFrame) -> DataFrame:
    """For two ids under one path: the messages of every claimant but the registered one (what a merge moves), and
    the highest uid and modseq the registered one's messages carry (the merge numbers moved messages above them)."""
    losers = (
        findings.where(F.col("kind") == d.TWO_IDS_ONE_PATH)
        .select(*d.PATH, "registeredId", F.explode("claimants.mailboxId").alias("loser"))
        .where(F.col("registeredId").isNull() | (F.col("loser") != F.col("registeredId")))
    )
    messages = truth.select(
        F.col("mailboxid").cast("string").alias("loser"), F.col("messageid").cast("string").alias("messageId"), "uid"
    )
    moved = (
        losers.join(messages, "loser")
        .groupBy(*d.PATH)
        .agg(F.collect_list(F.struct(F.col("loser").alias("mailboxId"), "messageId", "uid")).alias("loserMessages"))
    )
    highest = truth.groupBy(F.col("mailboxid").cast("string").alias("registeredId")).agg(
        F.max("uid").alias("winnerHighestUid"), F.max("modseq").alias("winnerHighestModseq")
    )
    return findings.join(moved, list(d.PATH), "left").join(highest, "registeredId", "left")


def act(spark: SparkSession, findings: DataFrame, options: p.PolicyOptions, work_dir: Path) -> DataFrame:
    """Run the policy over the actionable findings in the executors; outcomes to parquet."""
    kinds = list(d.FIXABLE) + ([d.TWO_IDS_ONE_PATH] if options.merge else [])
    actionable = findings.where(F.col("kind").isin(kinds))
    parallelism = max(spark.sparkContext.defaultParallelism, 1)
    rows = actionable.repartition(parallelism).rdd.mapPartitions(p.apply_partition(options))
    target = work_dir / f"outcomes-{uuid.uuid4().hex[:6]}"
    spark.createDataFrame(rows, p.OUTCOME_SCHEMA).write.mode("overwrite").parquet(str(target))
    return spark.read.parquet(str(target))


def _by_action(outcomes: DataFrame) -> dict[str, int]:
    return {row["action"]: row["count"] for row in outcomes.groupBy("action").count().orderBy("action").collect()}


def _gate(report: dict, result: gates.GateResult, fail: bool = True) -> bool:
    report.setdefault("gates", []).append(result.as_dict())
    log.info(result.summary())
    if fail and not result.success:
        raise GateFailed(_finish(report, FAILED))
    return result.success


def execute(spark: SparkSession, settings: CassandraSettings, options: MailboxOptions) -> dict:
    options.validate()
    keyspace = options.keyspace.lower()
    generation = resolve(settings, keyspace)
    started = time.time()
    run_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    work_dir = Path(options.run_dir or LOCAL_DIR / "runs" / f"mailboxes-{run_id}")
    policy = p.PolicyOptions(
        settings=settings,
        keyspace=keyspace,
        generation=generation,
        orphan_paths=options.orphan_paths,
        merge=options.merge,
        write=options.mode == "repair",
    )
    report = _new_report(options, policy, run_id, started)
    log.info("mailboxes %s on keyspace %s (James %s)", options.mode, keyspace, generation)
    first = scan(spark, keyspace, generation, work_dir, options.sample_size, merge=options.merge)
    report["processedMailboxEntries"] = first.health["mailbox_rows"]
    report["processedMailboxPathEntries"] = first.health["path_rows"]
    report["health"] = first.health
    report.update(r.describe(first.sample, first.counts))
    report["inconsistencyCount"] = sum(first.counts.values())
    if options.gates_enabled:
        _gate(report, gates.validate_figures(first.health, "mailbox_health"))
    if options.mode == "check":
        return _check(spark, report, first, options, policy, work_dir)
    if options.mode == "verify":
        return _verify(report, first, options)
    return _repair(spark, report, first, options, policy, work_dir, keyspace, generation)


def _new_report(options: MailboxOptions, policy: p.PolicyOptions, run_id: str, started: float) -> dict:
    return {
        "type": "solve-mailbox-inconsistencies",
        "target": "mailboxes",
        "mode": options.mode,
        "dryRun": options.mode != "repair",
        "keyspace": policy.keyspace,
        "generation": policy.generation,
        "mailboxTable": "mailbox",
        "mailboxPathTable": path_table(policy.generation),
        "runId": run_id,
        "startedAt": datetime.fromtimestamp(started, UTC).isoformat(),
        "_started": started,
        "runningOptions": {
            "maxPasses": options.max_passes,
            "merge": options.merge,
            "orphanPaths": options.orphan_paths,
            "readConsistency": policy.read_consistency,
        },
        "processedMailboxEntries": 0,
        "processedMailboxPathEntries": 0,
        "fixedInconsistencies": [],
        "conflictingEntries": [],
        "errors": [],
        "gates": [],
    }


def _check(spark, report: dict, first: Scan, options: MailboxOptions, policy, work_dir: Path) -> dict:
    """Nothing written: is there anything to do (a gate that fails nothing), and what a repair would do."""
    if options.gates_enabled:
        report["nothingToDo"] = _gate(report, gates.validate(first.findings, "mailbox_nothing_to_do"), fail=False)
    else:
        report["nothingToDo"] = report["inconsistencyCount"] == 0
    report["plannedActions"] = _by_action(act(spark, first.findings, policy, work_dir))
    return _finish(report, PARTIAL if _left_unresolved(report) else COMPLETED)


def _verify(report: dict, first: Scan, options: MailboxOptions) -> dict:
    """What is left; the gate fails when anything but a reported conflict is."""
    report["remainingInconsistencies"] = report["inconsistencyCount"]
    report["remainingFixable"] = sum(first.counts[kind] for kind in d.FIXABLE)
    if options.gates_enabled:
        _gate(report, gates.validate(first.findings, "mailbox_repaired"))
    return _finish(report, PARTIAL if _left_unresolved(report) else COMPLETED)


def anything_to_fix(counts: dict[str, int], merge: bool) -> bool:
    """Whether a repair pass has work: a fixable finding, or two ids on one path when merging."""
    return bool(sum(counts[kind] for kind in d.FIXABLE) or (merge and counts[d.TWO_IDS_ONE_PATH]))


def _repair(spark, report, first: Scan, options, policy, work_dir, keyspace, generation) -> dict:
    passes, fixed_ids, failures, current = [], [], [], first
    for number in range(1, options.max_passes + 1):
        if not anything_to_fix(current.counts, options.merge):
            break
        outcomes = act(spark, current.findings, policy, work_dir)
        actions = _by_action(outcomes)
        fixed = sum(actions.get(action, 0) for action in p.FIXED)
        passes.append({"pass": number, "inconsistencies": current.counts, "actions": actions, "fixed": fixed})
        log.info("pass %d: %s", number, actions)
        _keep_samples(report, outcomes, fixed_ids, failures, options.sample_size)
        current = scan(spark, keyspace, generation, work_dir, options.sample_size, merge=options.merge)
        if fixed == 0:
            break
    report["passes"] = passes
    report["fixedInconsistencies"] = fixed_ids
    report["fixedCount"] = sum(item["fixed"] for item in passes)
    report["errors"] = [failure["mailboxId"] for failure in failures]
    report["errorDetails"] = failures
    report["failedCount"] = sum(item["actions"].get(p.FAILED, 0) for item in passes)
    # What is left after the last pass: the conflicts (reported) and anything a later run must look at again.
    remaining = r.describe(current.sample, current.counts)
    report["remainingInconsistencies"] = sum(current.counts.values())
    report["remaining"] = remaining["inconsistencies"]
    report["conflictingEntries"] = remaining["conflictingEntries"]
    report["conflicts"] = remaining["conflicts"]
    if any(item["actions"].get(p.MERGED) for item in passes):
        report["followUp"] = [f"james-consistency repair {target} --keyspace {keyspace}" for target in MERGE_FOLLOW_UP]
    return _finish(report, PARTIAL if _left_unresolved(report) else COMPLETED)


def _keep_samples(report: dict, outcomes: DataFrame, fixed_ids: list, failures: list, size: int) -> None:
    """A pass's outcomes in the report's bounded samples: the ids fixed (`size` over all passes), the failures and
    the fixes in detail (`size` a pass)."""
    room = size - len(fixed_ids)
    if room > 0:
        fixed_ids.extend(
            row["mailboxId"] for row in outcomes.where(F.col("action").isin(list(p.FIXED))).limit(room).collect()
        )
    failures.extend(row.asDict() for row in outcomes.where(F.col("action") == p.FAILED).limit(size).collect())
    detailed = outcomes.where(F.col("action").isin(list(p.FIXED)) | (F.col("action") == p.PATH_TAKEN))
    report.setdefault("fixes", []).extend(
        {**row.asDict(), "detail": json.loads(row["detail"])} for row in detailed.limit(size).collect()
    )


def _left_unresolved(report: dict) -> bool:
    return bool(report.get("errors") or report.get("conflictingEntries") or report.get("failedCount"))


def _finish(report: dict, status: str) -> dict:
    finished = time.time()
    report["status"] = status
    report["result"] = status
    report["finishedAt"] = datetime.fromtimestamp(finished, UTC).isoformat()
    report["durationSeconds"] = round(finished - report.pop("_started", finished), 3)
    return report


def summary_line(report: dict) -> str:
    found = ", ".join(f"{kind} {count}" for kind, count in report.get("inconsistencies", {}).items())
    line = f"mailboxes {report['mode']} on {report['keyspace']}: {report['status']}; found {found}"
    if report["mode"] == "repair":
        line += f"; fixed {report.get('fixedCount', 0)} in {len(report.get('passes', []))} passes"
        line += f"; conflicts {len(report.get('conflictingEntries', []))}; errors {report.get('failedCount', 0)}"
    if report["mode"] == "check":
        line += f"; planned {report.get('plannedActions', {})}"
    if report["mode"] == "verify":
        line += f"; remaining fixable {report.get('remainingFixable', 0)}"
    return line + f" ({report.get('durationSeconds', 0)}s)"


# ---- spark-submit entry point -------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mailboxes", description="Diagnose or repair mailbox <-> path (offline).")
    parser.add_argument("--keyspace", required=True)
    parser.add_argument("--mode", choices=["check", "repair", "verify"], default="check")
    parser.add_argument("--confirm", dest="confirmation", help=f"repair: must be {CONFIRMATION}")
    parser.add_argument("--merge", action="store_true")
    parser.add_argument("--orphan-paths", choices=p.ORPHAN_PATH_POLICIES, default=p.RECREATE_WHEN_REFERENCED)
    parser.add_argument("--max-passes", type=int, default=5)
    parser.add_argument("--sample-size", type=int, default=100)
    parser.add_argument("--no-gates", action="store_true")
    parser.add_argument("--report", required=True)
    parser.add_argument("--run-dir")
    return parser


def mailbox_options(args: argparse.Namespace) -> MailboxOptions:
    return MailboxOptions(
        keyspace=args.keyspace,
        mode=args.mode,
        confirmation=args.confirmation,
        merge=args.merge,
        orphan_paths=args.orphan_paths,
        max_passes=args.max_passes,
        sample_size=args.sample_size,
        gates_enabled=not args.no_gates,
        run_dir=args.run_dir,
    )


def main(argv: list[str] | None = None) -> int:
    configure_logging()
    args = build_parser().parse_args(argv)
    options = mailbox_options(args)
    try:
        options.validate()  # before a Spark JVM starts: a repair without the confirmation is refused at once
    except OperatorError as error:
        print_error(error)
        return EXIT_BAD_INPUT
    report, code = _run(spark_session(f"james-consistency-{args.mode}-mailboxes"), options)
    if report is not None:
        publish(report, args.report, summary_line, quiet_gates=("mailbox_nothing_to_do",))
    return code


def _run(spark: SparkSession, options: MailboxOptions) -> tuple[dict | None, int]:
    """The run's report and exit code; no report when the run stopped before it had one (said on stderr). The Spark
    session is stopped either way."""
    try:
        report = execute(spark, settings_from_spark(spark), options)
    except GateFailed as failure:
        return failure.report, EXIT_GATE_FAILED
    except OperatorError as error:
        print_error(error)
        return None, EXIT_BAD_INPUT
    except Exception as error:  # noqa: BLE001 - Spark and connector failures: one line, exit 5
        print_error(f"mailboxes {options.mode} failed: {str(error).splitlines()[0][:300]}")
        return None, EXIT_RUN_FAILED
    finally:
        spark.stop()
    return report, EXIT_PARTIAL if report.get("failedCount") else EXIT_COMPLETED
