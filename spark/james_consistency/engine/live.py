"""Live Cassandra access from the Spark executors: one driver session per Python worker, prepared statements,
retries with backoff on transient errors, a rate limit, and the loop that runs many re-checks at once.

A re-check is written as steps: a generator that yields the statements it needs (`rows = yield Query(...)`,
`row_lists = yield Together(...)`, `yield Writes(...)`) and returns its answer. `StepLoop` sends the statements
through the driver's asynchronous API and carries each re-check on when its rows come back, all from the task's own
thread; `run_steps` runs one re-check to its end. A thread per re-check, blocked on each answer, cost the Python
worker about twice the CPU per statement.

The idempotent writes several re-checks wait on at the same moment (`Writes`: a before-image, a projection row
written at a fixed timestamp) travel in one unlogged batch: a request of its own cost the Python worker more than
the statement it carried, and a repair's writes were most of its time.
"""

import heapq
import itertools
import queue
import random
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field

from cassandra import ConsistencyLevel, OperationTimedOut, ReadTimeout, Unavailable, WriteTimeout
from cassandra.cluster import NoHostAvailable
from cassandra.query import BatchStatement, BatchType, dict_factory

from james_consistency.cassandra.cql import CassandraSettings, connect

TRANSIENT_ERRORS = (WriteTimeout, ReadTimeout, Unavailable, OperationTimedOut, NoHostAvailable)

_SESSIONS: dict = {}
_PREPARED: dict = {}


def executor_session(settings: CassandraSettings):
    """One session per Python worker process, created on first use (after the worker was forked)."""
    session = _SESSIONS.get(settings)
    if session is not None and not any(host.is_up for host in session.cluster.metadata.all_hosts()):
        # Every node was seen down (a restart): start afresh rather than wait for the driver's reconnection backoff.
        session.cluster.shutdown()
        for key in [key for key in _PREPARED if key[0] == id(session)]:
            del _PREPARED[key]
        session = None
    if session is None:
        session = connect(settings, row_factory=dict_factory)
        _SESSIONS[settings] = session
    return session


def prepared(session, cql: str, consistency: str):
    key = (id(session), cql, consistency)
    statement = _PREPARED.get(key)
    if statement is None:
        statement = session.prepare(cql)
        # A read at SERIAL/LOCAL_SERIAL sees the latest value written by a lightweight transaction.
        statement.consistency_level = getattr(ConsistencyLevel, consistency)
        _PREPARED[key] = statement
    return statement


ATTEMPTS = 5
FIRST_RETRY_DELAY = 0.1
# Statements of one `Together` sent at once.
TOGETHER_AT_ONCE = 64
# One unlogged batch of re-checks' writes stays under Cassandra's default warning thresholds
# (unlogged_batch_across_partitions_warn_threshold: 10 partitions; batch_size_warn_threshold: 5 KiB).
BATCH_STATEMENTS = 10
BATCH_BYTES = 3500  # what a batch carries is about a quarter more than its values


def _retry_delay(attempt: int, first_delay: float = FIRST_RETRY_DELAY) -> float:
    return first_delay * (2**attempt) * (0.5 + random.random())


def with_retries(action, attempts: int = ATTEMPTS, first_delay: float = FIRST_RETRY_DELAY):
    """Run `action()`; retry transient Cassandra errors with exponential backoff and jitter."""
    for attempt in range(attempts):
        try:
            return action()
        except TRANSIENT_ERRORS:
            if attempt == attempts - 1:
                raise
            time.sleep(_retry_delay(attempt, first_delay))
    return None


@dataclass(frozen=True)
class Query:
    """A statement a re-check step waits for: `rows = yield Query(statement, values)` gets every row (all pages).
    Transient errors are retried, except for a statement that must not be applied twice (`retried=False`: a counter
    increment that timed out may have been applied)."""

    statement: object
    values: Sequence = ()
    retried: bool = True


@dataclass(frozen=True)
class Together:
    """Statements sent at once: `row_lists = yield Together(queries)` gets their rows in the queries' order."""

    queries: tuple[Query, ...]


@dataclass(frozen=True)
class Writes:
    """Writes a re-check step waits for (`yield Writes(((statement, values), ...))`, answered with None), each safe
    to apply twice (a fixed timestamp, a fixed key): they may share an unlogged batch with other re-checks' writes
    of the same consistency. A batch that failed on a transient error is sent again whole; one refused, re-check by
    re-check."""

    statements: tuple[tuple[object, Sequence], ...]


Request = Query | Together | Writes
Steps = Generator[Request, object, object]


def one(rows: list) -> dict | None:
    return rows[0] if rows else None


@dataclass
class _Running:
    steps: Steps
    done: Callable[[object, BaseException | None], None]
    step: int = 0
    request: Request | None = None
    queries: tuple[Query, ...] = ()
    results: list = field(default_factory=list)
    sent: int = 0
    left: int = 0


class StepLoop:
    """Runs re-check steps on the driver's asynchronous API, from the thread that calls `run_once`. The driver's
    callbacks only hand answers over through a queue: a step's own code (which may prepare a statement, a blocking
    call) never runs on the driver's event loop."""

    def __init__(self, session, batch=None):
        self.session = session
        self.running = 0
        self._answers: queue.SimpleQueue = queue.SimpleQueue()
        self._retries: list = []
        self._order = itertools.count()
        self._writes: list[tuple[_Running, int]] = []  # re-checks waiting on Writes not sent yet
        self._batch = batch or unlogged_batch

    def start(self, steps: Steps, done: Callable[[object, BaseException | None], None]) -> None:
        """Run `steps`; `done(answer, None)` or `done(None, error)` is called from `run_once` when they end."""
        self.running += 1
        self._advance(_Running(steps, done), None, None)

    def run_once(self) -> None:
        """Send the writes the re-checks wait on and the retries that are due, then wait for one answer (or the time
        of the next retry) and carry its re-check on, with every other answer already in. Returns at once when
        nothing is under way."""
        if not self.running:
            return
        self._send_writes()
        while self._retries and self._retries[0][0] <= time.monotonic():
            _, _, resend = heapq.heappop(self._retries)
            resend()
        timeout = max(0.0, self._retries[0][0] - time.monotonic()) if self._retries else None
        try:
            answer = self._answers.get(timeout=timeout)
        except queue.Empty:
            return
        while True:
            self._take(*answer)
            try:
                answer = self._answers.get_nowait()
            except queue.Empty:
                return

    def _take(self, running: "_Running | None", step, index: int, attempt: int, rows, error) -> None:
        if running is None:  # a batch of writes: `step` holds its re-checks and the steps they wait in
            self._take_writes(step, attempt, error)
            return
        if running.step != step:
            return  # an answer to a Together whose re-check already went on with another one's error
        query = running.queries[index]
        if error is not None and query.retried and isinstance(error, TRANSIENT_ERRORS) and attempt + 1 < ATTEMPTS:
            self._retry(attempt, lambda: running.step == step and self._send(running, step, index, attempt + 1))
            return
        if error is not None:
            self._advance(running, None, error)
            return
        running.results[index] = rows
        running.left -= 1
        if running.sent < len(running.queries):
            self._send(running, step, running.sent, 0)
            running.sent += 1
        if running.left == 0:
            together = isinstance(running.request, Together)
            self._advance(running, running.results if together else running.results[0], None)

    def _take_writes(self, waiting: list, attempt: int, error) -> None:
        if error is not None and isinstance(error, TRANSIENT_ERRORS) and attempt + 1 < ATTEMPTS:
            self._retry(attempt, lambda: self._send_batch(waiting, attempt + 1))
            return
        if error is not None and not isinstance(error, TRANSIENT_ERRORS) and len(waiting) > 1:
            # A refused batch (a value Cassandra rejects) is sent again re-check by re-check: only the writes
            # refused on their own fail, not those that shared their batch.
            for alone in waiting:
                self._send_batch([alone], 0)
            return
        for running, step in waiting:
            if running.step == step:
                self._advance(running, None, error)

    def _retry(self, attempt: int, resend: Callable[[], object]) -> None:
        when = time.monotonic() + _retry_delay(attempt)
        heapq.heappush(self._retries, (when, next(self._order), resend))

    def _advance(self, running: _Running, value, error: BaseException | None) -> None:
        running.step += 1
        try:
            request = running.steps.send(value) if error is None else running.steps.throw(error)
        except StopIteration as stop:
            self.running -= 1
            running.done(stop.value, None)
            return
        except Exception as failure:  # noqa: BLE001 - the re-check's own error, handed to its caller
            self.running -= 1
            running.done(None, failure)
            return
        if not isinstance(request, Request):
            self.running -= 1
            running.steps.close()
            yielded = type(request).__name__
            running.done(None, TypeError(f"a re-check step yielded {yielded}, not a Query, Together or Writes"))
            return
        running.request = request
        if isinstance(request, Writes):
            running.queries = ()
            if not request.statements:
                self._advance(running, None, None)
                return
            self._writes.append((running, running.step))
            return
        running.queries = request.queries if isinstance(request, Together) else (request,)
        running.results = [None] * len(running.queries)
        running.left = len(running.queries)
        running.sent = min(len(running.queries), TOGETHER_AT_ONCE)
        if not running.queries:
            self._advance(running, [], None)
            return
        for index in range(running.sent):
            self._send(running, running.step, index, 0)

    def _send(self, running: _Running, step: int, index: int, attempt: int) -> None:
        query = running.queries[index]
        answers = self._answers
        try:
            future = self.session.execute_async(query.statement, query.values)
        except Exception as error:  # noqa: BLE001 - e.g. NoHostAvailable raised at once: an answer like any other
            answers.put((running, step, index, attempt, None, error))
            return
        rows: list = []

        def on_page(page) -> None:
            rows.extend(page or ())
            if future.has_more_pages:
                future.start_fetching_next_page()
            else:
                answers.put((running, step, index, attempt, rows, None))

        def on_error(error: BaseException) -> None:
            answers.put((running, step, index, attempt, None, error))

        future.add_callbacks(on_page, on_error)

    def _send_writes(self) -> None:
        """The writes the re-checks wait on, in batches of one consistency, each within BATCH_STATEMENTS statements
        and about BATCH_BYTES of values (a re-check's own writes are never split)."""
        waiting, self._writes = self._writes, []
        batch: list = []
        statements = size = 0
        level = None
        for running, step in waiting:
            writes = running.request.statements
            weight = sum(_weight(values) for _, values in writes)
            writes_level = getattr(writes[0][0], "consistency_level", None)
            full = statements + len(writes) > BATCH_STATEMENTS or size + weight > BATCH_BYTES
            if batch and (full or writes_level != level):
                self._send_batch(batch, 0)
                batch, statements, size = [], 0, 0
            batch.append((running, step))
            statements, size, level = statements + len(writes), size + weight, writes_level
        if batch:
            self._send_batch(batch, 0)

    def _send_batch(self, waiting: list, attempt: int) -> None:
        answers = self._answers
        writes = [write for running, _ in waiting for write in running.request.statements]
        try:
            if len(writes) == 1:
                future = self.session.execute_async(*writes[0])
            else:
                future = self.session.execute_async(self._batch(writes), None)
        except Exception as error:  # noqa: BLE001 - an answer like any other
            answers.put((None, waiting, 0, attempt, None, error))
            return
        future.add_callbacks(
            lambda _: answers.put((None, waiting, 0, attempt, None, None)),
            lambda error: answers.put((None, waiting, 0, attempt, None, error)),
        )


def unlogged_batch(writes: list) -> BatchStatement:
    """Statements with their values in one unlogged batch, at the consistency of the first."""
    batch = BatchStatement(BatchType.UNLOGGED, consistency_level=writes[0][0].consistency_level)
    for statement, values in writes:
        batch.add(statement, values)
    return batch


def _weight(values: Sequence) -> int:
    """About the bytes of a statement's values in a batch: texts and blobs by length, anything else 16."""
    weight = 0
    for value in values:
        weight += len(value) if type(value) in _SIZED else 16
    return weight


_SIZED = frozenset({str, bytes})


def run_steps(session, steps: Steps):
    """Run one re-check's steps to their end; returns its answer or raises its error."""
    loop = StepLoop(session)
    outcome: list = []
    loop.start(steps, lambda answer, error: outcome.append((answer, error)))
    while not outcome:
        loop.run_once()
    answer, error = outcome[0]
    if error is not None:
        raise error
    return answer


def now_micros() -> int:
    return int(time.time() * 1_000_000)


@dataclass
class RateLimiter:
    """At most `per_second` calls per second in this task (0 = unlimited)."""

    per_second: float
    _next: float = field(default=0.0)

    def wait(self) -> None:
        if self.per_second <= 0:
            return
        now = time.monotonic()
        if self._next > now:
            time.sleep(self._next - now)
            now = self._next
        self._next = max(now, self._next) + 1.0 / self.per_second
