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
import uuid
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from james_consistency.engine import before_images as images
from james_consistency.engine import reports
from james_consistency.engine.apply import FAILED, ApplyContext
from james_consistency.engine.before_images import COUNTER, LWT, SET, UPDATE
from james_consistency.engine.live import ATTEMPTS, TRANSIENT_ERRORS, Query, one, prepared
from james_consistency.engine.project_keyspace import PROJECT_KEYSPACE
from james_consistency.engine.run import Run, RunOptions, Scan, execute, new_run_id, reconcile
from james_consistency.engine.spec import Repair
from james_consistency.engine.work_folder import read_text
from james_consistency.errors import OperatorError
from james_consistency.run_report import (
    ALREADY_AS_BEFORE,
    COMPLETED,
    NEWER_KEPT,
    NOT_REVERSED,
    PARTIAL,
    RESTORED,
    UNDO_TARGET,
)

log = logging.getLogger("james_consistency.undo")

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
    spark, settings, run_dir: str, apply: bool = False, confirmation: str | None = None, sample_size: int = 100
) -> dict:
    """The undo of the repair whose work folder is `run_dir`: a dry run, or applied; its report. Its own work goes to
    `<run_dir>/undo/<its run id>`."""
    run_dir = run_dir.rstrip("/")
    summary = read_summary(spark, run_dir)
    options = RunOptions(
        target=UNDO_TARGET,
        keyspace=summary["keyspace"],
        mode="repair" if apply else "check",
        run_dir=f"{run_dir}/undo/{new_run_id()}",
        confirmation=confirmation,
        sample_size=sample_size,
    )
    return execute(spark, settings, options, UndoRepair(run_dir, summary))


@dataclass
class UndoRepair(Repair):
    """The undo of the run whose before-images are in `run_dir` (its summary, read by `read_summary`)."""

    run_dir: str
    summary: dict

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


# ---- in the executors ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UndoPolicy:
    """The undo's policy for the engine's partition applier: the images of one key in one task, newest first."""

    group_columns: tuple[str, ...] = ("table_name", "key")

    @property
    def order(self) -> tuple:
        return (F.col("recorded_at").desc(),)

    def open(self, session, context: ApplyContext) -> "Undoer":
        return Undoer(session, context)

    def sample(self, image) -> str:
        return json.dumps({"table": image["table_name"], "key": json.loads(image["key"]), "action": image["action"]})


class Undoer:
    """Takes one image back (steps, see engine.live), writing only when the context says so."""

    def __init__(self, session, context: ApplyContext):
        self.session, self.context = session, context

    def steps(self, image):
        table = Table(self.session, image["keyspace_name"], image["table_name"])
        key = table.decoded(json.loads(image["key"]))
        before = table.decoded(json.loads(image["before"])) if image["before"] else None
        written = table.decoded(json.loads(image["written"])) if image["written"] else None
        rule = image["rule"]
        if rule == COUNTER:
            outcome = yield from self._counter(table, image, key, before, written)
        elif rule == LWT:
            outcome = yield from self._conditional(table, image, key, before, written)
        else:
            outcome = yield from self._timestamped(table, rule, image, key, before, written)
        action, why = outcome if isinstance(outcome, tuple) else (outcome, None)
        return action, why, None

    def _timestamped(self, table: "Table", rule: str, image, key: dict, before, written):
        """A row, an UPDATE-only row or a set, written back at the repair's timestamp + 1."""
        columns = tuple(sorted((before or written or key).keys()))
        current = yield from table.read(key, columns, self.context.projection_consistency)
        if table.same(current, before, columns):
            return ALREADY_AS_BEFORE
        outcome = RESTORED if table.same(current, written, columns) else NEWER_KEPT
        if self.context.write:
            after = image["write_timestamp"] + 1
            if rule == SET:
                yield from table.put_elements_back(key, before, written, after, self.context.write_consistency)
            elif before is None:
                yield from table.delete(key, after, self.context.write_consistency)
            else:
                yield from table.write(before, key, after, rule == UPDATE, self.context.write_consistency)
        return outcome

    def _counter(self, table: "Table", image, key: dict, before, written):
        """A counter's delta subtracted, once, unless a later run wrote the counter again."""
        latest = one(
            (
                yield Query(
                    prepared(
                        self.session,
                        f"SELECT run_id FROM {PROJECT_KEYSPACE}.{images.KEYS_TABLE} "
                        "WHERE keyspace_name = ? AND table_name = ? AND key = ? LIMIT 1",
                        self.context.truth_consistency,
                    ),
                    [image["keyspace_name"], image["table_name"], image["key"]],
                )
            )
        )
        if latest is not None and latest["run_id"] != image["run_id"]:
            return NOT_REVERSED, f"recomputed since, by run {latest['run_id']}"
        if written is None:
            return NOT_REVERSED, "the repair deleted the counter row: Cassandra cannot bring a deleted counter back"
        deltas = {
            column: int(written.get(column) or 0) - int((before or {}).get(column) or 0)
            for column in written
            if column not in key
        }
        if not any(deltas.values()):
            return ALREADY_AS_BEFORE
        if not self.context.write:
            return RESTORED
        if not (yield from self._claimed(image)):
            return ALREADY_AS_BEFORE  # an undo before this one took it back
        yield from table.add(key, {column: -delta for column, delta in deltas.items()}, self.context.write_consistency)
        return RESTORED

    def _claimed(self, image):
        """Whether this undo claimed the image (a lightweight transaction on its undone_by); a claim that timed out
        is settled by reading undone_by at SERIAL, and sent again while nobody holds it."""
        images_table, where = (
            f"{PROJECT_KEYSPACE}.{images.IMAGES_TABLE}",
            "WHERE run_id = ? AND bucket = ? AND image_id = ?",
        )
        image_key = [image["run_id"], image["bucket"], uuid.UUID(image["image_id"])]
        undo_run_id = self.context.imaging.run_id
        for attempt in range(ATTEMPTS):
            try:
                claimed = yield Query(
                    prepared(
                        self.session,
                        f"UPDATE {images_table} SET undone_by = ? {where} IF undone_by = null",
                        self.context.write_consistency,
                    ),
                    [undo_run_id, *image_key],
                    retried=False,
                )
                return bool(one(claimed)["[applied]"])
            except TRANSIENT_ERRORS:
                if attempt == ATTEMPTS - 1:
                    raise
            holder = one(
                (
                    yield Query(
                        prepared(self.session, f"SELECT undone_by FROM {images_table} {where}", "SERIAL"),
                        image_key,
                    )
                )
            )
            if holder is not None and holder["undone_by"] is not None:
                return holder["undone_by"] == undo_run_id
        raise AssertionError("unreachable")

    def _conditional(self, table: "Table", image, key: dict, before, written):
        """A lightweight transaction of the mailbox repair reversed by another, only where the row still holds
        what the repair wrote."""
        if image["action"] == "generated":
            return NOT_REVERSED, "a uid or modseq handed out is never taken back (James never gives one twice)"
        columns = tuple(sorted((before or written).keys()))
        current = yield from table.read(key, columns, "SERIAL")
        if table.same(current, before, columns):
            return ALREADY_AS_BEFORE
        if not table.same(current, written, columns):
            return NEWER_KEPT
        if not self.context.write:
            return RESTORED
        for attempt in range(ATTEMPTS):
            try:
                applied = yield from table.reverse(key, before, written, self.context.write_consistency)
                return RESTORED if applied else NEWER_KEPT
            except TRANSIENT_ERRORS:
                if attempt == ATTEMPTS - 1:
                    raise
            # A transaction that timed out may have been applied: a read at SERIAL (which finishes a round left in
            # progress) says whether, and it is sent again only while the row still holds what the repair wrote.
            current = yield from table.read(key, columns, "SERIAL")
            if table.same(current, before, columns):
                return RESTORED
            if not table.same(current, written, columns):
                return NEWER_KEPT
        raise AssertionError("unreachable")


class Table:
    """One table as the undo reads and writes it: its columns' CQL types (from the driver's schema metadata), the
    statements built for them, values decoded from an image's JSON."""

    def __init__(self, session, keyspace: str, name: str):
        self.session, self.name = session, f"{keyspace}.{name}"
        metadata = _table_metadata(session, keyspace, name)
        self.types = {column: metadata.columns[column].cql_type for column in metadata.columns}
        self.key_columns = tuple(column.name for column in (*metadata.partition_key, *metadata.clustering_key))

    def decoded(self, row: dict) -> dict:
        return {column: decoded(value, self.types[column]) for column, value in row.items()}

    def same(self, current: dict | None, image: dict | None, columns: tuple[str, ...]) -> bool:
        return images.row_json(current, columns) == images.row_json(image, columns)

    def _where(self, key: dict) -> tuple[str, list]:
        names = [column for column in self.key_columns if column in key]
        return " AND ".join(f"{column} = ?" for column in names), [key[column] for column in names]

    def _value(self, column: str, value) -> tuple[str, list]:
        """A value's CQL placeholder(s): a UDT as a literal with one placeholder per field."""
        if isinstance(value, dict) and not self.types[column].startswith("map<"):
            fields = sorted(value)
            return "{" + ", ".join(f"{field}: ?" for field in fields) + "}", [value[field] for field in fields]
        return "?", [value]

    def read(self, key: dict, columns: tuple[str, ...], consistency: str):
        where, values = self._where(key)
        rows = yield Query(
            prepared(self.session, f"SELECT {', '.join(columns)} FROM {self.name} WHERE {where}", consistency), values
        )
        return one(rows)

    def delete(self, key: dict, timestamp: int, consistency: str):
        where, values = self._where(key)
        statement = prepared(self.session, f"DELETE FROM {self.name} USING TIMESTAMP ? WHERE {where}", consistency)
        yield Query(statement, [timestamp, *values])

    def write(self, row: dict, key: dict, timestamp: int, by_update: bool, consistency: str):
        """The row's former values at `timestamp`: an INSERT, or an UPDATE for a table James writes only so."""
        if by_update:
            settable = [column for column in sorted(row) if column not in key]
            parts = [self._value(column, row[column]) for column in settable]
            assignments = ", ".join(f"{column} = {part[0]}" for column, part in zip(settable, parts, strict=True))
            where, key_values = self._where(key)
            cql = f"UPDATE {self.name} USING TIMESTAMP ? SET {assignments} WHERE {where}"
            values = [timestamp, *(value for part in parts for value in part[1]), *key_values]
        else:
            columns = sorted(row)
            parts = [self._value(column, row[column]) for column in columns]
            cql = (
                f"INSERT INTO {self.name} ({', '.join(columns)}) VALUES ({', '.join(part[0] for part in parts)}) "
                "USING TIMESTAMP ?"
            )
            values = [*(value for part in parts for value in part[1]), timestamp]
        yield Query(prepared(self.session, cql, consistency), values)

    def put_elements_back(self, key: dict, before: dict | None, written: dict | None, timestamp: int, consistency):
        """A set's elements the repair added taken out, those it took out put back, at `timestamp`."""
        where, key_values = self._where(key)
        for column in sorted(set((before or {}) | (written or {})) - set(key)):
            had, has = set((before or {}).get(column) or ()), set((written or {}).get(column) or ())
            for sign, elements in (("-", has - had), ("+", had - has)):
                if elements:
                    cql = f"UPDATE {self.name} USING TIMESTAMP ? SET {column} = {column} {sign} ? WHERE {where}"
                    yield Query(prepared(self.session, cql, consistency), [timestamp, elements, *key_values])

    def add(self, key: dict, deltas: dict, consistency: str):
        where, key_values = self._where(key)
        columns = sorted(deltas)
        increments = ", ".join(f"{column} = {column} + ?" for column in columns)
        statement = prepared(self.session, f"UPDATE {self.name} SET {increments} WHERE {where}", consistency)
        # Not retried: a timed-out increment may have been applied, and a second one would double it.
        yield Query(statement, [*(deltas[column] for column in columns), *key_values], retried=False)

    def reverse(self, key: dict, before: dict | None, written: dict | None, consistency: str):
        """The repair's lightweight transaction taken back by another, conditioned on the row holding what the
        repair wrote; whether it applied."""
        where, key_values = self._where(key)
        if before is None:  # the repair inserted the row
            conditions = [column for column in sorted(written) if column not in key and self._comparable(column)]
            parts = [self._value(column, written[column]) for column in conditions]
            condition = " AND ".join(f"{column} = {part[0]}" for column, part in zip(conditions, parts, strict=True))
            cql = f"DELETE FROM {self.name} WHERE {where}" + (f" IF {condition}" if condition else " IF EXISTS")
            values = [*key_values, *(value for part in parts for value in part[1])]
        elif written is None:  # the repair deleted the row
            columns = sorted(before)
            parts = [self._value(column, before[column]) for column in columns]
            placeholders = ", ".join(part[0] for part in parts)
            cql = f"INSERT INTO {self.name} ({', '.join(columns)}) VALUES ({placeholders}) IF NOT EXISTS"
            values = [value for part in parts for value in part[1]]
        else:  # the repair rewrote some columns
            changed = [c for c in sorted(written) if c not in key and json.dumps(images.encoded(written[c])) !=
                       json.dumps(images.encoded(before.get(c)))]  # fmt: skip
            new, old = (
                [self._value(column, before.get(column)) for column in changed],
                [self._value(column, written[column]) for column in changed],
            )
            assignments = ", ".join(f"{column} = {part[0]}" for column, part in zip(changed, new, strict=True))
            condition = " AND ".join(f"{column} = {part[0]}" for column, part in zip(changed, old, strict=True))
            cql = f"UPDATE {self.name} SET {assignments} WHERE {where} IF {condition}"
            values = [
                *(value for part in new for value in part[1]),
                *key_values,
                *(value for part in old for value in part[1]),
            ]
        rows = yield Query(prepared(self.session, cql, consistency), values, retried=False)
        return bool(one(rows)["[applied]"])

    def _comparable(self, column: str) -> bool:
        """A column a condition can compare (not a collection)."""
        return not self.types[column].startswith(("set<", "list<", "map<"))


def _table_metadata(session, keyspace: str, name: str):
    """The driver's metadata of a table, the whole schema read again when the table is not in it: the product's
    sessions read no schema when they connect (cql.connect), and a session that does follows schema changes by events,
    where an event whose refresh failed or was skipped (a timeout, no schema agreement; logged at debug level only)
    leaves its table out until the next full refresh."""
    for attempt in range(2):
        found = session.cluster.metadata.keyspaces.get(keyspace)
        if found is not None and name in found.tables:
            return found.tables[name]
        if attempt == 0:
            session.cluster.refresh_schema_metadata()
    raise OperatorError(f"table {keyspace}.{name} of a before-image does not exist: it was dropped since the repair")


def decoded(value, cql_type: str):
    """An image's JSON value as the driver binds it for a column of `cql_type`."""
    if value is None:
        return None
    cql_type = cql_type.strip()
    if cql_type.startswith("frozen<"):
        return decoded(value, cql_type[len("frozen<") : -1])
    if cql_type in ("uuid", "timeuuid"):
        return uuid.UUID(value)
    if cql_type == "timestamp":
        return datetime.fromisoformat(value)
    if cql_type == "date":
        return date.fromisoformat(value)
    if cql_type == "blob":
        return bytes.fromhex(value[2:])
    if cql_type == "decimal":
        return Decimal(value)
    if cql_type.startswith(("set<", "list<")):
        inner = cql_type[cql_type.index("<") + 1 : -1]
        items = [decoded(item, inner) for item in value]
        return set(items) if cql_type.startswith("set<") else items
    if cql_type.startswith("map<"):
        key_type, value_type = (part.strip() for part in cql_type[4:-1].split(",", 1))
        return {decoded(key, key_type): decoded(item, value_type) for key, item in value.items()}
    return value
