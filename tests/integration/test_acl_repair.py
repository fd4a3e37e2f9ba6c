"""ACL projections (UserMailboxACL, aclv2) repaired from their truth (eventStore, or the 3.5 `acl` JSON).

The expected projections are computed here from the truth with plain CQL and json, not with the project's code.
"""

import json
import uuid

import pytest
from james_consistency.engine.run import RunOptions
from james_consistency.jobs.targets import run_target
from james_consistency.projections.acl import is_mailbox_acl_aggregate
from james_consistency_kit.faults import inject
from support.james_platform import ACL_SIZES, james_platform

ORDER = "aeiklprstwx"


def truth_acls(cql, keyspace, generation) -> dict[str, dict | None]:
    """mailbox id -> entries, or None when the truth cannot be read."""
    acls = {}
    if generation == "3.9":
        last = {}
        for row in cql.execute(f"SELECT aggregateid, eventid, event FROM {keyspace}.eventstore"):
            if not is_mailbox_acl_aggregate(row.aggregateid):
                continue
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


def break_where_the_truth_is_readable(cassandra_settings, keyspace, kind, unreadable, tmp_path) -> None:
    """Inject `kind` again with the next seed until it broke a row of a mailbox whose truth can be read: on a few
    mailboxes a draw can land on unreadable ones only, which the repair rightly leaves alone."""
    for seed in range(7, 27):
        manifest = str(tmp_path / f"{kind}-{seed}")
        broken = inject(
            cassandra_settings, keyspace=keyspace, kind=kind, rate=0.2, random_seed=seed, manifest_path=manifest
        )
        if any(row["mailboxId"] not in unreadable for row in broken["rows"]):
            return
    pytest.fail(f"{kind} broke no row of a readable mailbox in 20 draws")


@pytest.mark.parametrize("generation", ["3.9", "3.5"])
def test_user_mailbox_acl_is_repaired_and_unreadable_truth_is_left_alone(
    cql, cassandra_settings, spark, new_keyspace, tmp_path, generation
):
    keyspace = new_keyspace("acl")
    james_platform(cql, cassandra_settings, keyspace, generation, **ACL_SIZES)
    malformed_kind = "acl-event-unknown-type" if generation == "3.9" else "acl-json-malformed"
    malformed = inject(
        cassandra_settings, keyspace=keyspace, kind=malformed_kind, rate=0.3, manifest_path=str(tmp_path / "bad")
    )
    unreadable = {row["mailboxId"] for row in malformed["rows"]}
    # After the unreadable truth: each kind breaks rows where the truth can be read too, so the repair has some to fix.
    for kind in ("acl-user-missing", "acl-user-extra", "acl-user-wrong-rights"):
        break_where_the_truth_is_readable(cassandra_settings, keyspace, kind, unreadable, tmp_path)
    acls = truth_acls(cql, keyspace, generation)
    assert {mailbox for mailbox, entries in acls.items() if entries is None} == unreadable
    untouched_before = {key: v for key, v in user_acl_rows(cql, keyspace).items() if key[1] in unreadable}

    report = run_target(spark, cassandra_settings, RunOptions("acl", keyspace, mode="repair", allow_destructive=True))

    assert report["status"] == "PARTIAL", "unreadable ACLs are errors, not empty ACLs"
    assert report["unreadableTruth"] == len(unreadable)
    assert {error["mailboxId"] for error in report["errors"]} == unreadable
    after = user_acl_rows(cql, keyspace)
    assert {key: v for key, v in after.items() if key[1] in unreadable} == untouched_before
    assert {key: v for key, v in after.items() if key[1] not in unreadable} == expected_user_acl(acls)
    assert report["addedUserMailboxACLEntries"] + report["updatedUserMailboxACLEntries"] > 0
    assert report["removedUserMailboxACLEntries"] > 0, "the intruder's rows are gone"

    again = run_target(spark, cassandra_settings, RunOptions("acl", keyspace, mode="repair"))
    assert sum(again["inconsistencies"].values()) == 0


def test_aclv2_is_repaired_from_the_event_store(cql, cassandra_settings, spark, new_keyspace, tmp_path):
    keyspace = new_keyspace("aclv2")
    james_platform(cql, cassandra_settings, keyspace, "3.9", **ACL_SIZES)
    for kind in ("aclv2-missing", "aclv2-wrong"):
        inject(cassandra_settings, keyspace=keyspace, kind=kind, rate=0.3, manifest_path=str(tmp_path / kind))
    before = list(cql.execute(f"SELECT * FROM {keyspace}.aclv2"))

    dry = run_target(spark, cassandra_settings, RunOptions("aclv2", keyspace, mode="check"))
    assert list(cql.execute(f"SELECT * FROM {keyspace}.aclv2")) == before
    report = run_target(spark, cassandra_settings, RunOptions("aclv2", keyspace, mode="repair", allow_destructive=True))

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
    from james_consistency.cassandra.schema import create_schema
    from james_consistency_kit.cli import main

    keyspace = new_keyspace("old")
    create_schema(cql, keyspace, "3.5")

    code = main(["repair", "aclv2", "--keyspace", keyspace, "--port", str(cassandra_settings.port)])

    assert code == 0
    assert "NOT_APPLICABLE; aclv2 exists only in the James 3.9 schema" in capsys.readouterr().out


# ---- rows written exactly as James writes them ------------------------------------------------------------------

# EventStoreDao.prepareInsert (event-sourcing/event-store-cassandra, James 3.8.1): every aggregate's events.
JAMES_APPEND_EVENT = "INSERT INTO {ks}.eventStore (aggregateId, eventId, event) VALUES (%s, %s, %s) IF NOT EXISTS"
# EventStoreDao.prepareInsertSnapshot: the static `snapshot` column of aggregates whose events are snapshots.
JAMES_SET_SNAPSHOT = "UPDATE {ks}.eventStore SET snapshot = %s WHERE aggregateId = %s"
# CassandraACLDAOV2 (James 3.8.1): prepareInsertRights / prepareRemoveRights / prepareReplaceRights.
JAMES_ACLV2_ADD = "UPDATE {ks}.aclv2 SET rights = rights + %s WHERE id = %s AND key = %s"
JAMES_ACLV2_REMOVE = "UPDATE {ks}.aclv2 SET rights = rights - %s WHERE id = %s AND key = %s"
# CassandraUserMailboxRightsDAO.prepareInsert.
JAMES_USER_RIGHTS_INSERT = "INSERT INTO {ks}.UserMailboxACL (userName, mailboxId, rights) VALUES (%s, %s, %s)"
# CassandraACLMapper.prepareConditionalInsert (James 3.5.0): the legacy `acl` JSON.
JAMES_35_ACL_INSERT = "INSERT INTO {ks}.acl (id, acl, version) VALUES (%s, %s, 0) IF NOT EXISTS"


def acl_updated_event(mailbox_id: str, event_id: int, old: dict, new: dict) -> str:
    """ACLUpdatedDTO as James 3.8.1 serializes it (ACLModule type `acl-updated`, ACLDiffDTO, ACLDTO), e.g.
    ACLUpdatedDTOTest's JSON."""
    return json.dumps(
        {
            "eventId": event_id,
            "aggregateKey": mailbox_id,
            "type": "acl-updated",
            "aclDiff": {"oldAcl": {"entries": old}, "newAcl": {"entries": new}},
        },
        separators=(",", ":"),
    )


TASK_ID = "2c7f4081-aa30-11e9-bf6c-2d3b9e84aafd"
# The other event-sourced aggregates of a James 3.8.1 server, keyed and serialized as James does:
# (aggregateId, [events], snapshot eventId or None).
OTHER_AGGREGATES = [
    # RegisterStorageStrategyCommandHandler: written at every server start; StorageStrategyChangedDTO.
    (
        "BlobStoreStorageStrategyConfiguration",
        [
            '{"eventId":0,"aggregateKey":"BlobStoreStorageStrategyConfiguration","type":"storage-strategy-changed",'
            '"storageStrategy":"DEDUPLICATION"}'
        ],
        None,
    ),
    # TaskAggregateId "Task/<taskId>"; TasksSerializationModule's DTOs (JSON of TaskEventsSerializationTest).
    (
        f"Task/{TASK_ID}",
        [
            '{"task":{"type":"completed-task"},"type":"task-manager-created",'
            f'"aggregate":"{TASK_ID}","event":0,"hostname":"foo"}}',
            f'{{"aggregate":"{TASK_ID}","event":1,"type":"task-manager-started","hostname":"foo"}}',
            f'{{"result":"COMPLETED","aggregate":"{TASK_ID}","event":2,"type":"task-manager-completed"}}',
        ],
        None,
    ),
    # FilteringAggregateId "FilteringRule/<user>"; FilteringRuleSetDefinedDTO, a snapshot (RuleSetDefined).
    (
        "FilteringRule/bob@domain.tld",
        ['{"type":"filtering-rule-set-defined","eventId":0,"aggregateId":"FilteringRule/bob@domain.tld","rules":[]}'],
        0,
    ),
    # DLPAggregateId "DLPRule/<domain>"; DLPConfigurationItemAddedDTO.
    (
        "DLPRule/domain.tld",
        ['{"type":"dlp-configuration-store","eventId":0,"aggregateId":"DLPRule/domain.tld","configurationItems":[]}'],
        None,
    ),
    # UserQuotaThresholds.Id "QuotaThreasholdEvents/<name>/<user>" (sic); QuotaThresholdChangedEventDTO.
    (
        "QuotaThreasholdEvents/default/bob@domain.tld",
        [
            '{"type":"quota-threshold-change","eventId":0,"aggregateId":"QuotaThreasholdEvents/default/bob@domain.tld",'
            '"sizeQuota":{"used":23,"limit":33},"countQuota":{"used":12,"limit":45},'
            '"sizeEvolution":{"change":"NoChange"},"countEvolution":{"change":"NoChange"}}'
        ],
        None,
    ),
    # EventsourcingConfigurationManagement "CassandraMailQueueViewConfiguration"; ConfigurationChangedDTO.
    (
        "CassandraMailQueueViewConfiguration",
        [
            '{"eventId":0,"aggregateKey":"CassandraMailQueueViewConfiguration",'
            '"type":"cassandra-mail-queue-view-configuration","bucketCount":1,"updateBrowseStartPace":1000,'
            '"sliceWindow":3600.000000000}'
        ],
        None,
    ),
]


def james_appends(cql, keyspace, aggregate_id: str, events: list[str], snapshot: int | None = None) -> None:
    for event_id, event in enumerate(events):
        applied = cql.execute(JAMES_APPEND_EVENT.format(ks=keyspace), (aggregate_id, event_id, event)).one()
        assert applied[0], f"{aggregate_id} {event_id} was already there"
    if snapshot is not None:
        cql.execute(JAMES_SET_SNAPSHOT.format(ks=keyspace), (snapshot, aggregate_id))


def acl_mailboxes(cql, keyspace) -> list:
    """The seeded mailboxes that have an ACL aggregate, in a stable order."""
    aggregates = {row.aggregateid for row in cql.execute(f"SELECT aggregateid FROM {keyspace}.eventstore")}
    return sorted(aggregates & {str(row.id) for row in cql.execute(f"SELECT id FROM {keyspace}.mailbox")})


@pytest.mark.end_to_end
def test_other_aggregates_of_the_event_store_are_not_acls(cql, cassandra_settings, spark, new_keyspace):
    """eventStore holds every event-sourced aggregate of James: only the mailbox ACL ones are ACL truth. Before the
    fix, each of these was an unreadable ACL and every ACL run ended PARTIAL."""
    keyspace = new_keyspace("aggregates")
    james_platform(cql, cassandra_settings, keyspace, "3.9")
    acl_events = sum(
        1
        for row in cql.execute(f"SELECT aggregateid FROM {keyspace}.eventstore")
        if is_mailbox_acl_aggregate(row.aggregateid)
    )
    for aggregate_id, events, snapshot in OTHER_AGGREGATES:
        james_appends(cql, keyspace, aggregate_id, events, snapshot)

    for target in ("acl", "aclv2"):
        report = run_target(spark, cassandra_settings, RunOptions(target, keyspace, mode="repair"))
        assert report["status"] == "COMPLETED", report["errors"]
        assert report["unreadableTruth"] == 0 and report["errors"] == []
        assert report["processedMailboxAclEntries"] == acl_events
        assert sum(report["inconsistencies"].values()) == 0

    # A real mailbox ACL aggregate whose last event James cannot read is still reported, alone.
    broken = acl_mailboxes(cql, keyspace)[0]
    last = max(
        row.eventid
        for row in cql.execute(f"SELECT eventid FROM {keyspace}.eventstore WHERE aggregateid = %s", (broken,))
    )
    cql.execute(
        JAMES_APPEND_EVENT.format(ks=keyspace),
        (broken, last + 1, acl_updated_event(broken, last + 1, {}, {"bob@domain.tld": "lz"})),
    )
    report = run_target(spark, cassandra_settings, RunOptions("acl", keyspace, mode="repair"))
    assert report["status"] == "PARTIAL"
    assert [(error["mailboxId"], error["kind"]) for error in report["errors"]] == [(broken, "unreadable-truth")]


def test_an_aclv2_entry_the_repair_adds_goes_away_when_james_removes_its_rights(
    cql, cassandra_settings, spark, new_keyspace
):
    """James writes aclv2 only by UPDATE: its rows have no row marker and vanish when their rights are all removed.
    A row the repair INSERTed would survive James's removal as an entry with no rights (James's ACL read then lists
    the user with none)."""
    keyspace = new_keyspace("aclv2marker")
    james_platform(cql, cassandra_settings, keyspace, "3.9")
    mailbox = acl_mailboxes(cql, keyspace)[0]
    rights = {"e", "l", "r", "s"}
    event_id = 1 + max(
        row.eventid
        for row in cql.execute(f"SELECT eventid FROM {keyspace}.eventstore WHERE aggregateid = %s", (mailbox,))
    )
    current = truth_acls(cql, keyspace, "3.9")[mailbox]
    shared = {**current, "carol@domain.tld": "elrs"}
    # The share reached the event store, its aclv2 write was lost.
    cql.execute(
        JAMES_APPEND_EVENT.format(ks=keyspace),
        (mailbox, event_id, acl_updated_event(mailbox, event_id, current, shared)),
    )

    report = run_target(spark, cassandra_settings, RunOptions("aclv2", keyspace, mode="repair"))
    assert report["addedAclv2Entries"] == 1 and report["status"] == "COMPLETED"
    row = cql.execute(
        f"SELECT rights FROM {keyspace}.aclv2 WHERE id = %s AND key = %s", (uuid.UUID(mailbox), "carol@domain.tld")
    ).one()
    assert set(row.rights) == rights

    # James revokes the share: AclV2DAOSubscriber turns the REMOVE command into prepareRemoveRights with every letter.
    cql.execute(JAMES_ACLV2_REMOVE.format(ks=keyspace), (rights, uuid.UUID(mailbox), "carol@domain.tld"))

    left = list(
        cql.execute(
            f"SELECT key, rights FROM {keyspace}.aclv2 WHERE id = %s AND key = %s",
            (uuid.UUID(mailbox), "carol@domain.tld"),
        )
    )
    assert left == [], "the repaired entry outlived James's removal of its rights"


# MailboxACL.Rfc4314Rights reads `c` as `kx` and `d` as `etx`; any other letter, or an entry key without a name
# (EntryKey.deserialize of "", "-", "$", "-$"), fails the read of the whole ACL.
READABLE_OLD_LETTERS = {"bob@domain.tld": "cd", "$team": "lc", "-carol@domain.tld": "d"}
JAMES_READS_THEM_AS = {"bob@domain.tld": "ektx", "$team": "klx", "-carol@domain.tld": "etx"}
UNREADABLE_ACLS = [
    {"entries": {"bob@domain.tld": "lrz"}},
    {"entries": {"bob@domain.tld": "lr", "": "l"}},
    {"entries": {"bob@domain.tld": "lr", "-": "l"}},
    {"entries": {"bob@domain.tld": "lr", "$": "l"}},
    {"entries": {"bob@domain.tld": "lr", "-$": "l"}},
]
# 3.5's MailboxACLJsonConverter reads with a default ObjectMapper: a field MailboxACL does not have fails the read
# (and James 3.5 then uses an EMPTY ACL).
UNREADABLE_35_ACLS = [{"entries": {"bob@domain.tld": "lr"}, "version": 3}]
# CassandraACLMapper.prepareConditionalUpdate (James 3.5.0).
JAMES_35_ACL_UPDATE = "UPDATE {ks}.acl SET acl = %s, version = %s WHERE id = %s IF version = %s"


def james_sets_acl(cql, keyspace, generation, mailbox: str, document: dict) -> None:
    """The mailbox's ACL becomes `document` (ACLDTO / MailboxACL JSON), written with James's own statements."""
    mailbox_id = uuid.UUID(mailbox)
    if generation == "3.9":
        events = cql.execute(f"SELECT eventid FROM {keyspace}.eventstore WHERE aggregateid = %s", (mailbox,))
        event_id = 1 + max((row.eventid for row in events), default=-1)
        event = json.loads(acl_updated_event(mailbox, event_id, {}, {}))
        event["aclDiff"]["newAcl"] = document
        cql.execute(JAMES_APPEND_EVENT.format(ks=keyspace), (mailbox, event_id, json.dumps(event)))
        return
    row = cql.execute(f"SELECT version FROM {keyspace}.acl WHERE id = %s", (mailbox_id,)).one()
    if row is None:
        applied = cql.execute(JAMES_35_ACL_INSERT.format(ks=keyspace), (mailbox_id, json.dumps(document))).one()
    else:
        statement = JAMES_35_ACL_UPDATE.format(ks=keyspace)
        applied = cql.execute(statement, (json.dumps(document), row.version + 1, mailbox_id, row.version)).one()
    assert applied[0]


@pytest.mark.parametrize("generation", ["3.9", "3.5"])
def test_rights_and_keys_are_read_as_james_reads_them(cql, cassandra_settings, spark, new_keyspace, generation):
    """Readable ACLs holding `c`/`d` are projected with the rights they stand for; ACLs James cannot read are
    reported and their projection rows kept (before the fix: `c`/`d` were dropped or stored as letters, unknown
    letters ignored, nameless keys and 3.5 JSON with unknown fields read as if fine)."""
    keyspace = new_keyspace("letters")
    james_platform(cql, cassandra_settings, keyspace, generation)
    mailboxes = sorted(str(row.id) for row in cql.execute(f"SELECT id FROM {keyspace}.mailbox"))
    broken = UNREADABLE_ACLS + (UNREADABLE_35_ACLS if generation == "3.5" else [])
    readable, unreadable = mailboxes[0], dict(zip(mailboxes[1:], broken, strict=False))
    james_sets_acl(cql, keyspace, generation, readable, {"entries": READABLE_OLD_LETTERS})
    for mailbox, document in unreadable.items():
        james_sets_acl(cql, keyspace, generation, mailbox, document)
    targets = ("acl", "aclv2") if generation == "3.9" else ("acl",)
    for mailbox in [readable, *unreadable]:
        # Projection rows James derived from an earlier ACL: those of an unreadable ACL must stay as they are.
        cql.execute(JAMES_USER_RIGHTS_INSERT.format(ks=keyspace), ("victim@domain.tld", uuid.UUID(mailbox), "lr"))
        if generation == "3.9":
            cql.execute(JAMES_ACLV2_ADD.format(ks=keyspace), ({"l", "r"}, uuid.UUID(mailbox), "victim@domain.tld"))
    tied_before = {target: projection_rows(cql, keyspace, target, set(unreadable)) for target in targets}

    for target in targets:
        options = RunOptions(target, keyspace, mode="repair", allow_destructive=True)
        report = run_target(spark, cassandra_settings, options)
        assert report["status"] == "PARTIAL"
        assert {error["mailboxId"] for error in report["errors"]} == set(unreadable), report["errors"]
        assert projection_rows(cql, keyspace, target, set(unreadable)) == tied_before[target]

    assert projection_rows(cql, keyspace, "acl", {readable}) == {("bob@domain.tld", readable, "ektx")}
    if generation == "3.9":
        expected = {(readable, key, frozenset(rights)) for key, rights in JAMES_READS_THEM_AS.items()}
        assert projection_rows(cql, keyspace, "aclv2", {readable}) == expected


def projection_rows(cql, keyspace, target, mailboxes) -> set:
    if target == "acl":
        rows = cql.execute(f"SELECT username, mailboxid, rights FROM {keyspace}.usermailboxacl")
        return {(r.username, str(r.mailboxid), r.rights) for r in rows if str(r.mailboxid) in mailboxes}
    rows = cql.execute(f"SELECT id, key, rights FROM {keyspace}.aclv2")
    return {(str(r.id), r.key, frozenset(r.rights or ())) for r in rows if str(r.id) in mailboxes}
