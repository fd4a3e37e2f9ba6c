"""Safe apply, run in the Spark executors: re-read each candidate from live Cassandra and fix it only if it is
still inconsistent, with writes stamped so that anything a user writes after the re-read wins."""

import json
import uuid
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime

from cassandra import OperationTimedOut
from cassandra.cluster import NoHostAvailable

from james_consistency.cql import CassandraSettings
from james_consistency.engine.live import RateLimiter, executor_session, now_micros, prepared, with_retries
from james_consistency.engine.spec import ProjectionSpec

ADDED = "added"
UPDATED = "updated"
REMOVED = "removed"
ALREADY_CONSISTENT = "already_consistent"
FAILED = "failed"

OUTCOME_SCHEMA = "kind string, action string, error string, sample string"
# After this many candidates in a row found no node (each after its retries), the task stops trying: the node is
# gone, and the rest are reported as not attempted instead of waiting out the retries of each.
UNREACHABLE_AFTER = 3
# Candidates re-checked at once in one Spark task (each re-check is a few round trips, mostly waiting).
IN_FLIGHT = 16


@dataclass(frozen=True)
class ApplyContext:
    settings: CassandraSettings
    keyspace: str
    truth_consistency: str = "LOCAL_QUORUM"
    projection_consistency: str = "LOCAL_QUORUM"
    write_consistency: str = "LOCAL_QUORUM"
    rate_per_task: float = 0.0
    in_flight: int = IN_FLIGHT
    # False: re-check only (verification), report what would be done, write nothing.
    write: bool = True


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
        if isinstance(value, set | frozenset) or type(value).__name__ == "SortedSet":
            value = tuple(sorted(value)) or None
        values.append(value)
    return tuple(values)


class ProjectionWriter:
    """Reads and writes one projection table by its key, through prepared statements: whole rows, upserted or
    deleted with a timestamp. Other writers (set elements, counters) offer the same four methods."""

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

    def read(self, key: dict) -> dict | None:
        values = [key[column] for column in self.spec.key]
        return with_retries(lambda: self.session.execute(self.select, values).one())

    def consistent(self, expected: dict | None, current: dict | None) -> bool:
        return comparable(expected, self.spec.columns) == comparable(current, self.spec.columns)

    def write(self, row: dict, timestamp: int, current: dict | None) -> None:
        values = self.upsert_values(row, timestamp)
        with_retries(lambda: self.session.execute(self.upsert, values))

    def remove(self, key: dict, timestamp: int, current: dict | None) -> None:
        values = [timestamp] + [key[column] for column in self.spec.key]
        with_retries(lambda: self.session.execute(self.delete, values))


class UpdateWriter(ProjectionWriter):
    """Writes rows by UPDATE ... SET, for a table James itself only ever updates (aclv2): such rows have no row
    marker, so when James later takes every value out of one, the row is gone, as it would be had James written it."""

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


def reconcile_candidate(writer: ProjectionWriter, session, context: ApplyContext, spec: ProjectionSpec, candidate):
    """Re-check one candidate and fix it if it is still inconsistent. Returns the action taken.

    The write timestamp is taken BEFORE the re-read: a user write made after the re-read carries a later
    timestamp and wins over this repair whatever the order the two writes reach Cassandra in; a user write
    made before it is visible to the re-read, so the repair writes what the truth now says.
    """
    key = {column: to_cql_value(candidate[column], spec.projection.cql_types.get(column, "")) for column in spec.key}
    write_timestamp = now_micros()
    # The projection is read before the truth: a counter writer checks, right before adding, that the counter
    # did not move while the truth was being counted.
    current = writer.read(key)
    expected = spec.recheck(session, context, key, candidate, current)
    if writer.consistent(expected, current):
        return ALREADY_CONSISTENT
    if expected is None:
        if context.write:
            writer.remove(key, write_timestamp, current)
        return REMOVED
    if context.write:
        writer.write(expected, write_timestamp, current)
    return ADDED if current is None else UPDATED


def apply_partition(context: ApplyContext, spec: ProjectionSpec):
    """A mapPartitions function over candidate rows, yielding one outcome per candidate (in their order).

    Up to `context.in_flight` candidates are re-checked at once, each in its own thread with its own round trips:
    a re-check waits on Cassandra far longer than it computes. A projection whose candidates must be re-checked one
    after the other (`group_columns`: a live recount shared by the rows of a group) gets one at a time."""

    in_flight = 1 if spec.writing.group_columns else max(context.in_flight, 1)

    def run(candidates):
        def sample_of(candidate) -> str:
            names = spec.sample.names
            return json.dumps(
                {names.get(column, column): _jsonable(candidate[column]) for column in spec.sample.columns},
                sort_keys=True,
            )

        try:
            session = executor_session(context.settings)
            writer = (spec.writing.writer or ProjectionWriter)(session, context, spec)
        except Exception as error:  # noqa: BLE001 - reported per candidate: nothing was attempted
            unreachable = f"not attempted: {type(error).__name__}: {str(error)[:300]}"
            for candidate in candidates:
                yield (candidate["kind"], FAILED, unreachable, sample_of(candidate))
            return

        def outcome_of(candidate) -> tuple[tuple, bool]:
            """The candidate's outcome, and whether it failed because no node answered."""
            try:
                action = reconcile_candidate(writer, session, context, spec, candidate)
                return (candidate["kind"], action, None, sample_of(candidate)), False
            except Exception as error:  # noqa: BLE001 - one bad row must not stop the run; it is reported
                failure = (
                    candidate["kind"],
                    FAILED,
                    f"{type(error).__name__}: {str(error)[:300]}",
                    sample_of(candidate),
                )
                return failure, isinstance(error, NoHostAvailable | OperationTimedOut)

        limiter = RateLimiter(context.rate_per_task)
        lost = 0  # consecutive candidates that failed because no node answered
        pending: deque[Future] = deque()
        with ThreadPoolExecutor(max_workers=in_flight, thread_name_prefix="recheck") as threads:

            def settle_oldest():
                nonlocal lost
                outcome, unreachable = pending.popleft().result()
                lost = lost + 1 if unreachable else 0
                return outcome

            for candidate in candidates:
                if len(pending) >= in_flight:
                    yield settle_oldest()
                if lost >= UNREACHABLE_AFTER:
                    yield (
                        candidate["kind"],
                        FAILED,
                        "not attempted: Cassandra unreachable (NoHostAvailable)",
                        sample_of(candidate),
                    )
                    continue
                limiter.wait()
                pending.append(threads.submit(outcome_of, candidate))
            while pending:
                yield settle_oldest()

    return run


def _jsonable(value):
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    return value
