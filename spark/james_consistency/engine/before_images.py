"""Before-images: what every write of a repair replaced, recorded before the write is sent, so that an operator can
take a run back (`james-consistency undo`, the `undo_repair` DAG).

Each write or delete of a repair (a projection's writer, a counter's delta, a lightweight transaction of the offline
mailbox repair) first records, in the project's keyspace (`james_consistency.before_images`, kept
JAMES_UNDO_RETENTION_DAYS), the row as the re-check read it, what the repair writes instead and the write timestamp
it uses. The record is durable before the write goes out: a run stopped mid-way can be taken back as well. When the
run's reconcile stage ends, its records are exported to its work folder (`before-images/`, parquet, with the summary
`before-images.json`: the run, its target and keyspace, its counts), where the undo reads them.

An image's rule says how the undo takes it back:
    row      a row written whole or deleted, with USING TIMESTAMP: its former values (or its absence) written back at
             the repair's timestamp + 1, so that a cell anyone wrote after the repair keeps its newer value
    update   the same for a table James writes only by UPDATE (aclv2: rows without a row marker)
    set      elements added to (or removed from) a set column: taken out (put back) at the repair's timestamp + 1
    counter  a delta added to counter columns: subtracted, unless a later run recomputed the counter since
    lwt      a lightweight transaction (the mailbox repair): reversed by another one, conditioned on the row still
             holding what the repair wrote

Values are kept as JSON (driver values encoded by `encoded`, read back by `decoded` with the column's CQL type).
"""

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from functools import cached_property

from james_consistency.engine.live import Writes, prepared
from james_consistency.engine.project_keyspace import PROJECT_KEYSPACE, ensure_project_keyspace

IMAGES_TABLE = "before_images"
# Which runs wrote a key of a counter table, newest first: a counter delta is not reversed once a later run wrote it
# again. Only counter images are entered there: no other undo rule reads it.
KEYS_TABLE = "before_image_keys"
# Spreads one run's images over partitions (a night's repair may write a million rows).
BUCKETS = 64
FOLDER = "before-images"
SUMMARY = "before-images.json"

ROW, UPDATE, SET, COUNTER, LWT = "row", "update", "set", "counter", "lwt"
RULES = (ROW, UPDATE, SET, COUNTER, LWT)
# What the repair did to the row (the undo's dry run counts them per table).
INSERTED, REWRITTEN, DELETED, INCREMENTED = "inserted", "rewritten", "deleted", "incremented"

IMAGE_COLUMNS = (
    "run_id",
    "bucket",
    "image_id",
    "target",
    "keyspace_name",
    "table_name",
    "rule",
    "action",
    "key",
    "before",
    "written",
    "write_timestamp",
    "recorded_at",
)


def ensure_tables(session, repaired_keyspace: str) -> None:
    """The before-image tables (created once, before a repair's first write)."""
    ensure_project_keyspace(session, repaired_keyspace)
    session.execute(
        f"""CREATE TABLE IF NOT EXISTS {PROJECT_KEYSPACE}.{IMAGES_TABLE} (
            run_id text, bucket int, image_id timeuuid,
            target text, keyspace_name text, table_name text, rule text, action text,
            key text, before text, written text, write_timestamp bigint, recorded_at timestamp, undone_by text,
            PRIMARY KEY ((run_id, bucket), image_id))"""
    )
    session.execute(
        f"""CREATE TABLE IF NOT EXISTS {PROJECT_KEYSPACE}.{KEYS_TABLE} (
            keyspace_name text, table_name text, key text, image_id timeuuid, run_id text,
            PRIMARY KEY ((keyspace_name, table_name, key), image_id)) WITH CLUSTERING ORDER BY (image_id DESC)"""
    )


# ---- values as JSON ---------------------------------------------------------------------------------------------


# The types of most values, looked up first: a night's repair encodes hundreds of thousands of them.
_AS_IS = frozenset({type(None), bool, int, float, str})


def encoded(value):
    """A driver value as JSON: UUIDs and datetimes as text, sets as sorted lists, a UDT as an object."""
    kind = type(value)
    if kind in _AS_IS:
        return value
    if kind is uuid.UUID:
        return str(value)
    if isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, uuid.UUID | Decimal):
        return str(value)
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
        return moment.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, bytes | bytearray):
        return "0x" + bytes(value).hex()
    if isinstance(value, dict):
        return {str(key): encoded(item) for key, item in value.items()}
    if isinstance(value, set | frozenset) or type(value).__name__ == "SortedSet":
        return sorted((encoded(item) for item in value), key=json.dumps) or None
    if isinstance(value, list | tuple) and not hasattr(value, "_fields"):
        return [encoded(item) for item in value] or None
    if hasattr(value, "_fields") or hasattr(value, "__dict__"):  # a UDT value (a named tuple or a driver class)
        fields = value._asdict() if hasattr(value, "_asdict") else vars(value)
        return {name: encoded(item) for name, item in fields.items()}
    return str(value)


def row_json(row: dict | None, columns: tuple[str, ...] | None = None) -> str | None:
    """A row (or None) as the JSON a before-image keeps: its columns, sorted."""
    if row is None:
        return None
    names = columns if columns is not None else tuple(row)
    return json.dumps({name: encoded(row.get(name)) for name in sorted(names)}, sort_keys=True)


# ---- recording, in the executors ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Recorder:
    """Records a run's before-images from a Spark task, as re-check steps (engine.live): `yield from
    recorder.record(...)` before the write it describes."""

    session: object
    run_id: str
    target: str
    keyspace: str
    ttl_seconds: int
    consistency: str

    @cached_property
    def _statements(self):
        image = prepared(
            self.session,
            f"INSERT INTO {PROJECT_KEYSPACE}.{IMAGES_TABLE} ({', '.join(IMAGE_COLUMNS)}) "
            f"VALUES ({', '.join('?' for _ in IMAGE_COLUMNS)}) USING TTL {self.ttl_seconds}",
            self.consistency,
        )
        key = prepared(
            self.session,
            f"INSERT INTO {PROJECT_KEYSPACE}.{KEYS_TABLE} (keyspace_name, table_name, key, image_id, run_id) "
            f"VALUES (?, ?, ?, ?, ?) USING TTL {self.ttl_seconds}",
            self.consistency,
        )
        return image, key

    def record(
        self,
        table: str,
        rule: str,
        action: str,
        key: dict,
        before: dict | None,
        written: dict | None,
        timestamp: int | None,
        columns: tuple[str, ...] | None = None,
    ):
        """Steps: one before-image (and, for a counter, its key's entry, sent together); the write it describes
        follows them."""
        image_statement, key_statement = self._statements
        image_id = uuid.uuid1()
        key_json = row_json(key)
        values = [
            self.run_id,
            image_id.int % BUCKETS,
            image_id,
            self.target,
            self.keyspace,
            table.lower(),
            rule,
            action,
            key_json,
            row_json(before, columns),
            row_json(written, columns),
            timestamp,
            datetime.now(UTC),
        ]
        writes = [(image_statement, values)]
        if rule == COUNTER:  # only a counter's undo asks which run wrote its key last
            writes.append((key_statement, [self.keyspace, table.lower(), key_json, image_id, self.run_id]))
        # In one unlogged batch (with other re-checks' writes): the write waits for it.
        yield Writes(tuple(writes))


# ---- the run's images in its work folder, on the driver -------------------------------------------------------------


def prepare(settings, repaired_keyspace: str) -> None:
    """Before a writing reconcile: the tables the executors record into."""
    from james_consistency.cassandra.cql import close, connect

    session = connect(settings)
    try:
        ensure_tables(session, repaired_keyspace)
    finally:
        close(session)


def export(spark, settings, run_id: str, work_dir: str, summary: dict) -> dict:
    """The run's before-images copied from Cassandra to `<work_dir>/before-images` (parquet) with their summary
    (`before-images.json`: `summary`, the run, its counts); what the report says of them. The node is asked first
    through the driver, which gives up in seconds, where the connector would wait on a node that is gone."""
    from pyspark.sql import functions as F

    from james_consistency.engine import work_folder
    from james_consistency.engine.tables import read_table

    prepare(settings, summary["keyspace"])
    images = read_table(spark, PROJECT_KEYSPACE, IMAGES_TABLE, IMAGE_COLUMNS).where(
        (F.col("run_id") == run_id) & F.col("bucket").isin(list(range(BUCKETS)))
    )
    path = f"{work_dir}/{FOLDER}"
    images.write.mode("overwrite").parquet(path)
    counted = spark.read.parquet(path).groupBy("table_name", "action").count().collect()
    counts: dict[str, dict[str, int]] = {}
    for row in sorted(counted, key=lambda row: (row["table_name"], row["action"])):
        counts.setdefault(row["table_name"], {})[row["action"]] = row["count"]
    described = {
        "path": path,
        "records": sum(sum(by_action.values()) for by_action in counts.values()),
        "counts": counts,
    }
    work_folder.write_text(spark, f"{work_dir}/{SUMMARY}", json.dumps({**summary, "runId": run_id, **described}))
    return described
