"""A platform written by James's own code (the harness: its mailbox manager, mappers, DAOs, event sourcing), for the
tests that need a consistent platform to break, or one James broke itself.

James writes (and breaks) each size of platform once per test session, into a template keyspace (a seed costs
James's JVM and its whole write path: tens of seconds, and each of its faults a JVM more); every test then gets its
own copy: the template's tables created again from their own CQL definitions and their rows copied (counters by
increments), which takes a second or two. The rows are James's, written the way James writes them (INSERT or UPDATE;
write times aside: a copy is written now)."""

import re

from cassandra.query import UNSET_VALUE, SimpleStatement
from james_consistency.cql import CassandraSettings
from james_consistency_kit import james_harness

# The James release that writes each schema generation of the project.
VERSION_OF_GENERATION = {"3.9": "3.8.1", "3.5": "3.5.0"}
# A platform with more users, hence more shares between them, for the ACL repairs.
ACL_SIZES = {"users": 6, "mailboxes_per_user": 3, "messages_per_mailbox": 2}
# The tables each James release writes by UPDATE only (javap of its DAOs: no insertInto), whose rows have no row
# marker. James 3.5.0 still INSERTs messageIdTable.
WRITTEN_BY_UPDATE = {
    "3.8.1": {"messageidtable", "aclv2", "applicableflag", "messagev3"},
    "3.5.0": {"applicableflag"},
}
# The projection tables of each generation, as the harness's James releases keep them.
PROJECTION_TABLES = {
    "3.9": (
        "messageidtable",
        "usermailboxacl",
        "aclv2",
        "messagedeleted",
        "firstunseen",
        "mailboxrecents",
        "applicableflag",
        "mailboxcounters",
        "currentquota",  # James 3.6 to 3.8 (the harness's 3.8.1) write 3.9's tables but keep quotas there
    ),
    "3.5": (
        "messageidtable",
        "usermailboxacl",
        "messagedeleted",
        "firstunseen",
        "mailboxrecents",
        "applicableflag",
        "mailboxcounters",
        "currentquota",
    ),
}
# A small platform James breaks with each of its faults, for the stories that judge or undo the repairs of all.
BROKEN_SIZES = {"users": 3, "mailboxes_per_user": 3, "messages_per_mailbox": 4}
GENERATION_OF_VERSION = {version: generation for generation, version in VERSION_OF_GENERATION.items()}
# (version, sizes, broken) -> the template keyspace and what James reported writing it.
_TEMPLATES: dict[tuple, tuple[str, dict]] = {}


def james_platform(
    cql,
    settings: CassandraSettings,
    keyspace: str,
    generation: str = "3.9",
    users: int = 3,
    mailboxes_per_user: int = 3,
    messages_per_mailbox: int = 20,
) -> dict:
    """`keyspace` holding a copy of the platform James wrote with these sizes; returns James's seed counts."""
    sizes = (users, mailboxes_per_user, messages_per_mailbox)
    return _copy_of_template(cql, settings, keyspace, VERSION_OF_GENERATION[generation], sizes, broken=False)


def james_broken_platform(cql, settings: CassandraSettings, keyspace: str, version: str) -> dict[str, int]:
    """`keyspace` holding a copy of a platform of BROKEN_SIZES James wrote, then broke through its own write paths
    with each fault kind of its harness but the attachments' (rate 0.3, the kind's number as its random seed).
    Returns the inconsistencies James's faults left per target: per target, not per kind, as a kind may find its
    operations already broken by an earlier one (a deletion whose message another deletion already took)."""
    return _copy_of_template(cql, settings, keyspace, version, tuple(BROKEN_SIZES.values()), broken=True)


def _copy_of_template(cql, settings, keyspace: str, version: str, sizes: tuple, broken: bool) -> dict:
    key = (version, sizes, broken)
    if key not in _TEMPLATES:
        _TEMPLATES[key] = _write_template(cql, settings, version, sizes, broken)
    template, written = _TEMPLATES[key]
    copy_keyspace(cql, template, keyspace, WRITTEN_BY_UPDATE[version])
    return written


def _write_template(cql, settings, version: str, sizes: tuple, broken: bool) -> tuple[str, dict]:
    users, mailboxes_per_user, messages_per_mailbox = sizes
    template = f"james_template_{version.replace('.', '')}_{users}_{mailboxes_per_user}_{messages_per_mailbox}"
    template += "_broken" if broken else ""
    on_template = ["--keyspace", template]
    cql.execute(f"DROP KEYSPACE IF EXISTS {template}", timeout=120)
    james_harness.run(version, "schema", on_template, settings)
    counts = james_harness.run(
        version,
        "seed",
        [*on_template, "--users", str(users), "--mailboxes-per-user", str(mailboxes_per_user)]
        + ["--messages-per-mailbox", str(messages_per_mailbox)],
        settings,
    )
    if not broken:
        return template, counts
    left: dict[str, int] = {}
    listed = james_harness.run(version, "break", ["--list"], settings)
    for number, kind in enumerate(kind for kind in listed if kind["target"] != "attachments"):
        arguments = [*on_template, "--kind", kind["kind"], "--rate", "0.3", "--random-seed", str(number)]
        manifest = james_harness.run(version, "break", arguments, settings)
        left[kind["target"]] = left.get(kind["target"], 0) + len(manifest["inconsistencies"])
    return template, left


def copy_keyspace(cql, source: str, target: str, written_by_update: set[str]) -> None:
    """`target` created with `source`'s replication, types and tables, and every row of `source` copied."""
    metadata = cql.cluster.metadata
    cql.cluster.refresh_schema_metadata()
    definitions = metadata.keyspaces[source]
    statements = [statement for statement in definitions.export_as_string().split(";\n") if statement.strip()]
    for statement in statements:
        cql.execute(_renamed(statement, source, target), timeout=120)
    cql.cluster.refresh_keyspace_metadata(target)
    for table in definitions.tables.values():
        _copy_rows(cql, table, source, target, by_update=table.name in written_by_update)


def _renamed(statement: str, source: str, target: str) -> str:
    return re.sub(rf"\b{source}\.", f"{target}.", statement.replace(f"KEYSPACE {source} ", f"KEYSPACE {target} "))


def _copy_rows(cql, table, source: str, target: str, by_update: bool) -> None:
    counters = [name for name, column in table.columns.items() if column.cql_type == "counter"]
    if counters:
        _copy_by_update(cql, table, source, target, increments=True)
    elif by_update:
        _copy_by_update(cql, table, source, target, increments=False)
    else:
        rows = cql.execute(SimpleStatement(f"SELECT JSON * FROM {source}.{table.name}", fetch_size=1000), timeout=60)
        insert = cql.prepare(f"INSERT INTO {target}.{table.name} JSON ?")
        for row in rows:
            cql.execute(insert, (row[0],))


def _copy_by_update(cql, table, source: str, target: str, increments: bool) -> None:
    """Rows copied by UPDATE, as James writes them: counters by increments, the others with no row marker (a row
    whose regular columns are all removed later then disappears, as it does on James's own rows)."""
    keys = [column.name for column in (*table.partition_key, *table.clustering_key)]
    regular = [name for name in table.columns if name not in keys]
    assignments = ", ".join(f"{name} = {name} + ?" if increments else f"{name} = ?" for name in regular)
    where = " AND ".join(f"{name} = ?" for name in keys)
    update = cql.prepare(f"UPDATE {target}.{table.name} SET {assignments} WHERE {where}")
    rows = cql.execute(SimpleStatement(f"SELECT * FROM {source}.{table.name}", fetch_size=1000), timeout=60)
    for row in rows:
        values = row._asdict()
        if increments:
            changes = [values[name] or 0 for name in regular]
        else:
            changes = [UNSET_VALUE if values[name] is None else values[name] for name in regular]
        cql.execute(update, changes + [values[name] for name in keys])
