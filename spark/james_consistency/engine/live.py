"""Live Cassandra access from the Spark executors: one driver session per Python worker, prepared statements,
retries with backoff on transient errors, a rate limit."""

import random
import time
from dataclasses import dataclass, field

from cassandra import ConsistencyLevel, OperationTimedOut, ReadTimeout, Unavailable, WriteTimeout
from cassandra.cluster import NoHostAvailable
from cassandra.query import dict_factory

from james_consistency.cql import CassandraSettings, connect

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


def with_retries(action, attempts: int = 5, first_delay: float = 0.1):
    """Run `action()`; retry transient Cassandra errors with exponential backoff and jitter."""
    for attempt in range(attempts):
        try:
            return action()
        except TRANSIENT_ERRORS:
            if attempt == attempts - 1:
                raise
            time.sleep(first_delay * (2**attempt) * (0.5 + random.random()))
    return None


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
