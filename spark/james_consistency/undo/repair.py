"""Taking a repair back from its before-images (engine.before_images), run by the engine's stages like every repair.

    scan        the run's images, read from its work folder; refused in one line when the folder holds none, fewer
                than its summary says (truncated) or another run's (foreign)
    check       a dry run: what each image would give, per table and action, nothing written
    repair      (`--apply`) every image taken back, the newest first for a key, by the rule it was recorded with:
                a row's former values (or its absence) written back at the repair's timestamp + 1, so that anything
                a user or James wrote after the repair keeps its newer value; a set's elements taken out or put back
                the same way; a counter's delta subtracted unless a later run recomputed it; a lightweight
                transaction reversed by another one, conditioned on the row still holding what the repair wrote
    summarize   restored, newer writes kept, already as before, not reversed (and why), failed

The undo of the offline mailbox repair asks for the same typed confirmation as the repair. An undo applied twice
finds everything as before: nothing is written the second time. Two things are never taken back, and the report says
so: a uid or modseq the mailbox repair's merge handed out (James never gives one twice), and a counter row the repair
deleted (Cassandra cannot bring a deleted counter back). A counter cell the repair created reads 0 after the undo,
not null: Cassandra cannot remove a counter cell safely, and James reads both as 0.
"""

import json
import logging
import time
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from james_consistency.engine import before_images as images
from james_consistency.engine import reports
from james_consistency.engine.apply import FAILED, ApplyContext
from james_consistency.engine.run import Run, RunOptions, Scan, execute, new_run_id, reconcile
from james_consistency.engine.spec import Repair
from james_consistency.engine.work_folder import read_text
from james_consistency.errors import OperatorError
from james_consistency.report.run_report import (
    ALREADY_AS_BEFORE,
    COMPLETED,
    NEWER_KEPT,
    NOT_REVERSED,
    PARTIAL,
    RESTORED,
    UNDO_TARGET,
)
from james_consistency.undo.policy import UndoPolicy

log = logging.getLogger("james_consistency.undo.repair")

# The report's names of those counts.
REPORT_NAMES = {
    RESTORED: "restored",
    NEWER_KEPT: "newerKept",
    ALREADY_AS_BEFORE: "alreadyAsBefore",
    NOT_REVERSED: "notReversed",
}


def read_summary(spark, run_dir: str) -> dict:
    """The before-images summary of the run whose work folder is `run_dir`; a one-line OperatorError when there is
    none."""
    try:
        return json.loads(read_text(spark, f"{run_dir.rstrip('/')}/{images.SUMMARY}"))
    except FileNotFoundError:
        raise OperatorError(
            f"{run_dir} holds no before-images ({images.SUMMARY} is missing): give the work folder of a repair "
            "(its report's beforeImages.path, without /before-images)"
        ) from None
    except Exception as error:  # noqa: BLE001 - JSON, checksum (a file edited by hand) or filesystem errors
        raise OperatorError(f"{run_dir}/{images.SUMMARY} cannot be read: {_first_line(error)}") from None


def undo_run(
    spark,
    settings,
    run_dir: str,
    apply: bool = False,
    confirmation: str | None = None,
    sample_size: int = 100,
    progress_file: str | None = None,
) -> dict:
    """The undo of the repair whose work folder is `run_dir`: a dry run, or applied; its report. Its own work goes to
    `<run_dir>/undo/<its run id>`; its progress to `progress_file` (report.progress) while it runs."""
    run_dir = run_dir.rstrip("/")
    summary = read_summary(spark, run_dir)
    options = RunOptions(
        target=UNDO_TARGET,
        keyspace=summary["keyspace"],
        mode="repair" if apply else "check",
        run_dir=f"{run_dir}/undo/{new_run_id()}",
        sample_size=sample_size,
        progress_file=progress_file,
    )
    return execute(spark, settings, options, UndoRepair(run_dir, summary, typed_confirmation=confirmation))


@dataclass
class UndoRepair(Repair):
    """The undo of the run whose before-images are in `run_dir` (its summary, read by `read_summary`)."""

    run_dir: str
    summary: dict
    typed_confirmation: str | None = None

    name = UNDO_TARGET
    report_type = "undo-repair"
    health_suite = None
    passes = False

    @property
    def generation(self) -> str:
        return self.summary.get("generation") or ""

    @property
    def confirmation(self) -> str | None:
        return self.summary.get("confirmation")

    @property
    def tables(self) -> tuple[str, ...]:
        return tuple(self.summary.get("counts", {}))

    @property
    def images_path(self) -> str:
        return f"{self.run_dir.rstrip('/')}/{images.FOLDER}"

    def report_fields(self, run: Run) -> dict:
        return {
            "undoneRunId": self.summary["runId"],
            "undoneTarget": self.summary["target"],
            "undoneRunDir": self.run_dir,
            "inconsistencies": {},
            "runningOptions": {"apply": run.options.mode == "repair"},
        }

    def scan(self, run: Run) -> Scan:
        """The run's images, checked whole: as many as its summary says, all of this run."""
        try:
            found = run.spark.read.parquet(self.images_path)
            read = found.groupBy("run_id").count().collect()
        except Exception as error:  # noqa: BLE001 - a missing or unreadable folder, said in one line
            raise OperatorError(
                f"the before-images in {self.images_path} cannot be read: {_first_line(error)}"
            ) from None
        expected = self.summary.get("records", 0)
        foreign = sorted(row["run_id"] for row in read if row["run_id"] != self.summary["runId"])
        if foreign:
            raise OperatorError(
                f"{self.images_path} holds before-images of another run ({', '.join(foreign)}), not only of "
                f"{self.summary['runId']}: it is no folder to undo"
            )
        total = sum(row["count"] for row in read)
        if total != expected:
            raise OperatorError(
                f"{self.images_path} holds {total} before-images where its summary says {expected}: the folder is "
                "truncated or was copied part-way; nothing is undone"
            )
        by_action = {row["action"]: row["count"] for row in found.groupBy("action").count().collect()}
        return Scan(
            health={"images": total},
            metrics={},
            found=dict(sorted(by_action.items())),
            finished_at=time.time(),
            run_id=run.run_id,
            candidates=self.images_path,
        )

    def describe_truth(self, run: Run, scanned: Scan) -> None:
        """No truth to judge: the before-images are what the undo reads."""

    def describe(self, run: Run, scanned: Scan) -> None:
        run.report["inconsistencies"] = scanned.found
        run.report["images"] = self.summary.get("counts", {})
        log.info("undo of %s: %d before-images %s", self.summary["runId"], scanned.health["images"], scanned.found)

    def check(self, run: Run, scanned: Scan) -> str:
        """What taking the run back would do, per table and action; nothing written."""
        if scanned.health["images"]:
            planned = reconcile(run, scanned, "planned", write=False)
            self._count(run, planned, "undoPlan")
        else:
            run.report["undoPlan"] = {}
        return COMPLETED

    def safety(self, run: Run, scanned: Scan) -> None:
        """Nothing to judge: each image is taken back only where the row still allows it (timestamps, conditions)."""

    def anything_to_fix(self, run: Run, scanned: Scan) -> bool:
        return scanned.health["images"] > 0

    def candidates(self, run: Run, scanned: Scan, context: ApplyContext):
        # An outcome's kind is the image's table: the report counts what was taken back per table and action.
        return run.spark.read.parquet(scanned.candidates).withColumn("kind", F.col("table_name")), context

    def policy(self, run: Run) -> "UndoPolicy":
        return UndoPolicy()

    def count_pass(self, run: Run, number: int, scanned: Scan, outcomes: DataFrame) -> int:
        self._count(run, outcomes, "undone")
        failed = outcomes.where(F.col("action") == FAILED).limit(run.options.sample_size).collect()
        run.report["errors"] = [{**json.loads(row["sample"]), "error": row["error"]} for row in failed]
        kept = outcomes.where(F.col("action") == NOT_REVERSED).limit(run.options.sample_size).collect()
        run.report["notReversedSample"] = [{**json.loads(row["sample"]), "why": row["detail"]} for row in kept]
        return run.report.get("restored", 0)

    def _count(self, run: Run, outcomes: DataFrame, field: str) -> None:
        counts = reports.outcome_counts(outcomes)
        per_table: dict[str, dict[str, int]] = {}
        for entry in counts:
            per_table.setdefault(entry["kind"], {})[entry["action"]] = entry["count"]
        run.report[field] = per_table
        totals = reports.by_action(counts)
        for action, name in REPORT_NAMES.items():
            run.report[name] = totals.get(action, 0)
        run.report["failedCount"] = totals.get(FAILED, 0)

    def summarize(self, run: Run, scanned: Scan) -> str:
        if "undone" not in run.report:  # nothing to take back
            run.report.update({"undone": {}, "failedCount": 0, **dict.fromkeys(REPORT_NAMES.values(), 0)})
        return PARTIAL if run.report.get("failedCount") else COMPLETED

    def verify(self, run: Run, scanned: Scan) -> str:
        raise OperatorError("an undo is a dry run (check) or applied (repair): there is nothing to verify")


def _first_line(error: Exception) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:300]
