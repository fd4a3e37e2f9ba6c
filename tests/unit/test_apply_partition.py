"""The re-check of a task's candidates: several in flight at once, outcomes in the candidates' order, a node that is
gone stops the attempts, and a projection whose rows share a live recount gets them one at a time."""

import dataclasses
import json
import threading
import uuid

from cassandra.cluster import NoHostAvailable
from james_consistency.cassandra.cql import CassandraSettings
from james_consistency.engine import apply
from james_consistency.engine.live import Query
from james_consistency.projections import projection_spec


class DelayedAnswers:
    """Stands for the driver session: answers each statement (a delay in seconds) from another thread after that
    delay, as the driver's event loop does, or with the error given instead of a delay."""

    def execute_async(self, statement, values):
        return DelayedAnswer(statement)


class DelayedAnswer:
    has_more_pages = False

    def __init__(self, delay_or_error):
        self.delay_or_error = delay_or_error

    def add_callbacks(self, callback, errback):
        if isinstance(self.delay_or_error, Exception):
            threading.Timer(0.01, errback, [self.delay_or_error]).start()
        else:
            threading.Timer(self.delay_or_error, callback, [[]]).start()


class Recorder:
    """Counts the re-checks running at the same time."""

    def __init__(self, fail_from: int | None = None):
        self.running = self.most = 0
        self.fail_from = fail_from
        self.rechecked: list[int] = []

    def recheck(self, session, context, key, candidate, current):
        self.running += 1
        self.most = max(self.most, self.running)
        self.rechecked.append(candidate["uid"])
        try:
            failing = self.fail_from is not None and candidate["uid"] >= self.fail_from
            # Later candidates often finish first.
            yield Query(NoHostAvailable("no host", {}) if failing else 0.02 if candidate["uid"] % 2 else 0.05)
        finally:
            self.running -= 1
        return None if candidate["kind"] == "orphan" else {"uid": candidate["uid"]}


class FakeWriter:
    def __init__(self, session, context, spec):
        self.writes = []

    def read(self, key):
        return None
        yield

    def consistent(self, expected, current):
        return expected is None and current is None

    def write(self, row, timestamp, current):
        yield Query(0.001)

    def remove(self, key, timestamp, current):
        yield Query(0.001)


MAILBOX = uuid.uuid1()


def candidates(count: int) -> list[dict]:
    return [
        {"kind": "missing", "mailboxid": str(MAILBOX), "uid": uid, "messageid": str(uuid.uuid1()), "flags": None}
        for uid in range(count)
    ]


def run_task(monkeypatch, recorder: Recorder, rows: list[dict], *, grouped: bool = False, in_flight: int = 8):
    monkeypatch.setattr(apply, "executor_session", lambda settings: DelayedAnswers())
    spec = projection_spec("messages", "3.9")
    writing = dataclasses.replace(
        spec.writing, writer=FakeWriter, joined_truth=None, group_columns=("mailboxid",) if grouped else ()
    )
    spec = dataclasses.replace(spec, recheck=recorder.recheck, writing=writing)
    context = apply.ApplyContext(CassandraSettings(), "ks", in_flight=in_flight)
    return list(apply.apply_partition(context, apply.ProjectionPolicy(spec))(iter(rows)))


def test_candidates_are_rechecked_several_at_once_and_reported_in_their_order(monkeypatch):
    recorder = Recorder()

    outcomes = run_task(monkeypatch, recorder, candidates(40), in_flight=8)

    assert recorder.most == 8
    assert [outcome[1] for outcome in outcomes] == [apply.ADDED] * 40
    assert [json.loads(outcome[3])["uid"] for outcome in outcomes] == list(range(40))


def test_after_a_node_is_lost_the_remaining_candidates_are_not_attempted(monkeypatch):
    recorder = Recorder(fail_from=10)

    outcomes = run_task(monkeypatch, recorder, candidates(100), in_flight=4)

    actions = [outcome[1] for outcome in outcomes]
    assert actions[:10] == [apply.ADDED] * 10
    assert set(actions[10:]) == {apply.FAILED}
    not_attempted = [outcome for outcome in outcomes if (outcome[2] or "").startswith("not attempted")]
    # The failures are known only as they come back: those already in flight are attempted, no more.
    assert len(recorder.rechecked) <= 10 + apply.UNREACHABLE_AFTER + 4
    assert len(not_attempted) == 100 - len(recorder.rechecked)


def test_candidates_sharing_a_recount_are_rechecked_one_at_a_time(monkeypatch):
    recorder = Recorder()

    outcomes = run_task(monkeypatch, recorder, candidates(10), grouped=True, in_flight=8)

    assert recorder.most == 1
    assert len(outcomes) == 10
