"""James itself as the writer, the fault injector and the oracle: the harness jars (james/harness-<V>/) run James's own
code against the test node, and plain CQL checks what James really wrote.

- `james schema` 3.8.1 against the project's 3.9 schema, both read back from system_schema;
- `james seed`: the tables James wrote agree with each other (message tables, paths, ACL projections, eventStore);
- `james break --kind messageIdTable-insert` leaves exactly its manifest's rows missing, and James's own
  `solve messages` task adds them back, then finds nothing left.
"""

import json

import pytest
from james_consistency.cassandra.schema import create_schema
from james_consistency_kit import james_harness
from james_consistency_kit.cli import main

FLAGS = ("flaganswered", "flagdeleted", "flagdraft", "flagflagged", "flagrecent", "flagseen", "flaguser")
MESSAGE_COLUMNS = ("messageid", "mailboxid", "uid", "modseq", *FLAGS, "userflags")
# Tables the project repairs (or reads as their truth) in the 3.9 generation, compared column by column.
REPAIRED_TABLES_39 = (
    "imapuidtable",
    "messageidtable",
    "eventstore",
    "aclv2",
    "usermailboxacl",
    "messagedeleted",
    "firstunseen",
    "mailboxrecents",
    "applicableflag",
    "mailboxcounters",
    "mailbox",
    "mailboxpathv3",
)


def harness(version: str):
    """The version as a pytest parameter, skipped with the reason when its harness jar is not built."""
    reason = f"the James {version} harness is not built (make setup builds james/harness-{version})"
    return pytest.param(version, marks=pytest.mark.skipif(not james_harness.is_built(version), reason=reason))


VERSIONS = [harness("3.8.1"), harness("3.5.0")]


def table_shapes(cql, keyspace) -> dict:
    """{table: {column: (kind, position, type, clustering order)}} as Cassandra stores them."""
    shapes = {}
    query = (
        "SELECT table_name, column_name, kind, position, type, clustering_order FROM system_schema.columns "
        "WHERE keyspace_name = %s"
    )
    for row in cql.execute(query, (keyspace,)):
        column = (row.kind, row.position, row.type, row.clustering_order)
        shapes.setdefault(row.table_name, {})[row.column_name] = column
    return shapes


def user_types(cql, keyspace) -> dict:
    query = "SELECT type_name, field_names, field_types FROM system_schema.types WHERE keyspace_name = %s"
    rows = cql.execute(query, (keyspace,))
    return {row.type_name: list(zip(row.field_names, row.field_types, strict=True)) for row in rows}


def message_rows(cql, keyspace, table) -> set:
    columns = ", ".join(MESSAGE_COLUMNS)
    return {
        tuple(frozenset(v or ()) if name == "userflags" else v for name, v in zip(MESSAGE_COLUMNS, row, strict=True))
        for row in cql.execute(f"SELECT {columns} FROM {keyspace}.{table}")
    }


def seed(settings, version, keyspace) -> dict:
    arguments = ["--keyspace", keyspace, "--users", "2", "--mailboxes-per-user", "2", "--messages-per-mailbox", "3"]
    return james_harness.run(version, "seed", arguments, settings)


def test_james_381_tables_match_the_project_39_schema(cql, cassandra_settings, new_keyspace, capsys):
    if not james_harness.is_built("3.8.1"):
        pytest.skip("the James 3.8.1 harness is not built (make setup builds james/harness-3.8.1)")
    james_keyspace, project_keyspace = new_keyspace("j381"), new_keyspace("p39")

    assert main(["james", "schema", "--keyspace", james_keyspace, "--port", str(cassandra_settings.port)]) == 0
    printed = json.loads(capsys.readouterr().out)
    create_schema(cql, project_keyspace, "3.9")

    james, project = table_shapes(cql, james_keyspace), table_shapes(cql, project_keyspace)
    assert printed["james"] == "3.8.1" and sorted(printed["tables"]) == sorted(james)
    for table in REPAIRED_TABLES_39:
        assert james[table] == project[table], table
    assert user_types(cql, james_keyspace)["mailboxbase"] == user_types(cql, project_keyspace)["mailboxbase"]
    # Written down in the README: James 3.8.1 keeps quotas in the old tables (currentQuota and maxQuota...); the
    # quotaCurrentValue / quotaLimit tables of the project's 3.9 generation appeared after 3.8.1.
    assert "currentquota" in james and "quotacurrentvalue" not in james
    assert {"quotacurrentvalue", "quotalimit"} <= set(project)


@pytest.mark.end_to_end
@pytest.mark.parametrize("version", VERSIONS)
def test_james_seed_writes_tables_that_agree(cql, cassandra_settings, new_keyspace, version):
    keyspace = new_keyspace("jseed")

    result = seed(cassandra_settings, version, keyspace)

    assert result["james"] == version and result["users"] == 2 and result["mailboxes"] == 4
    truth = message_rows(cql, keyspace, "imapuidtable")
    assert truth and truth == message_rows(cql, keyspace, "messageidtable")
    assert len({(mailbox, uid) for _, mailbox, uid, *_ in truth}) == len(truth)

    tables = set(table_shapes(cql, keyspace))
    path_table = "mailboxpathv3" if "mailboxpathv3" in tables else "mailboxpathv2"
    paths = {
        (row.namespace, row.user, row.mailboxname): row.mailboxid
        for row in cql.execute(f"SELECT namespace, user, mailboxname, mailboxid FROM {keyspace}.{path_table}")
    }
    mailboxes = {
        (row.mailboxbase.namespace, row.mailboxbase.user, row.name): row.id
        for row in cql.execute(f"SELECT id, mailboxbase, name FROM {keyspace}.mailbox")
    }
    assert len(paths) == 4 and paths == mailboxes
    assert {("#private", "user1@domain.tld", "INBOX"), ("#private", "user1@domain.tld", "INBOX.sub1")} <= set(paths)
    assert {mailbox for _, mailbox, *_ in truth} <= set(paths.values())

    if version == "3.8.1":
        events = list(cql.execute(f"SELECT aggregateid, eventid, event FROM {keyspace}.eventstore"))
        assert any(row.aggregateid.startswith("FilteringRule/") for row in events), "no non-ACL aggregate"
        assert_acl_projections_follow_the_events(cql, keyspace, events)


def assert_acl_projections_follow_the_events(cql, keyspace, events):
    """aclv2 holds the last event's newAcl of every mailbox aggregate; UserMailboxACL its positive user entries."""
    latest = {}
    for row in events:
        event = json.loads(row.event)
        if event["type"] == "acl-updated" and row.eventid >= latest.get(row.aggregateid, (-1, None))[0]:
            latest[row.aggregateid] = (row.eventid, event["aclDiff"]["newAcl"]["entries"])
    assert latest, "no acl-updated event"
    aclv2 = {}
    for row in cql.execute(f"SELECT id, key, rights FROM {keyspace}.aclv2"):
        aclv2.setdefault(str(row.id), {})[row.key] = "".join(sorted(row.rights))
    expected_aclv2 = {
        mailbox: {key: "".join(sorted(rights)) for key, rights in acl.items()} for mailbox, (_, acl) in latest.items()
    }
    assert aclv2 == expected_aclv2
    assert any(key.startswith("$") for acl in aclv2.values() for key in acl), "no group entry"
    assert any(key.startswith("-") for acl in aclv2.values() for key in acl), "no negative entry"
    user_rights = {
        (row.username, str(row.mailboxid)): row.rights
        for row in cql.execute(f"SELECT username, mailboxid, rights FROM {keyspace}.usermailboxacl")
    }
    expected = {
        (key, mailbox): rights
        for mailbox, (_, acl) in latest.items()
        for key, rights in acl.items()
        if not key.startswith(("-", "$"))
    }
    assert user_rights and user_rights == expected


@pytest.mark.end_to_end
@pytest.mark.parametrize("version", VERSIONS)
def test_james_break_then_james_solve_messages(cql, cassandra_settings, new_keyspace, version, tmp_path):
    keyspace = new_keyspace("jbreak")
    seed(cassandra_settings, version, keyspace)
    manifest_file = tmp_path / "manifest.json"

    result = james_harness.run(
        version,
        "break",
        ["--keyspace", keyspace, "--kind", "messageIdTable-insert", "--rate", "0.5", "--manifest", str(manifest_file)],
        cassandra_settings,
    )

    manifest = json.loads(manifest_file.read_text())
    assert manifest["inconsistencies"] == result["inconsistencies"] and result["failed"] >= 1
    broken = {(entry["mailboxId"], entry["uid"], entry["messageId"]) for entry in manifest["inconsistencies"]}
    assert broken
    truth = {(str(m), u, str(i)) for i, m, u, *_ in message_rows(cql, keyspace, "imapuidtable")}
    projection = {(str(m), u, str(i)) for i, m, u, *_ in message_rows(cql, keyspace, "messageidtable")}
    assert truth - projection == broken
    assert projection <= truth

    if version == "3.5.0":
        # SolveMessageInconsistencies came with James 3.6.0: the harness refuses the target (exit 2).
        with pytest.raises(james_harness.OperatorError, match="messages"):
            james_harness.run(version, "solve", ["messages", "--keyspace", keyspace], cassandra_settings)
        return
    first = james_harness.run(version, "solve", ["messages", "--keyspace", keyspace], cassandra_settings)
    assert first["result"] == "COMPLETED"
    assert first["additionalInformation"]["addedMessageIdEntries"] == len(broken)
    assert message_rows(cql, keyspace, "messageidtable") == message_rows(cql, keyspace, "imapuidtable")

    second = james_harness.run(version, "solve", ["messages", "--keyspace", keyspace], cassandra_settings)
    assert second["additionalInformation"]["addedMessageIdEntries"] == 0
    assert second["additionalInformation"]["fixedInconsistencies"] == []


def test_wrong_input_is_one_line(cassandra_settings):
    if not james_harness.is_built("3.8.1"):
        pytest.skip("the James 3.8.1 harness is not built (make setup builds james/harness-3.8.1)")
    with pytest.raises(james_harness.OperatorError, match="unknown kind nope"):
        james_harness.run("3.8.1", "break", ["--keyspace", "k", "--kind", "nope", "--rate", "0.1"], cassandra_settings)


@pytest.mark.parametrize("version", VERSIONS)
def test_a_batch_answers_each_command_in_order_and_a_wrong_one_in_one_line(cassandra_settings, version):
    listed, (kind, *_) = james_harness.run_batch(
        version, [("break", ["--list"]), ("break", ["--list"])], cassandra_settings
    )
    assert listed == james_harness.run(version, "break", ["--list"], cassandra_settings)
    assert kind["kind"] and kind["target"]
    with pytest.raises(james_harness.OperatorError, match="nope"):
        james_harness.run_batch(
            version,
            [("break", ["--list"]), ("break", ["--keyspace", "k", "--kind", "nope", "--rate", "0.1"])],
            cassandra_settings,
        )
    with pytest.raises(ValueError, match="solve runs alone"):
        james_harness.run_batch(version, [("solve", ["messages", "--keyspace", "k"])], cassandra_settings)


@pytest.mark.end_to_end
def test_james_381_break_usermailboxacl_leaves_the_grant_in_the_events_only(cql, cassandra_settings, new_keyspace):
    if not james_harness.is_built("3.8.1"):
        pytest.skip("the James 3.8.1 harness is not built (make setup builds james/harness-3.8.1)")
    keyspace = new_keyspace("jacl")
    seed(cassandra_settings, "3.8.1", keyspace)

    result = james_harness.run(
        "3.8.1", "break", ["--keyspace", keyspace, "--kind", "UserMailboxACL", "--rate", "0.5"], cassandra_settings
    )

    broken = {(entry["user"], entry["mailboxId"]) for entry in result["inconsistencies"]}
    assert broken and result["failed"] == len(broken)
    latest = {}
    for row in cql.execute(f"SELECT aggregateid, eventid, event FROM {keyspace}.eventstore"):
        event = json.loads(row.event)
        if event["type"] == "acl-updated" and row.eventid >= latest.get(row.aggregateid, (-1, None))[0]:
            latest[row.aggregateid] = (row.eventid, event["aclDiff"]["newAcl"]["entries"])
    projected = {(row.username, str(row.mailboxid)) for row in cql.execute(f"SELECT * FROM {keyspace}.usermailboxacl")}
    aclv2 = {(row.key, str(row.id)) for row in cql.execute(f"SELECT id, key FROM {keyspace}.aclv2")}
    for user, mailbox in broken:
        assert latest[mailbox][1][user] == "lr"
        assert (user, mailbox) in aclv2
        assert (user, mailbox) not in projected
    # Every other grant of the run reached UserMailboxACL.
    guests = {(user, mailbox) for mailbox, (_, acl) in latest.items() for user in acl if user.startswith("guest")}
    assert guests - projected == broken
