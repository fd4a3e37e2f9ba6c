"""ACL projections (UserMailboxACL, aclv2) repaired from their truth (eventStore, or the 3.5 `acl` JSON).

The expected projections are computed here from the truth with plain CQL and json, not with the project's code.
"""

import json

import pytest
from james_consistency.engine.run import RunOptions, execute
from james_consistency.faults import inject
from james_consistency.seed import seed_platform

ORDER = "aeiklprstwx"


def truth_acls(cql, keyspace, generation) -> dict[str, dict | None]:
    """mailbox id -> entries, or None when the truth cannot be read."""
    acls = {}
    if generation == "3.9":
        last = {}
        for row in cql.execute(f"SELECT aggregateid, eventid, event FROM {keyspace}.eventstore"):
            if row.aggregateid not in last or row.eventid > last[row.aggregateid][0]:
                last[row.aggregateid] = (row.eventid, row.event)
        for mailbox, (_, event) in last.items():
            try:
                document = json.loads(event)
                acls[mailbox] = document["aclDiff"]["newAcl"]["entries"] if document["type"] == "acl-updated" else None
            except (ValueError, KeyError):
                acls[mailbox] = None
    else:
        for row in cql.execute(f"SELECT id, acl FROM {keyspace}.acl"):
            try:
                acls[str(row.id)] = json.loads(row.acl)["entries"]
            except (ValueError, KeyError):
                acls[str(row.id)] = None
    return acls


def user_acl_rows(cql, keyspace) -> dict:
    return {(r.username, str(r.mailboxid)): r.rights for r in cql.execute(f"SELECT * FROM {keyspace}.usermailboxacl")}


def expected_user_acl(acls) -> dict:
    return {
        (key, mailbox): "".join(letter for letter in ORDER if letter in rights)
        for mailbox, entries in acls.items()
        if entries
        for key, rights in entries.items()
        if not key.startswith(("-", "$")) and key not in ("owner", "anyone", "authenticated")
    }


@pytest.mark.parametrize("generation", ["3.9", "3.5"])
def test_user_mailbox_acl_is_repaired_and_unreadable_truth_is_left_alone(
    cql, cassandra_settings, spark, new_keyspace, tmp_path, generation
):
    keyspace = new_keyspace("acl")
    seed_platform(
        cassandra_settings,
        keyspace=keyspace,
        users=6,
        mailboxes_per_user=5,
        messages_per_mailbox=2,
        generation=generation,
        spark=spark,
    )
    for kind in ("acl-user-missing", "acl-user-extra", "acl-user-wrong-rights"):
        inject(cassandra_settings, keyspace=keyspace, kind=kind, rate=0.2, manifest_path=str(tmp_path / kind))
    malformed_kind = "acl-event-unknown-type" if generation == "3.9" else "acl-json-malformed"
    malformed = inject(
        cassandra_settings, keyspace=keyspace, kind=malformed_kind, rate=0.3, manifest_path=str(tmp_path / "bad")
    )
    unreadable = {row["mailboxId"] for row in malformed["rows"]}
    acls = truth_acls(cql, keyspace, generation)
    assert {mailbox for mailbox, entries in acls.items() if entries is None} == unreadable
    untouched_before = {key: v for key, v in user_acl_rows(cql, keyspace).items() if key[1] in unreadable}

    report = execute(spark, cassandra_settings, RunOptions("acl", keyspace, mode="repair", allow_destructive=True))

    assert report["status"] == "PARTIAL", "unreadable ACLs are errors, not empty ACLs"
    assert report["unreadableTruth"] == len(unreadable)
    assert {error["mailboxId"] for error in report["errors"]} == unreadable
    after = user_acl_rows(cql, keyspace)
    assert {key: v for key, v in after.items() if key[1] in unreadable} == untouched_before
    assert {key: v for key, v in after.items() if key[1] not in unreadable} == expected_user_acl(acls)
    assert report["addedUserMailboxACLEntries"] + report["updatedUserMailboxACLEntries"] > 0
    assert report["removedUserMailboxACLEntries"] > 0, "the intruder's rows are gone"

    again = execute(spark, cassandra_settings, RunOptions("acl", keyspace, mode="repair"))
    assert sum(again["inconsistencies"].values()) == 0


def test_aclv2_is_repaired_from_the_event_store(cql, cassandra_settings, spark, new_keyspace, tmp_path):
    keyspace = new_keyspace("aclv2")
    seed_platform(
        cassandra_settings, keyspace=keyspace, users=6, mailboxes_per_user=5, messages_per_mailbox=2, spark=spark
    )
    for kind in ("aclv2-missing", "aclv2-wrong"):
        inject(cassandra_settings, keyspace=keyspace, kind=kind, rate=0.3, manifest_path=str(tmp_path / kind))
    before = list(cql.execute(f"SELECT * FROM {keyspace}.aclv2"))

    dry = execute(spark, cassandra_settings, RunOptions("aclv2", keyspace, mode="check"))
    assert list(cql.execute(f"SELECT * FROM {keyspace}.aclv2")) == before
    report = execute(spark, cassandra_settings, RunOptions("aclv2", keyspace, mode="repair", allow_destructive=True))

    expected = {
        (mailbox, key): set(rights)
        for mailbox, entries in truth_acls(cql, keyspace, "3.9").items()
        for key, rights in (entries or {}).items()
    }
    actual = {(str(r.id), r.key): set(r.rights) for r in cql.execute(f"SELECT * FROM {keyspace}.aclv2")}
    assert actual == expected
    assert report["status"] == "COMPLETED"
    assert dry["inconsistencies"]["missing"] == report["addedAclv2Entries"] > 0
    assert dry["inconsistencies"]["outdated"] == report["updatedAclv2Entries"] > 0


def test_aclv2_on_a_35_keyspace_is_not_applicable(cql, cassandra_settings, new_keyspace, capsys):
    """3.5 keeps ACLs in `acl` JSON: nothing to repair, said in one line, exit 0 (a DAG run does not fail)."""
    from james_consistency.cli import main
    from james_consistency.schema import create_schema

    keyspace = new_keyspace("old")
    create_schema(cql, keyspace, "3.5")

    code = main(["repair", "aclv2", "--keyspace", keyspace, "--port", str(cassandra_settings.port)])

    assert code == 0
    assert "NOT_APPLICABLE; aclv2 exists only in the James 3.9 schema" in capsys.readouterr().out
