"""The undo in the executors: each before-image taken back by the rule it was recorded with (see
undo.repair)."""

import json
import uuid
from dataclasses import dataclass

from pyspark.sql import functions as F

from james_consistency.engine import before_images as images
from james_consistency.engine.apply import ApplyContext
from james_consistency.engine.before_images import COUNTER, LWT, SET, UPDATE
from james_consistency.engine.live import ATTEMPTS, TRANSIENT_ERRORS, Query, one, prepared
from james_consistency.engine.project_keyspace import PROJECT_KEYSPACE
from james_consistency.report.run_report import (
    ALREADY_AS_BEFORE,
    NEWER_KEPT,
    NOT_REVERSED,
    RESTORED,
)
from james_consistency.undo.tables import Table


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
