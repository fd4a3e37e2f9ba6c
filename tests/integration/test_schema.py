"""The schema command creates James's tables exactly as the reference describes them, read back from system_schema.

The expectations are written out here from ../shared/reference/james-cassandra.md, not derived from schema.py.
"""

import pytest
from james_consistency_kit.cli import main

FLAGS = {
    f: "boolean"
    for f in ("flaganswered", "flagdeleted", "flagdraft", "flagflagged", "flagrecent", "flagseen", "flaguser")
}
METADATA_39 = {
    "threadid": "timeuuid",
    "modseq": "bigint",
    **FLAGS,
    "userflags": "set<text>",
    "internaldate": "timestamp",
    "save_date": "timestamp",
    "bodystartoctet": "int",
    "fullcontentoctets": "bigint",
    "headercontent": "text",
}
METADATA_35 = {"modseq": "bigint", **FLAGS, "userflags": "set<text>"}

# table -> (partition key, clustering [(column, order)], {column: type}, static columns)
SHARED = {
    "mailbox": (
        ["id"],
        [],
        {"id": "timeuuid", "mailboxbase": "frozen<mailboxbase>", "name": "text", "uidvalidity": "bigint"},
    ),
    "usermailboxacl": (
        ["username"],
        [("mailboxid", "asc")],
        {"username": "text", "mailboxid": "timeuuid", "rights": "text"},
    ),
    "applicableflag": (["mailboxid"], [], {"mailboxid": "timeuuid", "userflags": "set<text>"}),
    "messagedeleted": (["mailboxid"], [("uid", "asc")], {"mailboxid": "timeuuid", "uid": "bigint"}),
    "firstunseen": (["mailboxid"], [("uid", "asc")], {"mailboxid": "timeuuid", "uid": "bigint"}),
    "mailboxrecents": (
        ["mailboxid"],
        [("recent_mesage_uid", "asc")],
        {"mailboxid": "timeuuid", "recent_mesage_uid": "bigint"},
    ),
    "mailboxcounters": (["mailboxid"], [], {"mailboxid": "timeuuid", "count": "counter", "unseen": "counter"}),
    "messagecounter": (["mailboxid"], [], {"mailboxid": "timeuuid", "nextuid": "bigint"}),
    "modseq": (["mailboxid"], [], {"mailboxid": "timeuuid", "nextmodseq": "bigint"}),
}
EXPECTED_39 = {
    **SHARED,
    "imapuidtable": (
        ["messageid"],
        [("mailboxid", "asc"), ("uid", "asc")],
        {"messageid": "timeuuid", "mailboxid": "timeuuid", "uid": "bigint", **METADATA_39},
    ),
    "messageidtable": (
        ["mailboxid"],
        [("uid", "asc")],
        {"mailboxid": "timeuuid", "uid": "bigint", "messageid": "timeuuid", **METADATA_39},
    ),
    "mailboxpathv3": (
        ["namespace", "user"],
        [("mailboxname", "asc")],
        {"namespace": "text", "user": "text", "mailboxname": "text", "mailboxid": "timeuuid", "uidvalidity": "bigint"},
    ),
    "eventstore": (
        ["aggregateid"],
        [("eventid", "asc")],
        {"aggregateid": "text", "eventid": "int", "snapshot": "int", "event": "text"},
    ),
    "aclv2": (["id"], [("key", "asc")], {"id": "timeuuid", "key": "text", "rights": "set<text>"}),
    "quotacurrentvalue": (
        ["identifier"],
        [("quotacomponent", "asc"), ("quotatype", "asc")],
        {"identifier": "text", "quotacomponent": "text", "quotatype": "text", "currentvalue": "counter"},
    ),
    "quotalimit": (
        ["quotascope", "identifier"],
        [("quotacomponent", "asc"), ("quotatype", "asc")],
        {
            "quotascope": "text",
            "identifier": "text",
            "quotacomponent": "text",
            "quotatype": "text",
            "quotalimit": "bigint",
        },
    ),
}
EXPECTED_35 = {
    **SHARED,
    "imapuidtable": (
        ["messageid"],
        [("mailboxid", "asc"), ("uid", "asc")],
        {"messageid": "timeuuid", "mailboxid": "timeuuid", "uid": "bigint", **METADATA_35},
    ),
    "messageidtable": (
        ["mailboxid"],
        [("uid", "asc")],
        {"mailboxid": "timeuuid", "uid": "bigint", "messageid": "timeuuid", **METADATA_35},
    ),
    "mailboxpathv2": (
        ["namespace", "user"],
        [("mailboxname", "asc")],
        {"namespace": "text", "user": "text", "mailboxname": "text", "mailboxid": "timeuuid"},
    ),
    "acl": (["id"], [], {"id": "timeuuid", "acl": "text", "version": "bigint"}),
    "currentquota": (
        ["quotaroot"],
        [],
        {"quotaroot": "text", "messagecount": "counter", "storage": "counter"},
    ),
}
# Tables whose full column list the reference does not give: only their presence and key are checked.
OTHER_TABLES = {
    "3.9": {"messagev3": ["messageid"], "attachmentv2": ["idasuuid"]},
    "3.5": {"messagev2": ["messageid"], "attachmentv2": ["idasuuid"]},
}


def read_back(cql, keyspace: str) -> dict:
    tables: dict = {}
    rows = cql.execute(
        "SELECT table_name, column_name, type, kind, position, clustering_order "
        "FROM system_schema.columns WHERE keyspace_name = %s",
        (keyspace,),
    )
    for row in rows:
        table = tables.setdefault(row.table_name, {"partition": {}, "clustering": {}, "types": {}, "static": set()})
        table["types"][row.column_name] = row.type
        if row.kind == "partition_key":
            table["partition"][row.position] = row.column_name
        elif row.kind == "clustering":
            table["clustering"][row.position] = (row.column_name, row.clustering_order)
        elif row.kind == "static":
            table["static"].add(row.column_name)
    return tables


@pytest.mark.parametrize(("generation", "expected"), [("3.9", EXPECTED_39), ("3.5", EXPECTED_35)])
def test_schema_matches_the_reference(cql, cassandra_settings, new_keyspace, capsys, generation, expected):
    keyspace = new_keyspace("schema")
    arguments = ["schema", "--keyspace", keyspace, "--generation", generation, "--port", str(cassandra_settings.port)]

    assert main(arguments) == 0
    assert f"James {generation} schema" in capsys.readouterr().out

    actual = read_back(cql, keyspace)
    assert set(actual) == set(expected) | set(OTHER_TABLES[generation])
    for name, (partition, clustering, types) in expected.items():
        table = actual[name]
        assert [table["partition"][i] for i in sorted(table["partition"])] == partition, name
        assert [table["clustering"][i] for i in sorted(table["clustering"])] == clustering, name
        assert table["types"] == types, name
    for name, partition in OTHER_TABLES[generation].items():
        assert [actual[name]["partition"][i] for i in sorted(actual[name]["partition"])] == partition
    if generation == "3.9":
        assert actual["eventstore"]["static"] == {"snapshot"}
    udt = cql.execute(
        "SELECT field_names, field_types FROM system_schema.types "
        "WHERE keyspace_name = %s AND type_name = 'mailboxbase'",
        (keyspace,),
    ).one()
    assert list(udt.field_names) == ["namespace", "user"] and list(udt.field_types) == ["text", "text"]

    # Idempotent: a second run changes nothing and succeeds.
    assert main(arguments) == 0
    assert read_back(cql, keyspace) == actual


def test_schema_refuses_another_generation_on_an_existing_keyspace(cassandra_settings, new_keyspace, capsys):
    keyspace = new_keyspace("schema")
    port = ["--port", str(cassandra_settings.port)]
    assert main(["schema", "--keyspace", keyspace, "--generation", "3.5", *port]) == 0

    assert main(["schema", "--keyspace", keyspace, "--generation", "3.9", *port]) == 2
    assert "already holds the James 3.5 schema" in capsys.readouterr().err


def test_schema_rejects_an_invalid_keyspace_name(cassandra_settings, capsys):
    assert main(["schema", "--keyspace", "bad-name;drop", "--port", str(cassandra_settings.port)]) == 2
    assert "invalid keyspace name 'bad-name;drop'" in capsys.readouterr().err
