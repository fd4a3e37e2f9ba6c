"""The offline mailbox repair's parts, run by the engine's stages like every projection (engine.run.execute).

    scan        both full scans (and imapUidTable for the message references), diagnosed (`diagnosis`); the findings
                written to the run's work folder
    describe    James's SolveMailboxInconsistencies fields: processed entries, counts per kind, conflicting entries,
                orphan paths, conflicts with the merge to perform, a sample (`report`)
    check       the `mailbox_nothing_to_do` gate (its failure is an answer: there is work), and the actions a repair
                would take, re-checked at SERIAL without writing
    candidates  the findings a pass acts on (the fixable kinds, and two ids on one path when merging)
    policy      `policy.MailboxPolicy`: one action per finding, re-read at SERIAL, written with LWT
    passes      scan -> act again while a pass fixes something, at most `max_passes` times (James's maxIterations)
    verify      diagnosed again; the `mailbox_repaired` gate fails when anything but a reported conflict is left

James's service detects everything, then fixes one inconsistency at a time, each after a re-read, and repeats while
a pass fixed something. Here a pass detects on one full scan of both tables (a pure diagnosis that judges each row
and each registration once), then acts on every finding in the executors, each action re-reading what it changes at
SERIAL and writing with lightweight transactions conditioned on that read: two actions touching the same row are
ordered by those conditions, and the loser of such a race finds the state changed and leaves it to the next pass.
The passes stop after one that fixed nothing, as James's do.

A repair needs the typed confirmation ALL-SERVICES-ARE-OFFLINE (as James's webadmin header): it must only run while
James's SMTP, IMAP and JMAP services are stopped.
"""

import json
import logging
import time
import uuid
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from james_consistency import gates
from james_consistency.engine import reports
from james_consistency.engine.run import Run, Scan, gate, reconcile
from james_consistency.engine.spec import Repair
from james_consistency.engine.tables import read_table
from james_consistency.mailboxes import CONFIRMATION
from james_consistency.mailboxes import diagnosis as d
from james_consistency.mailboxes import policy as p
from james_consistency.mailboxes import report as r
from james_consistency.mailboxes.options import MailboxOptions
from james_consistency.mailboxes.store import PolicyOptions
from james_consistency.report.run_report import COMPLETED, PARTIAL

log = logging.getLogger("james_consistency.mailboxes")

# What a merge leaves for the projection repairs of the shared engine (the truth they read is already right).
MERGE_FOLLOW_UP = ("messages", "deleted", "unseen", "recent", "flags", "counters", "acl")
# The columns of the outcomes a report shows of each fix and failure.
OUTCOME_FIELDS = ("kind", "action", "mailboxId", "mailboxPath", "detail", "error")


def path_table(generation: str) -> str:
    return "mailboxpathv3" if generation == "3.9" else "mailboxpathv2"


@dataclass
class MailboxRepair(Repair):
    generation: str
    options: MailboxOptions = field(default_factory=MailboxOptions)

    name = "mailboxes"
    report_type = "solve-mailbox-inconsistencies"
    health_suite = "mailbox_health"
    passes = True
    confirmation = CONFIRMATION

    def __post_init__(self):
        self.options.validate()

    @property
    def max_passes(self) -> int:
        return self.options.max_passes

    @property
    def typed_confirmation(self) -> str | None:
        return self.options.confirmation

    @property
    def merge(self) -> bool:
        return self.options.merge

    @property
    def tables(self) -> tuple[str, ...]:
        return ("mailbox", path_table(self.generation), "messageidtable")

    def report_fields(self, run: Run) -> dict:
        return {
            "mailboxTable": "mailbox",
            "mailboxPathTable": path_table(self.generation),
            # James's names (maxIterations, autoMerge) beside ours.
            "runningOptions": {
                "maxIterations": self.options.max_passes,
                "autoMerge": self.merge,
                "maxPasses": self.options.max_passes,
                "merge": self.merge,
                "orphanPaths": self.options.orphan_paths,
                "readConsistency": PolicyOptions.read_consistency,
            },
            "processedMailboxEntries": 0,
            "processedMailboxPathEntries": 0,
            "conflictingEntries": [],
        }

    # ---- scan and judge ---------------------------------------------------------------------------------------

    def scan(self, run: Run) -> Scan:
        """Both full scans (and imapUidTable for the message references), joined; findings written to parquet."""
        spark, keyspace = run.spark, run.keyspace
        mailboxes = d.mailbox_entries(read_table(spark, keyspace, "mailbox")).cache()
        paths_raw = read_table(spark, keyspace, path_table(self.generation))
        paths = d.path_entries(
            paths_raw.select(
                "namespace", "user", "mailboxname", "mailboxid", F.expr("writetime(mailboxid)").alias("written")
            )
        ).cache()
        truth = read_table(spark, keyspace, "imapuidtable", ("messageid", "mailboxid", "uid", "modseq"))
        mailbox_metrics, path_metrics = d.health_metrics(mailboxes, paths)
        health = {**mailboxes.agg(*mailbox_metrics).first().asDict(), **paths.agg(*path_metrics).first().asDict()}
        findings = d.diagnose(mailboxes, paths, d.message_references(truth))
        if self.merge:
            findings = _with_loser_messages(findings, truth)
        target = run.path(f"findings-{uuid.uuid4().hex[:6]}")
        findings.write.mode("overwrite").parquet(target)
        mailboxes.unpersist()
        paths.unpersist()
        findings = spark.read.parquet(target)
        counts = findings.agg(*d.kind_counts(findings)).first().asDict()
        return Scan(
            health=health,
            metrics={},
            found=counts,
            finished_at=time.time(),
            run_id=run.run_id,
            candidates=target,
            sample=_sample(findings, run.options.sample_size),
        )

    def describe_truth(self, run: Run, scanned: Scan) -> None:
        report = run.report
        report["processedMailboxEntries"] = scanned.health["mailbox_rows"]
        report["processedMailboxPathEntries"] = scanned.health["path_rows"]
        report["rowsScanned"] = {"mailbox": scanned.health["mailbox_rows"], "path": scanned.health["path_rows"]}
        report["health"] = scanned.health

    def describe(self, run: Run, scanned: Scan) -> None:
        report = run.report
        report.update(r.describe(scanned.sample, scanned.found))
        report["inconsistencyCount"] = sum(scanned.found.values())

    def check(self, run: Run, scanned: Scan) -> str:
        """Nothing written: is there anything to do (a gate whose failure is an answer), and what a repair would do."""
        report = run.report
        if run.options.gates_enabled:
            findings = run.spark.read.parquet(scanned.candidates)
            result = gates.validate(findings, "mailbox_nothing_to_do")
            report["nothingToDo"] = gate(run, result, stop=False)
        else:
            report["nothingToDo"] = report["inconsistencyCount"] == 0
        planned = reconcile(run, scanned, "planned", write=False)
        report["plannedActions"] = dict(sorted(reports.by_action(reports.outcome_counts(planned)).items()))
        return _status(report)

    def safety(self, run: Run, scanned: Scan) -> None:
        """Nothing to judge here: the typed confirmation was checked before the run started."""

    def anything_to_fix(self, run: Run, scanned: Scan) -> bool:
        return anything_to_fix(scanned.found, self.merge)

    # ---- reconcile ----------------------------------------------------------------------------------------------

    def candidates(self, run: Run, scanned: Scan, context):
        kinds = list(d.FIXABLE) + ([d.TWO_IDS_ONE_PATH] if self.merge else [])
        findings = run.spark.read.parquet(scanned.candidates)
        return findings.where(F.col("kind").isin(kinds)), context

    def policy(self, run: Run) -> p.MailboxPolicy:
        return p.MailboxPolicy(
            PolicyOptions(
                settings=run.settings,
                keyspace=run.keyspace,
                generation=self.generation,
                orphan_paths=self.options.orphan_paths,
                merge=self.merge,
            )
        )

    # ---- summarize ----------------------------------------------------------------------------------------------

    def count_pass(self, run: Run, number: int, scanned: Scan, outcomes: DataFrame) -> int:
        """A pass in the report: what it faced, what it did; its fixed ids (`sample_size` over all passes), its
        failures and its fixes in detail (`sample_size` a pass)."""
        report, size = run.report, run.options.sample_size
        actions = dict(sorted(reports.by_action(reports.outcome_counts(outcomes)).items()))
        fixed = sum(actions.get(action, 0) for action in p.FIXED)
        report.setdefault("passes", []).append(
            {"pass": number, "inconsistencies": scanned.found, "actions": actions, "fixed": fixed}
        )
        log.info("pass %d: %s", number, actions)
        fixed_rows = outcomes.where(F.col("action").isin(list(p.FIXED)))
        room = size - len(report["fixedInconsistencies"])
        if room > 0:
            report["fixedInconsistencies"].extend(
                _outcome(row)["mailboxId"] for row in fixed_rows.limit(room).collect()
            )
        failed = outcomes.where(F.col("action") == p.FAILED).limit(size).collect()
        report.setdefault("errorDetails", []).extend(_outcome(row) for row in failed)
        detailed = outcomes.where(F.col("action").isin(list(p.FIXED)) | (F.col("action") == p.PATH_TAKEN))
        report.setdefault("fixes", []).extend(
            {**_outcome(row), "detail": json.loads(row["detail"])} for row in detailed.limit(size).collect()
        )
        return fixed

    def summarize(self, run: Run, scanned: Scan) -> str:
        """The passes summed up, and what is left after the last one: the conflicts (reported) and anything a later
        run must look at again."""
        report = run.report
        passes = report.setdefault("passes", [])
        failures = report.setdefault("errorDetails", [])
        report["fixedCount"] = sum(item["fixed"] for item in passes)
        report["errors"] = [failure["mailboxId"] for failure in failures]
        report["failedCount"] = sum(item["actions"].get(p.FAILED, 0) for item in passes)
        remaining = r.describe(scanned.sample, scanned.found)
        report["remainingInconsistencies"] = sum(scanned.found.values())
        report["remaining"] = remaining["inconsistencies"]
        report["conflictingEntries"] = remaining["conflictingEntries"]
        report["conflicts"] = remaining["conflicts"]
        if any(item["actions"].get(p.MERGED) for item in passes):
            report["followUp"] = [
                f"james-consistency repair {target} --keyspace {run.keyspace}" for target in MERGE_FOLLOW_UP
            ]
        return _status(report)

    def verify(self, run: Run, scanned: Scan) -> str:
        """What is left; the gate fails when anything but a reported conflict is."""
        report = run.report
        report["remainingInconsistencies"] = report["inconsistencyCount"]
        report["remainingFixable"] = sum(scanned.found[kind] for kind in d.FIXABLE)
        if run.options.gates_enabled:
            gate(run, gates.validate(run.spark.read.parquet(scanned.candidates), "mailbox_repaired"))
        return _status(report)


def anything_to_fix(counts: dict[str, int], merge: bool) -> bool:
    """Whether a repair pass has work: a fixable finding, or two ids on one path when merging."""
    return bool(sum(counts[kind] for kind in d.FIXABLE) or (merge and counts[d.TWO_IDS_ONE_PATH]))


def _status(report: dict) -> str:
    """PARTIAL, as James's task, when anything is left unresolved: errors, conflicts, failed actions."""
    unresolved = report.get("errors") or report.get("conflictingEntries") or report.get("failedCount")
    return PARTIAL if unresolved else COMPLETED


def _outcome(row) -> dict:
    """An outcome row as the report shows it: kind, action, the mailbox's id and path, detail, error."""
    identity = json.loads(row["sample"])
    values = {**row.asDict(), **identity}
    return {name: values.get(name) for name in OUTCOME_FIELDS}


def _sample(findings: DataFrame, size: int) -> list[dict]:
    """At most `size` findings of each kind, in the order an approver reads them."""
    ranked = findings.withColumn(
        "rank", F.row_number().over(Window.partitionBy("kind").orderBy("mailboxPath", "mailboxId"))
    )
    sample = [
        row.asDict(recursive=True)
        for row in ranked.where(F.col("rank") <= size)
        .drop("rank", "loserMessages", "winnerHighestUid", "winnerHighestModseq")
        .collect()
    ]
    sample.sort(key=lambda f: (d.KINDS.index(f["kind"]), f["mailboxPath"] or "", f["mailboxId"] or ""))
    return sample


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
