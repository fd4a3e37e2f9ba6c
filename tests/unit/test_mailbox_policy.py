"""The mailbox repair policy without Cassandra: which action a finding gets, what a dry run reports, how a merge
unites two ACLs (a store double stands for the tables)."""

import json

import pytest
from james_consistency.cassandra.cql import CassandraSettings
from james_consistency.engine.live import run_steps
from james_consistency.mailboxes import diagnosis as d
from james_consistency.mailboxes import policy as p
from james_consistency.mailboxes.options import DELETE, RECREATE, RECREATE_WHEN_REFERENCED
from james_consistency.mailboxes.store import PolicyOptions

PATH = ("#private", "bob@domain.tld", "INBOX")
OTHER = ("#private", "bob@domain.tld", "Renamed")


def options(write: bool, **chosen) -> PolicyOptions:
    return PolicyOptions(settings=CassandraSettings(), keyspace="james", generation="3.9", write=write, **chosen)


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


class OrphanPathStore:
    """An orphan path as the live tables hold it: PATH registers m1 (uidvalidity 42), m1 has no mailbox row;
    `referenced`: whether messageIdTable still holds a message of m1."""

    def __init__(self, referenced: bool):
        self.is_referenced = referenced
        self.written = []

    def path(self, path):
        return {"mailboxid": "m1", "written": 1, "uidvalidity": 42}
        yield

    def mailbox(self, mailbox_id):
        return None
        yield

    def referenced(self, mailbox_id):
        return self.is_referenced
        yield

    def create_mailbox(self, mailbox_id, path, uidvalidity):
        self.written.append(("mailbox row", mailbox_id, path, uidvalidity))
        return True
        yield

    def unregister(self, path, mailbox_id, uidvalidity=None):
        self.written.append(("path deleted", mailbox_id, path, uidvalidity))
        return True
        yield


class TwoPathsStore:
    """m1 registered under PATH and OTHER, both written at `written`; m1's mailbox row names `row_path`."""

    def __init__(self, written: dict, row_path: tuple):
        self.written, self.row_path = written, row_path
        self.moved, self.dropped = [], []

    def mailbox(self, mailbox_id):
        return {"path": self.row_path, "uidvalidity": 7}
        yield

    def path(self, path):
        return {"mailboxid": "m1", "written": self.written[path], "uidvalidity": 7}
        yield

    def move_mailbox_row(self, mailbox_id, old, new):
        self.moved.append((old, new))
        return True
        yield

    def unregister(self, path, mailbox_id, uidvalidity=None):
        self.dropped.append(path)
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


@pytest.mark.parametrize(
    ("policy", "messages", "referenced", "written"),
    [
        (RECREATE, 0, False, [("mailbox row", "m1", PATH, 42)]),
        (RECREATE_WHEN_REFERENCED, 0, True, [("mailbox row", "m1", PATH, 42)]),
        (RECREATE_WHEN_REFERENCED, 0, False, [("path deleted", "m1", PATH, 42)]),
        (DELETE, 3, True, [("path deleted", "m1", PATH, 42)]),
    ],
    ids=["recreated-even-unreferenced", "recreated-when-referenced", "deleted-when-unreferenced", "deleted-when-asked"],
)
def test_an_orphan_path_gets_its_mailbox_row_from_the_path_unless_the_policy_deletes_it(
    policy, messages, referenced, written
):
    store = OrphanPathStore(referenced)

    outcome = act(store, {**finding(d.ORPHAN_PATH), "messages": messages}, options(True, orphan_paths=policy))

    assert store.written == written
    assert outcome["action"] == (p.MAILBOX_RECREATED if written[0][0] == "mailbox row" else p.PATH_DELETED)


def test_the_default_policy_recreates_and_a_check_only_says_so():
    store = OrphanPathStore(referenced=False)

    outcome = act(store, {**finding(d.ORPHAN_PATH), "messages": 0}, options(False))

    assert (outcome["action"], json.loads(outcome["detail"])["wouldDo"], store.written) == (
        p.MAILBOX_RECREATED,
        True,
        [],
    )


def two_paths_finding() -> dict:
    paths = [dict(zip(("namespace", "user", "name"), path, strict=True), written=1) for path in (PATH, OTHER)]
    return {**finding(d.ONE_ID_TWO_PATHS), "paths": paths}


@pytest.mark.parametrize(
    ("written", "row_path", "kept", "moved"),
    [
        ({PATH: 5, OTHER: 5}, PATH, PATH, []),
        ({PATH: 5, OTHER: 5}, OTHER, OTHER, []),
        ({PATH: 9, OTHER: 5}, OTHER, PATH, [(OTHER, PATH)]),
    ],
    ids=["tie-the-rows-path-wins", "tie-the-rows-path-wins-whatever-its-name", "the-later-path-wins"],
)
def test_one_id_under_two_paths_keeps_the_later_path_and_on_a_tie_the_one_its_row_names(written, row_path, kept, moved):
    store = TwoPathsStore(written, row_path)

    outcome = act(store, two_paths_finding(), options(True))

    assert outcome["action"] == p.KEPT_LATEST_PATH
    assert store.moved == moved
    assert store.dropped == [path for path in (PATH, OTHER) if path != kept]
