"""The loop that runs re-checks on the driver's asynchronous API: rows of every page, answers of statements sent
together in their order, transient errors retried, a counter increment never sent twice, the writes of re-checks
waiting at once sent in shared batches."""

import threading

import pytest
from cassandra import InvalidRequest, WriteTimeout
from james_consistency.engine.live import BATCH_STATEMENTS, Query, StepLoop, Together, Writes, run_steps


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


class Batches:
    """Stands for the unlogged batch: records the statements of each batch built; each send gets the next answer."""

    def __init__(self, answers):
        self.built: list[list[str]] = []
        self.answers = answers

    def __call__(self, writes):
        self.built.append([name for (name, _), _ in writes])
        return ("batch", self.answers)


def run_writes(loop: StepLoop, names: list[str]) -> dict:
    """Re-checks that each write an image and a row, started together; what each ended with."""
    ended = {}

    def steps(name):
        yield Writes(((("image-" + name, []), [name]), (("row-" + name, []), [name])))
        return "written"

    for name in names:
        loop.start(steps(name), lambda answer, error, name=name: ended.update({name: answer or repr(error)}))
    while loop.running:
        loop.run_once()
    return ended


def test_the_writes_of_re_checks_waiting_at_once_go_in_one_batch_sent_again_whole_after_a_timeout():
    session, batches = ScriptedSession(), Batches([timeout(), (0.01, [])])

    ended = run_writes(StepLoop(session, batch=batches), ["a", "b"])

    assert ended == {"a": "written", "b": "written"}
    assert session.sent == ["batch", "batch"]
    assert batches.built == [["image-a", "row-a", "image-b", "row-b"]] * 2


def test_a_batch_holds_at_most_its_share_of_statements_and_its_failure_is_each_of_its_re_checks_own():
    session = ScriptedSession()
    batches = Batches([(0.01, []), InvalidRequest("Batch too large")])
    names = [str(number) for number in range(BATCH_STATEMENTS // 2 + 1)]

    ended = run_writes(StepLoop(session, batch=batches), names)

    assert [len(built) for built in batches.built] == [BATCH_STATEMENTS, 2]
    assert {name: ended[name] for name in names[:-1]} == dict.fromkeys(names[:-1], "written")
    assert "Batch too large" in ended[names[-1]]


def test_a_refused_batch_is_sent_again_re_check_by_re_check_and_fails_only_the_refused_one():
    session = ScriptedSession()
    batches = Batches([InvalidRequest("Invalid UTF-8"), (0.01, []), InvalidRequest("Invalid UTF-8")])

    ended = run_writes(StepLoop(session, batch=batches), ["a", "b"])

    assert batches.built == [["image-a", "row-a", "image-b", "row-b"], ["image-a", "row-a"], ["image-b", "row-b"]]
    assert ended["a"] == "written"
    assert "Invalid UTF-8" in ended["b"]
