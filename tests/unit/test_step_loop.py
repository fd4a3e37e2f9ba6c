"""The loop that runs re-checks on the driver's asynchronous API: rows of every page, answers of statements sent
together in their order, transient errors retried, a counter increment never sent twice."""

import threading

import pytest
from cassandra import WriteTimeout
from james_consistency.engine.live import Query, Together, run_steps


class ScriptedSession:
    """Stands for the driver session. Each statement is a list of what its successive sends get: a list of pages
    (rows), or an error. Answers come from another thread, after `delay` seconds, as the driver's event loop does."""

    def __init__(self):
        self.sent: list[str] = []

    def execute_async(self, statement, values):
        name, script = statement
        self.sent.append(name)
        return ScriptedAnswer(script.pop(0))


class ScriptedAnswer:
    def __init__(self, answer):
        self.answer = answer
        self.pages = list(answer[1:]) if isinstance(answer, tuple) else []
        self.delay = answer[0] if isinstance(answer, tuple) else 0.01

    @property
    def has_more_pages(self):
        return bool(self.pages)

    def start_fetching_next_page(self):
        threading.Timer(0.01, self.callback, [self.pages.pop(0)]).start()

    def add_callbacks(self, callback, errback):
        self.callback = callback
        if isinstance(self.answer, Exception):
            threading.Timer(self.delay, errback, [self.answer]).start()
        else:
            threading.Timer(self.delay, callback, [self.pages.pop(0)]).start()


def timeout() -> WriteTimeout:
    return WriteTimeout("timed out", write_type=0)


def test_rows_of_every_page_and_statements_sent_together_come_back_in_their_order():
    session = ScriptedSession()
    slow = ("slow", [(0.2, [{"n": 1}], [{"n": 2}])])
    fast = ("fast", [(0.01, [{"n": 3}])])

    def steps():
        paged = yield Query(("paged", [(0.01, [{"n": 1}, {"n": 2}], [{"n": 3}], [])]))
        together = yield Together((Query(slow), Query(fast)))
        return paged, together

    paged, together = run_steps(session, steps())

    assert [row["n"] for row in paged] == [1, 2, 3]
    assert [[row["n"] for row in rows] for rows in together] == [[1, 2], [3]]


def test_a_transient_error_is_retried_until_answered():
    session = ScriptedSession()
    flaky = ("flaky", [timeout(), timeout(), (0.01, [{"n": 1}])])

    def steps():
        return (yield Query(flaky))

    assert run_steps(session, steps()) == [{"n": 1}]
    assert session.sent == ["flaky"] * 3


def test_a_counter_increment_that_timed_out_is_not_sent_again():
    session = ScriptedSession()
    increment = ("increment", [timeout(), (0.01, [])])

    def steps():
        yield Query(increment, retried=False)

    with pytest.raises(WriteTimeout):
        run_steps(session, steps())
    assert session.sent == ["increment"]
