"""A lightweight transaction of an undo that times out has an unknown outcome: the undo settles it by a read at SERIAL
instead of failing the image (and, for a counter's claim, instead of losing the delta a second undo would skip)."""

import json
import threading
import uuid
from types import SimpleNamespace

from cassandra import WriteTimeout
from james_consistency.cassandra.cql import CassandraSettings
from james_consistency.engine.apply import ApplyContext, Imaging
from james_consistency.engine.before_images import COUNTER, LWT
from james_consistency.engine.live import run_steps
from james_consistency.report.run_report import NEWER_KEPT, RESTORED
from james_consistency.undo.policy import Undoer

MAILBOX_ID = uuid.uuid4()
PATH_KEY = {"namespace": "#private", "user": "bob", "mailboxname": "INBOX"}
PATH_ROW = {**PATH_KEY, "mailboxid": str(MAILBOX_ID)}
COUNTS_KEY = {"mailboxid": str(MAILBOX_ID)}


def table(columns: dict[str, str], partition_key: list[str], clustering_key: list[str] = ()):
    return SimpleNamespace(
        columns={name: SimpleNamespace(cql_type=cql_type) for name, cql_type in columns.items()},
        partition_key=[SimpleNamespace(name=name) for name in partition_key],
        clustering_key=[SimpleNamespace(name=name) for name in clustering_key],
    )


class ScriptedCassandra:
    """Stands for the driver session: each statement, known by its first words, answers with the next of its scripted
    answers (rows, or an error), from another thread as the driver's event loop does."""

    def __init__(self, script: dict[str, list]):
        self.script = script
        self.sent: list[str] = []
        tables = {
            "mailboxpathv2": table(
                {"namespace": "text", "user": "text", "mailboxname": "text", "mailboxid": "timeuuid"},
                ["namespace", "user"],
                ["mailboxname"],
            ),
            "mailboxcounters": table({"mailboxid": "timeuuid", "count": "counter", "unseen": "counter"}, ["mailboxid"]),
        }
        self.cluster = SimpleNamespace(metadata=SimpleNamespace(keyspaces={"james": SimpleNamespace(tables=tables)}))

    def prepare(self, cql: str):
        return SimpleNamespace(cql=cql, consistency_level=None)

    def execute_async(self, statement, values):
        name = next(name for name in self.script if statement.cql.startswith(name))
        self.sent.append(name)
        answer = self.script[name].pop(0)
        return ScriptedAnswer(answer)


class ScriptedAnswer:
    has_more_pages = False

    def __init__(self, answer):
        self.answer = answer

    def add_callbacks(self, callback, errback):
        if isinstance(self.answer, Exception):
            threading.Timer(0.01, errback, [self.answer]).start()
        else:
            threading.Timer(0.01, callback, [self.answer]).start()


def cas_timeout() -> WriteTimeout:
    return WriteTimeout("CAS operation timed out", write_type=5)


def undo(session, image: dict):
    context = ApplyContext(
        CassandraSettings(host="127.0.0.1", port=9042), "james", imaging=Imaging("undo-run", "undo", 3600)
    )
    action, _, _ = run_steps(session, Undoer(session, context).steps(image))
    return action


def image(table_name: str, rule: str, action: str, key: dict, before, written) -> dict:
    return {
        "keyspace_name": "james",
        "table_name": table_name,
        "rule": rule,
        "action": action,
        "key": json.dumps(key),
        "before": json.dumps(before) if before is not None else None,
        "written": json.dumps(written) if written is not None else None,
        "run_id": "repair-run",
        "bucket": 0,
        "image_id": str(uuid.uuid4()),
        "write_timestamp": 1,
    }


PATH_REGISTERED = image("mailboxpathv2", LWT, "inserted", PATH_KEY, None, PATH_ROW)


def test_a_reversal_that_timed_out_but_applied_is_restored_and_not_sent_again():
    session = ScriptedCassandra(
        {
            "SELECT": [[PATH_ROW], []],  # before the reversal: the repair's row; after its timeout: gone
            "DELETE": [cas_timeout()],
        }
    )

    assert undo(session, PATH_REGISTERED) == RESTORED
    assert session.sent == ["SELECT", "DELETE", "SELECT"]


def test_a_reversal_that_timed_out_without_applying_is_sent_again():
    session = ScriptedCassandra(
        {"SELECT": [[PATH_ROW], [PATH_ROW]], "DELETE": [cas_timeout(), [{"[applied]": True}]]},
    )

    assert undo(session, PATH_REGISTERED) == RESTORED
    assert session.sent == ["SELECT", "DELETE", "SELECT", "DELETE"]


def test_a_row_james_changed_while_the_reversal_timed_out_is_kept():
    moved = {**PATH_ROW, "mailboxid": str(uuid.uuid4())}
    session = ScriptedCassandra({"SELECT": [[PATH_ROW], [moved]], "DELETE": [cas_timeout()]})

    assert undo(session, PATH_REGISTERED) == NEWER_KEPT
    assert session.sent == ["SELECT", "DELETE", "SELECT"]


def test_a_counter_claim_that_timed_out_but_applied_still_subtracts_the_delta():
    counted = image(
        "mailboxcounters", COUNTER, "rewritten", COUNTS_KEY, {**COUNTS_KEY, "count": 3}, {**COUNTS_KEY, "count": 5}
    )
    session = ScriptedCassandra(
        {
            "SELECT run_id": [[{"run_id": "repair-run"}]],
            "UPDATE james_consistency": [cas_timeout()],
            "SELECT undone_by": [[{"undone_by": "undo-run"}]],  # the claim was applied: it is this undo's
            "UPDATE james.mailboxcounters": [[]],
        }
    )

    assert undo(session, counted) == RESTORED
    assert session.sent == [
        "SELECT run_id",
        "UPDATE james_consistency",
        "SELECT undone_by",
        "UPDATE james.mailboxcounters",
    ]
