"""The mailbox repair policy without Cassandra: which action a finding gets, what a dry run reports, how a merge
unites two ACLs (a store double stands for the tables)."""

import json

import pytest
from james_consistency.cassandra.cql import CassandraSettings
from james_consistency.engine.live import run_steps
from james_consistency.mailboxes import diagnosis as d
from james_consistency.mailboxes import policy as p

PATH = ("#private", "bob@domain.tld", "INBOX")


def options(write: bool) -> p.PolicyOptions:
    return p.PolicyOptions(settings=CassandraSettings(), keyspace="james", generation="3.9", write=write)


def finding(kind: str, mailbox_id: str = "m1") -> dict:
    namespace, user, name = PATH
    return {
        "kind": kind,
        "mailboxId": mailbox_id,
        "mailboxPath": ":".join(PATH),
        "namespace": namespace,
        "user": user,
        "name": name,
    }


class UntouchedStore:
    """A store no action may read: any use of it fails the action."""

    def __getattr__(self, name):
        raise AssertionError(f"the store was used: {name}")


class OrphanMailboxStore:
    """An orphan mailbox as the live tables hold it: its row names PATH, which nobody registers."""

    def __init__(self):
        self.registered = []

    # Store methods are re-check steps: these answer at once, with no statement to send.
    def mailbox(self, mailbox_id):
        return {"path": PATH, "uidvalidity": 7}
        yield

    def path(self, path):
        return None
        yield

    def register(self, path, mailbox_id, uidvalidity):
        self.registered.append((path, mailbox_id, uidvalidity))
        return True
        yield


def act(store, finding, options):
    """The policy's action run to its end (a store that sends no statement needs no session)."""
    return run_steps(None, p.act(store, finding, options))


def test_every_fixable_kind_and_the_merge_have_an_action_a_conflict_is_reported_without_reading_anything():
    assert set(p.ACTIONS) == {*d.FIXABLE, d.TWO_IDS_ONE_PATH}

    outcome = act(UntouchedStore(), finding(d.PATH_POINTS_TO_ANOTHER_ID), options(write=True))

    assert (outcome["kind"], outcome["action"], outcome["error"]) == (d.PATH_POINTS_TO_ANOTHER_ID, p.REPORTED, None)


@pytest.mark.parametrize(
    ("write", "action", "detail", "registered"),
    [
        (False, p.PATH_REGISTERED, {"wouldDo": True}, []),
        (True, p.PATH_REGISTERED, {}, [(PATH, "m1", 7)]),
    ],
    ids=["a-check-says-what-it-would-do", "a-repair-registers-the-path"],
)
def test_an_orphan_mailbox_is_registered_at_its_path_only_by_a_repair(write, action, detail, registered):
    store = OrphanMailboxStore()

    outcome = act(store, finding(d.ORPHAN_MAILBOX), options(write))

    assert (outcome["action"], json.loads(outcome["detail"]), store.registered) == (action, detail, registered)


def test_an_action_that_fails_is_an_outcome_naming_the_error_not_a_failed_task():
    outcome = act(UntouchedStore(), finding(d.ORPHAN_MAILBOX), options(write=True))

    assert outcome["action"] == p.FAILED
    assert outcome["error"] == "AssertionError: the store was used: mailbox"


@pytest.mark.parametrize(
    ("winner", "losers", "merged"),
    [
        ({"bob": "lr"}, [{"bob": "wi", "alice": "rl"}], {"bob": "ilrw", "alice": "lr"}),
        ({"bob": "lr"}, [{}, {"alice": "r"}, {"alice": "l"}], {"bob": "lr", "alice": "lr"}),
        ({}, [], {}),
    ],
    ids=["rights-of-one-entry-united-in-james-order", "several-losers", "nothing-to-unite"],
)
def test_a_merge_gives_the_winner_every_right_a_loser_granted(winner, losers, merged):
    assert p.merged_acl(winner, losers) == merged
