"""A batch of hostile rows on the real node (every malformed kind at once), then the repairs: each run completes,
each unreadable truth is reported in the report's errors, and no projection row tied to it is deleted or changed."""

import json

from james_consistency.engine.run import RunOptions
from james_consistency.jobs.targets import run_target
from james_consistency_kit.seed import seed_platform

# mailbox index -> the last eventStore event of its ACL (what James or a newer James may have left there)
HOSTILE_EVENTS = {
    0: "{not json",
    1: json.dumps({"eventId": 9, "type": "mailbox-renamed", "aclDiff": {"newAcl": {"entries": {}}}}),
    2: json.dumps({"eventId": 9, "type": "acl-updated", "aclDiff": {"newAcl": {"entries": {"hostile@domain.tld": 5}}}}),
    3: json.dumps(
        {"eventId": 9, "type": "acl-updated", "aclDiff": {"newAcl": {"entries": {"hostile@domain.tld": None}}}}
    ),
    4: json.dumps({"eventId": 9, "type": "acl-updated", "aclDiff": "newAcl"}),
    5: '{"eventId":9,"type":"acl-updated","aclDiff":{"newAcl":{"entries":{}}}} trailing garbage',
    6: "[" * 20_000,
    7: "",
    8: json.dumps({"eventId": 9, "type": "acl-updated", "aclDiff": {"newAcl": {"entries": ["lr"]}}}),
}


def rows_of(cql, keyspace, table) -> set[tuple]:
    return {
        tuple(frozenset(v) if type(v).__name__ == "SortedSet" else v for v in row)
        for row in cql.execute(f"SELECT * FROM {keyspace}.{table}")
    }


HUGE_KEYWORDS = {f"kw-{i:05d}-" + "x" * 20 for i in range(3_000)}


def test_hostile_rows_are_reported_per_row_and_nothing_unreadable_is_deleted(
    cql, cassandra_settings, spark, new_keyspace
):
    keyspace = new_keyspace("hostile")
    seed_platform(
        cassandra_settings,
        keyspace=keyspace,
        users=3,
        mailboxes_per_user=4,
        messages_per_mailbox=5,
        generation="3.9",
        spark=spark,
    )
    mailboxes = sorted(row.id for row in cql.execute(f"SELECT id FROM {keyspace}.mailbox"))
    tried = 0
    hostile = {}
    for index, event in HOSTILE_EVENTS.items():
        mailbox = mailboxes[index]
        hostile[str(mailbox)] = event
        cql.execute(
            f"INSERT INTO {keyspace}.eventstore (aggregateid, eventid, event) VALUES (%s, %s, %s)",
            (str(mailbox), 1_000, event),
        )
        # Projection rows that an empty reading of the broken truth would delete.
        cql.execute(
            f"INSERT INTO {keyspace}.usermailboxacl (username, mailboxid, rights) VALUES (%s, %s, %s)",
            ("victim@domain.tld", mailbox, "lr"),
        )
        cql.execute(
            f"INSERT INTO {keyspace}.aclv2 (id, key, rights) VALUES (%s, %s, %s)", (mailbox, "victim@domain.tld", {"l"})
        )
        tried += 1
    # An aggregate of another James feature (not a mailbox id) in the same eventStore: not an ACL, not reported.
    cql.execute(
        f"INSERT INTO {keyspace}.eventstore (aggregateid, eventid, event) VALUES (%s, %s, %s)",
        ("FilteringRule/bob@domain.tld", 0, json.dumps({"type": "filtering-rule-set-defined", "rules": []})),
    )
    tried += 1
    # A newer James schema: extra columns in the truth and the projections.
    for table in ("imapuidtable", "messageidtable", "usermailboxacl", "aclv2", "eventstore"):
        cql.execute(f"ALTER TABLE {keyspace}.{table} ADD newer_james_column text")
        tried += 1
    message = cql.execute(f"SELECT messageid, mailboxid, uid FROM {keyspace}.imapuidtable LIMIT 1").one()
    # A huge keyword set on one message (the projection lags behind), and a value in the newer column.
    cql.execute(
        f"UPDATE {keyspace}.imapuidtable SET userflags = %s, newer_james_column = 'x' "
        "WHERE messageid = %s AND mailboxid = %s AND uid = %s",
        (HUGE_KEYWORDS, message.messageid, message.mailboxid, message.uid),
    )
    tried += 2
    before = {table: rows_of(cql, keyspace, table) for table in ("usermailboxacl", "aclv2")}

    reports = {
        target: run_target(
            spark, cassandra_settings, RunOptions(target, keyspace, mode="repair", allow_destructive=True)
        )
        for target in ("acl", "aclv2", "messages", "flags")
    }
    print(
        f"\nhostile rows: {tried} malformed inputs written; "
        + "; ".join(f"{t} {r['status']}, {len(r['errors'])} errors reported" for t, r in reports.items())
    )
    for target in ("acl", "aclv2"):
        report = reports[target]
        assert report["status"] == "PARTIAL"
        reported = {error["mailboxId"] for error in report["errors"] if error["kind"] == "unreadable-truth"}
        assert set(hostile) <= reported, set(hostile) - reported
        assert "FilteringRule/bob@domain.tld" not in reported, "another James aggregate is not an ACL"
        assert report.get("failedCount", 0) == 0, report["errors"]
    for table, rows in before.items():
        now = rows_of(cql, keyspace, table)
        tied = {row for row in rows if str(row[1] if table == "usermailboxacl" else row[0]) in hostile}
        assert tied <= now, f"{table}: rows of an unreadable ACL were changed or deleted: {tied - now}"
    assert reports["messages"]["status"] == "COMPLETED", reports["messages"]["errors"]
    assert reports["flags"]["status"] == "COMPLETED", reports["flags"]["errors"]
    flags = cql.execute(f"SELECT userflags FROM {keyspace}.applicableflag WHERE mailboxid = %s", (message.mailboxid,))
    assert HUGE_KEYWORDS <= set(flags.one().userflags)
