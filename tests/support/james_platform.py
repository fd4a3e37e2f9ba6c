"""A platform written by James's own code (the harness: its mailbox manager, mappers, DAOs, event sourcing), for the
tests that need a consistent platform to break, or one James broke itself.

James writes (and breaks) each size of platform once per harness build, into a template keyspace (a seed costs
James's JVM and its whole write path: tens of seconds, and its faults a JVM more), whose definitions and rows
are kept in a JSON file of `.local/james-templates/` named after the harness jar and the recipe below: the other
pytest-xdist worker (its own node) and the next test sessions of the checkout (`make test-end-to-end` after `make
test`) read them there instead of running James again. Every test then gets its own copy: the template's tables
created again from their own CQL definitions and its rows written (counters by increments), which takes a second or
two. The rows are James's, written the way James writes them (INSERT or UPDATE; write times aside: a copy is written
now)."""

import fcntl
import hashlib
import inspect
import json
import os
import re
from contextlib import contextmanager
from pathlib import Path

from cassandra.query import SimpleStatement
from james_consistency.cassandra.cql import CassandraSettings
from james_consistency.runtime.paths import LOCAL_DIR
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
# (version, sizes, broken) -> the template's definitions and rows, and what James reported writing it.
_TEMPLATES: dict[tuple, tuple[dict, dict]] = {}
TEMPLATES_DIR = LOCAL_DIR / "james-templates"


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
        _TEMPLATES[key] = _template(cql, settings, version, sizes, broken)
    rows, written = _TEMPLATES[key]
    restore_keyspace(cql, rows, keyspace)
    return written


def _template(cql, settings, version: str, sizes: tuple, broken: bool) -> tuple[dict, dict]:
    """The template's rows and James's counts: from its file, or written by James (then kept in the file). One
    process at a time writes a template: the other waits for its file."""
    users, mailboxes_per_user, messages_per_mailbox = sizes
    name = f"james_template_{version.replace('.', '')}_{users}_{mailboxes_per_user}_{messages_per_mailbox}"
    name += "_broken" if broken else ""
    kept = TEMPLATES_DIR / f"{name}-{_recipe_fingerprint(version)}.json"
    with _locked(kept.with_suffix(".lock")):
        if kept.is_file():
            template = json.loads(kept.read_text())
        else:
            written = _write_template(cql, settings, name, version, sizes, broken)
            template = {"rows": keyspace_rows(cql, name, WRITTEN_BY_UPDATE[version]), "written": written}
            partial = kept.with_suffix(f".{os.getpid()}.partial")
            partial.write_text(json.dumps(template))
            partial.replace(kept)
    return template["rows"], template["written"]


def _recipe_fingerprint(version: str) -> str:
    """What a kept template depends on: the harness James runs (its jar and class path) and how it is run."""
    folder = james_harness.harness_dir(version)
    digest = hashlib.sha256()
    for part in (folder / "james-harness.jar", folder / "classpath.txt"):
        digest.update(part.read_bytes())
    for recipe in (_write_template, keyspace_rows):
        digest.update(inspect.getsource(recipe).encode())
    return digest.hexdigest()[:16]


@contextmanager
def _locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _write_template(cql, settings, template: str, version: str, sizes: tuple, broken: bool) -> dict:
    """James writes the template (schema, seed, and for a broken one the kinds its break lists), each step one
    command of a harness batch: one JVM for the platform, one for its faults."""
    users, mailboxes_per_user, messages_per_mailbox = sizes
    on_template = ["--keyspace", template]
    cql.execute(f"DROP KEYSPACE IF EXISTS {template}", timeout=120)
    seed = [*on_template, "--users", str(users), "--mailboxes-per-user", str(mailboxes_per_user)]
    seed += ["--messages-per-mailbox", str(messages_per_mailbox)]
    _, counts, listed = james_harness.run_batch(
        version, [("schema", on_template), ("seed", seed), ("break", ["--list"])], settings
    )
    if not broken:
        return counts
    kinds = [kind for kind in listed if kind["target"] != "attachments"]
    breaks = [
        ("break", [*on_template, "--kind", kind["kind"], "--rate", "0.3", "--random-seed", str(number)])
        for number, kind in enumerate(kinds)
    ]
    left: dict[str, int] = {}
    for kind, manifest in zip(kinds, james_harness.run_batch(version, breaks, settings), strict=True):
        left[kind["target"]] = left.get(kind["target"], 0) + len(manifest["inconsistencies"])
    return left


def copy_keyspace(cql, source: str, target: str, written_by_update: set[str]) -> None:
    """`target` created with `source`'s replication, types and tables, and every row of `source` copied."""
    restore_keyspace(cql, keyspace_rows(cql, source, written_by_update), target)


def keyspace_rows(cql, source: str, written_by_update: set[str]) -> dict:
    """`source`'s definitions (CQL) and every row of its tables as JSON (SELECT JSON), each table with the way its
    rows are written again: INSERT JSON, or UPDATE (counters by increments; the tables James writes by UPDATE only
    with no row marker)."""
    cql.cluster.refresh_schema_metadata()
    definitions = cql.cluster.metadata.keyspaces[source]
    statements = [statement for statement in definitions.export_as_string().split(";\n") if statement.strip()]
    tables = {}
    for table in definitions.tables.values():
        if any(column.cql_type == "counter" for column in table.columns.values()):
            written_by = "increments"
        else:
            written_by = "update" if table.name in written_by_update else "insert"
        rows = cql.execute(SimpleStatement(f"SELECT JSON * FROM {source}.{table.name}", fetch_size=1000), timeout=60)
        tables[table.name] = {
            "keys": [column.name for column in (*table.partition_key, *table.clustering_key)],
            "written_by": written_by,
            "rows": [row[0] for row in rows],
        }
    return {"keyspace": source, "statements": statements, "tables": tables}


def restore_keyspace(cql, rows: dict, target: str) -> None:
    """`target` created from the definitions of `keyspace_rows` and its rows written."""
    for statement in rows["statements"]:
        cql.execute(_renamed(statement, rows["keyspace"], target), timeout=120)
    cql.cluster.refresh_keyspace_metadata(target)
    for name, table in rows["tables"].items():
        if table["written_by"] == "insert":
            insert = cql.prepare(f"INSERT INTO {target}.{name} JSON ?")
            for row in table["rows"]:
                cql.execute(insert, (row,))
        else:
            _write_by_update(cql, target, name, table, increments=table["written_by"] == "increments")


def _renamed(statement: str, source: str, target: str) -> str:
    return re.sub(rf"\b{source}\.", f"{target}.", statement.replace(f"KEYSPACE {source} ", f"KEYSPACE {target} "))


def _write_by_update(cql, target: str, name: str, table: dict, increments: bool) -> None:
    """Rows written by UPDATE, as James writes them: counters by increments, the others with no row marker (a row
    whose regular columns are all removed later then disappears, as it does on James's own rows); a null column is
    left alone (a counter James never incremented stays null). Each value is bound as its JSON (fromJson), as SELECT
    JSON gave it."""
    keys = table["keys"]
    where = " AND ".join(f"{column} = fromJson(?)" for column in keys)
    statements = {}
    for text in table["rows"]:
        row = json.loads(text)
        regular = tuple(column for column in row if column not in keys and row[column] is not None)
        if regular not in statements:
            assignments = ", ".join(
                f"{column} = {column} + ?" if increments else f"{column} = fromJson(?)" for column in regular
            )
            statements[regular] = cql.prepare(f"UPDATE {target}.{name} SET {assignments} WHERE {where}")
        changes = [row[column] if increments else json.dumps(row[column]) for column in regular]
        cql.execute(statements[regular], changes + [json.dumps(row[column]) for column in keys])
