"""A scan in token ranges: journalled, resumable, and bounded by a time window.

The ring (Murmur3) is split into N contiguous token ranges. Every table a run reads is scanned range by range in the
executors (one Spark task per range: a paged `SELECT ... WHERE token(pk) > ? AND token(pk) <= ?` at the truth's
consistency, read on the JVM side through the connector's sessions by spark/jvm's TokenRangeScan), each finished batch
of ranges is written as parquet to the cycle's work folder (whole rows, or what the run keeps of them: see
ScannedTable), and each of its ranges is journalled as done in
`james_consistency.run_ranges`. A run killed mid-way, or stopped at its window's end, leaves
its finished ranges done: the next run of the same target and keyspace scans only the others (`fresh` starts over).
The tables are scanned in lockstep, a batch of ranges of each in turn, so that a window that ends part-way leaves the
same ranges done in every table. When every range of every table is done, the diff runs over the kept rows exactly as
over a connector scan, and the cycle is closed when the run ends. When the window ends first, what the finished
ranges decide is diffed and fixed (see `in_ranges`); the rest waits for the cycle's end.

Rows kept from an earlier night are older than the others; nothing is fixed from them without the live re-check of
the candidate, so an old row costs at most a candidate that turns out consistent, and a change it missed is found by
the next cycle.
"""

import bisect
import hashlib
import logging
import math
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from james_consistency.cassandra.cql import CassandraSettings, close, connect, primary_key
from james_consistency.engine import work_folder
from james_consistency.engine.diff import DIGEST
from james_consistency.engine.jvm import java_array, jvm_class
from james_consistency.engine.load import ScanLoad, page_size
from james_consistency.engine.project_keyspace import PROJECT_KEYSPACE, ensure_project_keyspace
from james_consistency.errors import OperatorError

log = logging.getLogger("james_consistency")

JOURNAL_KEYSPACE = PROJECT_KEYSPACE
JOURNAL_TABLE = "run_ranges"
MIN_TOKEN, MAX_TOKEN = -(2**63), 2**63 - 1
MURMUR3 = "org.apache.cassandra.dht.Murmur3Partitioner"
# Ranges per table when the size is unknown or small, and the data per range aimed at otherwise.
MIN_RANGES, MAX_RANGES, BYTES_PER_RANGE = 8, 4096, 64 * 1024 * 1024
PAGE_SIZE = 5000


def token_ranges(count: int) -> list[tuple[int, int]]:
    """`count` contiguous (start, end] ranges covering the whole Murmur3 ring (no key has the minimum token)."""
    if count < 1:
        raise OperatorError(f"ranges must be 1 or more, not {count}")
    width = (MAX_TOKEN - MIN_TOKEN) // count
    bounds = [MIN_TOKEN + width * index for index in range(count)] + [MAX_TOKEN]
    return [(bounds[index], bounds[index + 1]) for index in range(count)]


def range_index(count: int, token: int) -> int:
    """The index of the range of `token_ranges(count)` that holds `token`."""
    ends = [end for _, end in token_ranges(count)]
    return bisect.bisect_left(ends, token)


def in_ranges(frame: DataFrame, partition_key: dict[str, str], count: int, indexes: set[int]) -> DataFrame:
    """The rows of `frame` whose partition (`partition_key`: column -> CQL type, in key order) falls in one of the
    given ranges of `token_ranges(count)`: used only for the part of a cycle a window left unfinished. Each row's
    token is computed on the JVM side by spark/jvm's PartitionToken (the Java driver's Murmur3 over the key as
    Cassandra serializes it)."""
    token = partition_token(frame.sparkSession, partition_key)
    bounds = token_ranges(count)
    kept = F.lit(False)
    for first, last in _runs(sorted(indexes)):
        kept = kept | ((token > F.lit(bounds[first][0])) & (token <= F.lit(bounds[last][1])))
    return frame.where(kept)


def partition_token(spark: SparkSession, partition_key: dict[str, str]) -> Column:
    """Cassandra's Murmur3 token of each row's partition (`partition_key`: column -> CQL type, in key order; null
    when a component is null), computed on the JVM side by spark/jvm's PartitionToken with the Java driver's hash."""
    cql_types = list(partition_key.values())
    token = jvm_class(spark, TOKEN_CLASS)
    types = java_array(spark, spark._jvm.String, cql_types)
    unsupported = list(token.unsupported(types))
    if unsupported:
        raise OperatorError(f"no token for a partition key of type {', '.join(unsupported)}")
    function = "cassandra_token_" + "_".join(cql_types)
    token.register(spark._jsparkSession, function, types)
    return F.call_udf(function, F.struct(*(F.col(column) for column in partition_key)))


def _runs(indexes: list[int]) -> list[tuple[int, int]]:
    """Sorted indexes as (first, last) runs of consecutive ones: [0, 1, 2, 5] -> [(0, 2), (5, 5)]."""
    runs: list[tuple[int, int]] = []
    for index in indexes:
        if runs and runs[-1][1] == index - 1:
            runs[-1] = (runs[-1][0], index)
        else:
            runs.append((index, index))
    return runs


def parse_until(text: str, now: datetime | None = None) -> float:
    """A window's end as epoch seconds: an ISO 8601 time (UTC when it names no zone) or HH:MM, the next such time of
    day in UTC."""
    now = now or datetime.now(UTC)
    try:
        if len(text) <= 5 and ":" in text:
            hour, minute = (int(part) for part in text.split(":"))
            moment = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
            return (moment if moment > now else moment + timedelta(days=1)).timestamp()
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise OperatorError(f"--until {text!r} is neither an ISO 8601 time nor HH:MM") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


@dataclass
class Window:
    """When the run must stop: at the first range boundary after `until` (epoch seconds; None: no window), or once
    it has scanned `max_ranges` ranges (None: no limit)."""

    until: float | None = None
    max_ranges: int | None = None

    def ended(self, scanned: int = 0) -> bool:
        if self.max_ranges is not None and scanned >= self.max_ranges:
            return True
        return self.until is not None and time.time() >= self.until


@dataclass
class RangeProgress:
    done: int = 0
    total: int = 0
    scanned: int = 0  # by this run
    rows: int = 0  # read by this run (published as the run's progress, not in the report)
    resumed: bool = False
    window_ended: bool = False
    cycle: str = ""
    per_table: dict = field(default_factory=dict)

    def as_report(self) -> dict:
        return {
            "done": self.done,
            "total": self.total,
            "left": self.total - self.done,
            "scannedByThisRun": self.scanned,
            "resumed": self.resumed,
            "cycle": self.cycle,
            "tables": self.per_table,
        }


class WindowEnded(Exception):
    """The run's window ended at a range boundary: finished ranges are kept and journalled, the next run goes on."""

    def __init__(self, progress: RangeProgress):
        super().__init__(f"window ended, {progress.total - progress.done} ranges left")
        self.progress = progress


# ---- the journal --------------------------------------------------------------------------------------------------


class Journal:
    """The state of one target's scan cycle on one keyspace, in a table of the project's own keyspace (created with
    the replication of the keyspace it repairs, so it is as available as the data)."""

    def __init__(self, settings: CassandraSettings, target: str, keyspace: str):
        self.settings, self.target, self.keyspace = settings, target, keyspace

    def _session(self):
        return connect(self.settings)

    def ensure(self, session) -> None:
        partitioner = session.execute("SELECT partitioner FROM system.local").one().partitioner
        if partitioner != MURMUR3:
            raise OperatorError(f"token ranges need the Murmur3 partitioner; this cluster uses {partitioner}")
        ensure_project_keyspace(session, self.keyspace)
        session.execute(
            f"""CREATE TABLE IF NOT EXISTS {JOURNAL_KEYSPACE}.{JOURNAL_TABLE} (
                target text, keyspace_name text, table_name text, range_index int,
                cycle text STATIC, ranges int STATIC, work_dir text STATIC, started_at timestamp STATIC,
                range_start bigint, range_end bigint, rows bigint, finished_at timestamp,
                PRIMARY KEY ((target, keyspace_name), table_name, range_index))"""
        )

    def open(
        self, requested: int, wanted: int, work_root: str, fresh: bool
    ) -> tuple[str, str, int, dict[str, set[int]], bool]:
        """(cycle, work folder, ranges, done range indexes per table, resumed) of the cycle to work on: the journal's
        unfinished one, or a new one in `requested` ranges (0: `wanted`, from the data size)."""
        session = self._session()
        try:
            self.ensure(session)
            rows = list(
                session.execute(
                    f"SELECT cycle, ranges, work_dir, table_name, range_index, finished_at "
                    f"FROM {JOURNAL_KEYSPACE}.{JOURNAL_TABLE} WHERE target = %s AND keyspace_name = %s",
                    (self.target, self.keyspace),
                )
            )
            if rows and rows[0].cycle and not fresh:
                kept = rows[0]
                if requested and requested != kept.ranges:
                    raise OperatorError(
                        f"the journal holds an unfinished {self.target} scan of {self.keyspace} in {kept.ranges} "
                        f"ranges, not {requested}: run without --ranges to resume it, or with --fresh to start over"
                    )
                done: dict[str, set[int]] = {}
                for row in rows:
                    if row.table_name is not None and row.finished_at is not None:
                        done.setdefault(row.table_name, set()).add(row.range_index)
                return kept.cycle, kept.work_dir, kept.ranges, done, True
            ranges = requested or wanted
            cycle = f"{datetime.now(UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}"
            work_dir = f"{work_root.rstrip('/')}/cycles/{self.target}-{self.keyspace}-{cycle}"
            self._clear(session)
            session.execute(
                f"INSERT INTO {JOURNAL_KEYSPACE}.{JOURNAL_TABLE} (target, keyspace_name, cycle, ranges, work_dir, "
                "started_at) VALUES (%s, %s, %s, %s, %s, %s)",
                (self.target, self.keyspace, cycle, ranges, work_dir, datetime.now(UTC)),
            )
            return cycle, work_dir, ranges, {}, False
        finally:
            close(session)

    def unfinished(self) -> bool:
        """Whether the journal holds an unfinished scan cycle of this target and keyspace (resumed by the next run)."""
        session = self._session()
        try:
            if (
                session.execute(
                    "SELECT table_name FROM system_schema.tables WHERE keyspace_name = %s AND table_name = %s",
                    (JOURNAL_KEYSPACE, JOURNAL_TABLE),
                ).one()
                is None
            ):
                return False
            row = session.execute(
                f"SELECT cycle FROM {JOURNAL_KEYSPACE}.{JOURNAL_TABLE} "
                "WHERE target = %s AND keyspace_name = %s LIMIT 1",
                (self.target, self.keyspace),
            ).one()
            return row is not None and row.cycle is not None
        finally:
            close(session)

    def mark_done(self, table: str, done: list[tuple[int, int, int, int]]) -> None:
        """Journal finished ranges: (index, start, end, rows)."""
        session = self._session()
        try:
            statement = session.prepare(
                f"INSERT INTO {JOURNAL_KEYSPACE}.{JOURNAL_TABLE} (target, keyspace_name, table_name, range_index, "
                "range_start, range_end, rows, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
            )
            now = datetime.now(UTC)
            for index, start, end, rows in done:
                session.execute(statement, (self.target, self.keyspace, table, index, start, end, rows, now))
        finally:
            close(session)

    def close_cycle(self) -> None:
        session = self._session()
        try:
            self._clear(session)
        finally:
            close(session)

    def _clear(self, session) -> None:
        session.execute(
            f"DELETE FROM {JOURNAL_KEYSPACE}.{JOURNAL_TABLE} WHERE target = %s AND keyspace_name = %s",
            (self.target, self.keyspace),
        )


def estimated_ranges(settings: CassandraSettings, keyspace: str, tables: list[str], parallelism: int) -> int:
    """A number of ranges from the tables' size (Cassandra's own estimates), at least a few per core."""
    session = connect(settings)
    try:
        size = 0
        for table in tables:
            for row in session.execute(
                "SELECT mean_partition_size, partitions_count FROM system.size_estimates "
                "WHERE keyspace_name = %s AND table_name = %s",
                (keyspace, table.lower()),
            ):
                size += (row.mean_partition_size or 0) * (row.partitions_count or 0)
    finally:
        close(session)
    return max(MIN_RANGES, 2 * parallelism, min(MAX_RANGES, math.ceil(size / BYTES_PER_RANGE)))


# ---- scanning one table in ranges -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScannedTable:
    """A table a ranged scan reads: `source`, a lazy connector read giving the columns read, and `keep`, what of
    each row the cycle's work folder keeps (`keep(rows, passthrough)`: `passthrough` columns, such as the range index,
    kept as they are; the default keeps whole rows). `hashed`: columns read only into one digest of their serialized
    values (DIGEST, a long after the source's columns; see read_ranges)."""

    name: str
    source: DataFrame
    keep: Callable[[DataFrame, tuple[str, ...]], DataFrame] = lambda rows, passthrough: rows
    hashed: tuple[str, ...] = ()

    @property
    def read_schema(self) -> T.StructType:
        """The columns read_ranges gives (the range index aside): the source's, then the digest of the hashed ones."""
        if not self.hashed:
            return self.source.schema
        return T.StructType([*self.source.schema.fields, T.StructField(DIGEST, T.LongType())])

    @property
    def kept_schema(self) -> T.StructType:
        """The kept rows' columns."""
        return self.read_schema if self.hashed else self.keep(self.source, ()).schema


SCAN_CLASS = "org.james.consistency.TokenRangeScan"
TOKEN_CLASS = "org.james.consistency.PartitionToken"


def with_range_index(schema: T.StructType) -> T.StructType:
    """A table's scanned columns, prefixed by the index of the range each row was read in."""
    return T.StructType([T.StructField("range_index", T.IntegerType()), *schema.fields])


def read_ranges(
    spark: SparkSession,
    keyspace: str,
    table: str,
    schema: T.StructType,
    partition_key: list[str],
    ranges: list[tuple[int, int, int]],
    consistency: str,
    hashed: tuple[str, ...] = (),
    rows_per_second_per_task: float = 0.0,
    page_latency=None,
) -> DataFrame:
    """The table's rows in the (index, start, end] ranges, with the columns of `schema` as the connector presents
    them, each row prefixed by its range's index (`range_index`). Read in the executors by the JVM class of
    spark/jvm (the connector's sessions and settings; one Spark task per range): the connector's DataFrame reads
    cannot be restricted to a token range, and the Python driver reads a range at twice the CPU. With `hashed`
    columns, the last field of `schema` is their digest (DIGEST): an xxhash64 of their values as Cassandra
    serialized them, never decoded. Each task reads at most `rows_per_second_per_task` rows a second (0: no limit),
    in pages of about a second of that rate; `page_latency`, a JVM LongAccumulator, gets each page request's
    latency in microseconds."""
    jvm = spark._jvm
    frame = jvm_class(spark, SCAN_CLASS).scan(
        spark._jsparkSession,
        keyspace,
        table.lower(),
        java_array(spark, jvm.String, partition_key),
        spark._jsparkSession.parseDataType(with_range_index(schema).json()),
        java_array(spark, jvm.String, list(hashed)),
        java_array(spark, jvm.int, [index for index, _, _ in ranges]),
        java_array(spark, jvm.long, [start for _, start, _ in ranges]),
        java_array(spark, jvm.long, [end for _, _, end in ranges]),
        consistency,
        page_size(rows_per_second_per_task) if rows_per_second_per_task else PAGE_SIZE,
        float(rows_per_second_per_task),
        page_latency,
    )
    return DataFrame(frame, spark)


def partition_key(settings: CassandraSettings, keyspace: str, table: str) -> list[str]:
    session = connect(settings)
    try:
        key, _ = primary_key(session, keyspace, table)
    finally:
        close(session)
    if not key:
        raise OperatorError(f"keyspace '{keyspace}' has no table {table}")
    return [f'"{name}"' for name in key]


@dataclass
class RangedScan:
    """The tables a run reads, scanned in journalled token ranges into the cycle's work folder, in lockstep."""

    spark: SparkSession
    settings: CassandraSettings
    target: str
    keyspace: str
    consistency: str
    window: Window
    ranges: int = 0  # 0: from the data size
    fresh: bool = False
    work_root: str = ""
    progress: RangeProgress = field(default_factory=RangeProgress)
    # Told the progress at the start and after each batch of ranges (the run publishes it: report.progress).
    on_progress: Callable[[RangeProgress], None] = lambda progress: None
    # The rate each batch reads at, set between batches (its limit, or the adaptive mode's); None: unpaced.
    load: ScanLoad | None = None

    def __post_init__(self):
        self.journal = Journal(self.settings, self.target, self.keyspace)

    def start(self, tables: tuple[str, ...]) -> None:
        parallelism = max(self.spark.sparkContext.defaultParallelism, 1)
        wanted = 0 if self.ranges else estimated_ranges(self.settings, self.keyspace, tables, parallelism)
        self.cycle, self.work_dir, self.count, self.done, resumed = self.journal.open(
            self.ranges, wanted, self.work_root, self.fresh
        )
        self.declared = len(tables)
        self.progress = RangeProgress(
            done=sum(len(indexes) for indexes in self.done.values()),
            total=self.count * len(tables),
            resumed=resumed,
            cycle=self.cycle,
        )
        log.info(
            "token ranges: %d per table, %d of %d done%s",
            self.count,
            self.progress.done,
            self.progress.total,
            " (resumed)" if resumed else "",
        )
        self.on_progress(self.progress)

    def _name(self, table: ScannedTable) -> str:
        # The kept columns name the folder: rows kept in another form by an older run are not mixed with these.
        columns = ",".join(table.kept_schema.names)
        if table.hashed:  # a digest of serialized values is never compared with one of converted values
            columns += ";digest of serialized " + ",".join(table.hashed)
        return f"{table.name.lower()}-{hashlib.sha1(columns.encode()).hexdigest()[:8]}"

    def _location(self, name: str) -> str:
        return f"{self.work_dir}/tables/{name}"

    def scan(self, tables: list[ScannedTable]) -> None:
        """Scan every table's unfinished ranges, a batch of ranges of each table in turn. WindowEnded when the window
        ends first."""
        self.progress.total = self.count * max(self.declared, len(tables))
        parallelism = max(self.spark.sparkContext.defaultParallelism, 1)
        self.spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
        bounds = token_ranges(self.count)
        names = [self._name(table) for table in tables]
        keys = {table.name: partition_key(self.settings, self.keyspace, table.name) for table in tables}
        if self.load is not None:
            self.load.start()
        batch_size = self.load.batch_ranges(parallelism) if self.load is not None else 2 * parallelism
        try:
            for first in range(0, self.count, batch_size):
                for table, name in zip(tables, names, strict=True):
                    done = self.done.setdefault(name, set())
                    batch = [(index, *bounds[index]) for index in range(first, min(first + batch_size, self.count))]
                    batch = [item for item in batch if item[0] not in done]
                    if batch:
                        self._scan_batch(table, name, keys[table.name], batch)
        finally:
            self.progress.per_table = {name: len(self.done.get(name, ())) for name in names}
            if self.load is not None:
                self.load.stop()
        if self.progress.done < self.progress.total:  # the range budget ran out within the last batch
            self.progress.window_ended = True
            raise WindowEnded(self.progress)

    def _scan_batch(self, table: ScannedTable, name: str, key: list[str], batch: list[tuple[int, int, int]]) -> None:
        if self.window.ended(self.progress.scanned):
            self.progress.window_ended = True
            raise WindowEnded(self.progress)
        if self.window.max_ranges is not None:
            batch = batch[: self.window.max_ranges - self.progress.scanned]
        location = self._location(name)
        # The batch's rate, shared by the tasks that read at once; its page requests' latency measured by the JVM.
        tasks = min(max(self.spark.sparkContext.defaultParallelism, 1), len(batch))
        per_task = self.load.per_task(tasks) if self.load is not None else 0.0
        latency = self.spark.sparkContext._jsc.sc().longAccumulator() if self.load is not None else None
        started = time.time()
        read = read_ranges(
            self.spark,
            self.keyspace,
            table.name,
            table.read_schema,
            key,
            batch,
            self.consistency,
            table.hashed,
            per_task,
            latency,
        )
        rows = table.keep(read, ("range_index",))
        indexes = [index for index, _, _ in batch]
        # Each range's row count, measured by the write itself (no second read of what it wrote).
        counted = Observation(f"{name}-{indexes[0]}-{uuid.uuid4().hex[:8]}")
        rows.observe(
            counted, *(F.count(F.when(F.col("range_index") == index, 1)).alias(str(index)) for index in indexes)
        ).write.mode("overwrite").partitionBy("range_index").parquet(location)
        counts = counted.get
        if self.load is not None:
            own_latency_ms = latency.avg() / 1000 if latency.count() else None
            self.load.observe(started, sum(counts[str(index)] for index in indexes), own_latency_ms)
        self.journal.mark_done(name, [(index, start, end, counts[str(index)]) for index, start, end in batch])
        self.done[name].update(indexes)
        self.progress.done += len(batch)
        self.progress.scanned += len(batch)
        self.progress.rows += sum(counts[str(index)] for index in indexes)
        self.on_progress(self.progress)

    def table(self, table: ScannedTable) -> DataFrame:
        """The rows the finished ranges of the table kept (the columns of `table.kept_schema`): all of it once the
        scan is done."""
        location, kept = self._location(self._name(table)), table.kept_schema
        if not work_folder.exists(self.spark, location):
            return self.spark.createDataFrame([], kept)
        return self.spark.read.schema(with_range_index(kept)).parquet(location).drop("range_index")

    def done_ranges(self, table: ScannedTable) -> set[int]:
        return set(self.done.get(self._name(table), set()))

    @property
    def finished(self) -> bool:
        return bool(self.progress.total) and self.progress.done >= self.progress.total

    def close(self) -> None:
        """The scan's cycle is over: the journal forgets it and its kept rows are deleted."""
        self.journal.close_cycle()
        work_folder.delete(self.spark, self.work_dir)
