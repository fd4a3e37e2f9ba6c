"""Safe apply, run in the Spark executors: re-read each candidate from live Cassandra and fix it only if it is
still inconsistent, with writes stamped so that anything a user writes after the re-read wins."""

import json
import time
import uuid
from collections import deque
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Protocol

from cassandra import OperationTimedOut
from cassandra.cluster import NoHostAvailable

from james_consistency.cassandra.consistency_levels import DEFAULT_CONSISTENCY_LEVEL
from james_consistency.cassandra.cql import CassandraSettings
from james_consistency.engine import before_images
from james_consistency.engine.before_images import DELETED, INSERTED, REWRITTEN, Recorder
from james_consistency.engine.joined import LIVE_PROJECTION, driver_row
from james_consistency.engine.live import (
    Query,
    RateLimiter,
    StepLoop,
    Writes,
    executor_session,
    now_micros,
    one,
    prepared,
)
from james_consistency.engine.spec import ProjectionSpec

ADDED = "added"
UPDATED = "updated"
REMOVED = "removed"
ALREADY_CONSISTENT = "already_consistent"
FAILED = "failed"
# What a re-check found wrong at a key: the fix it made (or, not writing, would make).
WRONG = (ADDED, UPDATED, REMOVED)

# One row per candidate: its kind, the action taken, an error, its identity (JSON) and the policy's detail (JSON).
OUTCOME_SCHEMA = "kind string, action string, error string, sample string, detail string"
# After this many candidates in a row found no node (each after its retries), the task stops trying: the node is
# gone, and the rest are reported as not attempted instead of waiting out the retries of each.
UNREACHABLE_AFTER = 3
# Candidates re-checked at once in one Spark task (each re-check is a few round trips, mostly waiting).
IN_FLIGHT = 32
# Outcomes held back behind a slower, older candidate (they are yielded in the candidates' order).
HELD_BACK = 512


@dataclass(frozen=True)
class Imaging:
    """Where a writing run records its before-images (engine.before_images): its run id, its target, how long they
    are kept."""

    run_id: str
    target: str
    ttl_seconds: int


@dataclass(frozen=True)
class ApplyContext:
    settings: CassandraSettings
    keyspace: str
    # The re-reads of the truth: imapUidTable's (the messages' truth, which James may write with lightweight
    # transactions) and every other table's; see cassandra.consistency_levels.read_levels.
    truth_consistency: str = DEFAULT_CONSISTENCY_LEVEL
    message_truth_consistency: str = DEFAULT_CONSISTENCY_LEVEL
    projection_consistency: str = DEFAULT_CONSISTENCY_LEVEL
    write_consistency: str = DEFAULT_CONSISTENCY_LEVEL
    rate_per_task: float = 0.0
    in_flight: int = IN_FLIGHT
    # False: re-check only (verification), report what would be done, write nothing.
    write: bool = True
    # Set when the candidates carry their live rows, read by direct join (engine.joined) from this moment on
    # (microseconds): every write is stamped with it, so what a user wrote after it wins over the repair.
    joined_reads_from: int | None = None
    # A writing run records the before-image of every write first (None: nothing recorded).
    imaging: Imaging | None = None
    # Not writing (a verify): a key found wrong is read live once more this long after, and reported wrong only if
    # it still is then. James writes the truth, then the projection, tens of milliseconds apart: a user's write in
    # flight when the key was first read has landed by then. 0: no second read.
    second_look_seconds: float = 0.0

    def recorder(self, session) -> Recorder | None:
        """The task's recorder of before-images, when this context writes and records."""
        if not (self.write and self.imaging):
            return None
        imaging = self.imaging
        return Recorder(
            session, imaging.run_id, imaging.target, self.keyspace, imaging.ttl_seconds, self.write_consistency
        )


def to_cql_value(value, cql_type: str):
    """A Spark value of a key column as the Python driver binds it."""
    if value is None:
        return None
    if cql_type in ("timeuuid", "uuid"):
        return uuid.UUID(str(value))
    return value


def comparable(row: dict | None, columns: tuple[str, ...]) -> tuple | None:
    """A row read by the driver, in a form where equal Cassandra contents compare equal."""
    if row is None:
        return None
    values = []
    for column in columns:
        value = row.get(column)
        kind = type(value)
        if kind not in _SCALARS and (isinstance(value, set | frozenset) or kind.__name__ == "SortedSet"):
            value = tuple(sorted(value)) or None
        values.append(value)
    return tuple(values)


# What most columns hold, never a set: not looked at further (a repair compares hundreds of thousands a night).
_SCALARS = frozenset({type(None), bool, int, float, str, uuid.UUID, datetime})


class ProjectionWriter:
    """Reads and writes one projection table by its key, through prepared statements: whole rows, upserted or
    deleted with a timestamp. Other writers (set elements, counters) offer the same four methods. `read`, `write`
    and `remove` are re-check steps (see engine.live). `undo_rule` says how the undo takes a write back
    (engine.before_images), `written` what the row holds once the write is made."""

    undo_rule = before_images.ROW

    def __init__(self, session, context: ApplyContext, spec: ProjectionSpec):
        table = f"{context.keyspace}.{spec.projection_table}"
        where = " AND ".join(f"{column} = ?" for column in spec.key)
        self.session = session
        self.spec = spec
        self.context = context
        self.select = prepared(
            session,
            f"SELECT {', '.join(spec.columns)} FROM {table} WHERE {where}",
            context.projection_consistency,
        )
        self.upsert = prepared(session, self.upsert_cql(table, where), context.write_consistency)
        self.delete = prepared(
            session, f"DELETE FROM {table} USING TIMESTAMP ? WHERE {where}", context.write_consistency
        )

    def upsert_cql(self, table: str, where: str) -> str:
        columns = self.spec.columns
        return (
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)}) USING TIMESTAMP ?"
        )

    def upsert_values(self, row: dict, timestamp: int) -> list:
        return [_bindable(row.get(column)) for column in self.spec.columns] + [timestamp]

    def read(self, key: dict):
        return one((yield Query(self.select, [key[column] for column in self.spec.key])))

    def consistent(self, expected: dict | None, current: dict | None) -> bool:
        return comparable(expected, self.spec.columns) == comparable(current, self.spec.columns)

    def written(self, expected: dict, current: dict | None) -> dict:
        return expected

    def write(self, row: dict, timestamp: int, current: dict | None):
        yield Writes(((self.upsert, self.upsert_values(row, timestamp)),))

    def remove(self, key: dict, timestamp: int, current: dict | None):
        yield Writes(((self.delete, [timestamp] + [key[column] for column in self.spec.key]),))


class UpdateWriter(ProjectionWriter):
    """Writes rows by UPDATE ... SET, for a table James itself only ever updates (aclv2): such rows have no row
    marker, so when James later takes every value out of one, the row is gone, as it would be had James written it."""

    undo_rule = before_images.UPDATE

    def upsert_cql(self, table: str, where: str) -> str:
        assignments = ", ".join(f"{column} = ?" for column in self.spec.value_columns)
        return f"UPDATE {table} USING TIMESTAMP ? SET {assignments} WHERE {where}"

    def upsert_values(self, row: dict, timestamp: int) -> list:
        values = [_bindable(row.get(column)) for column in self.spec.value_columns]
        return [timestamp, *values, *(row[column] for column in self.spec.key)]


def _bindable(value):
    if type(value).__name__ == "SortedSet":
        return set(value) or None
    return value


def reconcile_candidate(
    writer: ProjectionWriter, session, context: ApplyContext, spec: ProjectionSpec, candidate, recorder=None
):
    """Re-check one candidate and fix it if it is still inconsistent (steps, see engine.live). Returns the action
    taken.

    The write timestamp is taken BEFORE the re-read: a user write made after the re-read carries a later
    timestamp and wins over this repair whatever the order the two writes reach Cassandra in; a user write
    made before it is visible to the re-read, so the repair writes what the truth now says. Rows already read by
    direct join (`context.joined_reads_from`) are taken from the candidate, and so is the moment before their reads.
    With a `recorder`, each write's before-image is recorded first (engine.before_images).
    """
    key = {column: to_cql_value(candidate[column], spec.projection.cql_types.get(column, "")) for column in spec.key}
    if context.joined_reads_from is not None:
        write_timestamp = context.joined_reads_from
        current = driver_row(candidate[LIVE_PROJECTION], spec.projection.cql_types)
    else:
        write_timestamp = now_micros()
        # The projection is read before the truth: a counter writer checks, right before adding, that the counter
        # did not move while the truth was being counted.
        current = yield from writer.read(key)
    expected = yield from spec.recheck(session, context, key, candidate, current)
    if writer.consistent(expected, current):
        return ALREADY_CONSISTENT
    if expected is None:
        if context.write:
            if recorder is not None:
                yield from _record(recorder, writer, spec, DELETED, key, current, None, write_timestamp)
            yield from writer.remove(key, write_timestamp, current)
        return REMOVED
    if context.write:
        if recorder is not None:
            action, after = (INSERTED if current is None else REWRITTEN), writer.written(expected, current)
            yield from _record(recorder, writer, spec, action, key, current, after, write_timestamp)
        yield from writer.write(expected, write_timestamp, current)
    return ADDED if current is None else UPDATED


class Policy(Protocol):
    """What a repair plugs into the partition applier: how each candidate of a Spark task is re-checked (and fixed).

    `open(session, context)` is called once per task and gives the object whose `steps(candidate)` re-checks one
    candidate (steps, see engine.live) and answers `(action, detail, error)`: the action taken, a JSON detail or None,
    and an error the policy itself caught, or None. `sample(candidate)` is the candidate's identity in the report (a
    JSON object). `group_columns`: candidates sharing them go to one task, sorted (then by `order`: Spark columns,
    e.g. newest first), and are re-checked one at a time."""

    group_columns: tuple[str, ...]
    order: tuple = ()

    def open(self, session, context: ApplyContext): ...

    def sample(self, candidate) -> str: ...


@dataclass(frozen=True)
class ProjectionPolicy:
    """A projection's re-check: the spec's writer and `reconcile_candidate`."""

    spec: ProjectionSpec
    order: tuple = ()

    @property
    def group_columns(self) -> tuple[str, ...]:
        return self.spec.writing.group_columns

    def open(self, session, context: ApplyContext) -> "_CandidateReconciler":
        writer = (self.spec.writing.writer or ProjectionWriter)(session, context, self.spec)
        return _CandidateReconciler(writer, session, context, self.spec, context.recorder(session))

    def sample(self, candidate) -> str:
        names = self.spec.sample.names
        return json.dumps(
            {names.get(column, column): _jsonable(candidate[column]) for column in self.spec.sample.columns},
            sort_keys=True,
        )


@dataclass(frozen=True)
class _CandidateReconciler:
    writer: ProjectionWriter
    session: object
    context: ApplyContext
    spec: ProjectionSpec
    recorder: Recorder | None

    def steps(self, candidate):
        action = yield from reconcile_candidate(
            self.writer, self.session, self.context, self.spec, candidate, self.recorder
        )
        return action, None, None


def _record(recorder: Recorder, writer, spec: ProjectionSpec, action, key, before, after, timestamp: int):
    """Steps: the before-image of the projection write that follows."""
    yield from recorder.record(
        spec.projection_table, writer.undo_rule, action, key, before, after, timestamp, spec.columns
    )


def apply_partition(context: ApplyContext, policy: Policy):
    """A mapPartitions function over candidate rows, yielding one outcome per candidate (OUTCOME_SCHEMA, in the
    candidates' order), for any repair's policy.

    Up to `context.in_flight` candidates are re-checked at once, their statements sent through the driver's
    asynchronous API (a re-check waits on Cassandra far longer than it computes). A policy whose candidates must
    be re-checked one after the other (`group_columns`: a live recount shared by the rows of a group) gets one at a
    time. Not writing, a key found wrong is re-checked live once more `context.second_look_seconds` later, its
    outcome the second one's."""

    in_flight = 1 if policy.group_columns else max(context.in_flight, 1)
    second_look = 0.0 if context.write else context.second_look_seconds

    def run(candidates):
        try:
            session = executor_session(context.settings)
            reconciler = policy.open(session, context)
            # The second look reads the key live, whatever the first one was handed (rows read by direct join).
            looker = policy.open(session, replace(context, joined_reads_from=None)) if second_look else None
        except Exception as error:  # noqa: BLE001 - reported per candidate: nothing was attempted
            unreachable = f"not attempted: {type(error).__name__}: {str(error)[:300]}"
            for candidate in candidates:
                yield (candidate["kind"], FAILED, unreachable, policy.sample(candidate), None)
            return

        loop = StepLoop(session)
        limiter = RateLimiter(context.rate_per_task)
        pending: deque[_Outcome] = deque()
        # Keys found wrong, waiting for their second look: (when it is due, the candidate, its outcome), in order.
        looks: deque[tuple[float, object, _Outcome]] = deque()
        lost = 0  # consecutive candidates that failed because no node answered

        def settled():
            nonlocal lost
            while pending and pending[0].outcome is not None:
                outcome = pending.popleft()
                lost = lost + 1 if outcome.unreachable else 0
                yield outcome.outcome

        def first_look(candidate, outcome: _Outcome):
            def done(answer, error) -> None:
                outcome.settle(answer, error)
                if looker is not None and outcome.wrong:
                    outcome.outcome = None  # told once the second look has read the key again
                    looks.append((time.monotonic() + second_look, candidate, outcome))

            return done

        def wait():
            """Start the second looks that are due, then take one answer (or sleep until the next look is due)."""
            while looks and looks[0][0] <= time.monotonic() and loop.running < in_flight:
                _, candidate, outcome = looks.popleft()
                limiter.wait()
                loop.start(looker.steps(candidate), outcome.settle)
            if loop.running:
                loop.run_once()
            elif looks:
                time.sleep(max(0.0, looks[0][0] - time.monotonic()))

        for candidate in candidates:
            while loop.running >= in_flight or len(pending) >= HELD_BACK:
                wait()
                yield from settled()
            outcome = _Outcome(candidate, policy.sample(candidate))
            pending.append(outcome)
            if lost >= UNREACHABLE_AFTER:
                outcome.not_attempted("not attempted: Cassandra unreachable (NoHostAvailable)")
            else:
                limiter.wait()
                loop.start(reconciler.steps(candidate), first_look(candidate, outcome))
            yield from settled()
        while loop.running or looks:
            wait()
            yield from settled()
        yield from settled()

    return run


class _Outcome:
    """One candidate's outcome row, once its re-check has ended; whether it failed because no node answered."""

    def __init__(self, candidate, sample: str):
        self.kind, self.sample = candidate["kind"], sample
        self.outcome: tuple | None = None
        self.unreachable = False

    def settle(self, answer: tuple | None, error: BaseException | None) -> None:
        if error is None:
            action, detail, caught = answer
            self.outcome = (self.kind, action, caught, self.sample, detail)
            return
        self.outcome = (self.kind, FAILED, f"{type(error).__name__}: {str(error)[:300]}", self.sample, None)
        self.unreachable = isinstance(error, NoHostAvailable | OperationTimedOut)

    def not_attempted(self, reason: str) -> None:
        self.outcome = (self.kind, FAILED, reason, self.sample, None)

    @property
    def wrong(self) -> bool:
        """Whether the re-check found the key wrong (not consistent, not failed)."""
        return self.outcome is not None and self.outcome[1] in WRONG


def _jsonable(value):
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    return value
