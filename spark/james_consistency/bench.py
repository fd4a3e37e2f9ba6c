"""`james-consistency bench <target>`: how fast a repair is, against the floor (and, for messages, against James).

In one Spark session it times, on the same broken keyspace:
- the floor: a bare connector scan of imapUidTable and messageIdTable (count only);
- the dry run (check) and the repair, as the operator runs them (gates included);
- a James-style reference on a sample: the solve-message-inconsistencies pass B, one truth row at a time through
  the Python driver (read the projection row, re-read the truth, write when they differ), unthrottled.
It samples the driver's memory while each phase runs: the JVM heap (in local mode the executors share it) and the
Python process's resident set.
"""

import json
import logging
import resource
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from james_consistency.cql import CassandraSettings, close, connect
from james_consistency.engine.run import RunOptions, execute, read_table
from james_consistency.paths import LOCAL_DIR

log = logging.getLogger("james_consistency")

BROKEN_KINDS = ("projection-missing", "projection-stale-flags", "projection-orphan")


@dataclass
class MemorySampler:
    """Peak JVM heap used and Python RSS while a phase runs (sampled every 200 ms)."""

    spark: object
    peak_heap_bytes: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)

    def _sample(self) -> None:
        memory = self.spark._jvm.java.lang.management.ManagementFactory.getMemoryMXBean()
        while not self._stop.is_set():
            self.peak_heap_bytes = max(self.peak_heap_bytes, memory.getHeapMemoryUsage().getUsed())
            self._stop.wait(0.2)

    def __enter__(self):
        self.spark._jvm.java.lang.System.gc()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def _timed(name: str, spark, action) -> dict:
    started = time.perf_counter()
    with MemorySampler(spark) as memory:
        result = action()
    seconds = time.perf_counter() - started
    log.info("bench %s: %.1fs", name, seconds)
    return {"seconds": round(seconds, 3), "peakJvmHeapMiB": round(memory.peak_heap_bytes / 2**20), "result": result}


def bare_scan(spark, keyspace: str, columns: tuple[str, ...]) -> int:
    truth = read_table(spark, keyspace, "imapuidtable", columns).count()
    projection = read_table(spark, keyspace, "messageidtable", columns).count()
    return truth + projection


def james_style_reference(settings: CassandraSettings, keyspace: str, columns: tuple[str, ...], sample: int) -> dict:
    """James's pass B, row by row: for each imapUidTable row, read messageIdTable at (mailboxId, uid), re-read the
    truth, and upsert the projection when they differ. Sequential and unthrottled (messagesPerSecond disabled)."""
    from cassandra.query import SimpleStatement

    session = connect(settings, keyspace)
    try:
        select_projection = session.prepare(
            f"SELECT {', '.join(columns)} FROM {keyspace}.messageidtable WHERE mailboxid = ? AND uid = ?"
        )
        select_truth = session.prepare(
            f"SELECT {', '.join(columns)} FROM {keyspace}.imapuidtable "
            "WHERE messageid = ? AND mailboxid = ? AND uid = ?"
        )
        upsert = session.prepare(
            f"INSERT INTO {keyspace}.messageidtable ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})"
        )
        scan = SimpleStatement(
            f"SELECT {', '.join(columns)} FROM {keyspace}.imapuidtable LIMIT {sample}", fetch_size=1000
        )
        processed = written = 0
        for row in session.execute(scan):
            current = session.execute(select_projection, (row.mailboxid, row.uid)).one()
            if current != row:
                fresh = session.execute(select_truth, (row.messageid, row.mailboxid, row.uid)).one()
                if fresh is not None:
                    session.execute(upsert, tuple(fresh))
                    written += 1
            processed += 1
        return {"processed": processed, "written": written}
    finally:
        close(session)


def prepare_keyspace(spark, settings: CassandraSettings, keyspace: str, messages: int, rate: float, seed: int) -> dict:
    """Seed `messages` messages (reused when the keyspace already holds them), then break `rate` of them."""
    from james_consistency.faults import inject
    from james_consistency.seed import seed_platform

    session = connect(settings)
    try:
        existing = session.execute(
            "SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = %s", (keyspace,)
        ).one()
    finally:
        close(session)
    marker = LOCAL_DIR / "bench" / f"{keyspace}.json"
    seeded = json.loads(marker.read_text()) if existing and marker.exists() else None
    if seeded is None or seeded.get("messages") != messages:
        mailboxes_per_user = 10
        messages_per_mailbox = 1000 if messages >= 100_000 else 100
        users = max(1, messages // (mailboxes_per_user * messages_per_mailbox))
        seeded = seed_platform(
            settings,
            keyspace=keyspace,
            users=users,
            mailboxes_per_user=mailboxes_per_user,
            messages_per_mailbox=messages_per_mailbox,
            random_seed=seed,
            spark=spark,
        )
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(json.dumps(seeded, default=str))
    # A keyspace reused from an earlier bench was repaired since: break other rows than last time.
    seed += int(time.time())
    broken = {}
    for kind in BROKEN_KINDS if rate > 0 else ():
        manifest = inject(
            settings, keyspace=keyspace, kind=kind, rate=rate / len(BROKEN_KINDS), random_seed=seed, manifest_path=None
        )
        broken[kind] = manifest["count"]
    return {"seeded": seeded, "broken": broken}


def bench_messages(
    spark, settings: CassandraSettings, *, messages: int, inconsistency_rate: float, reference_sample: int, seed: int
) -> dict:
    from james_consistency.projections.messages import message_columns
    from james_consistency.schema import detect_generation

    keyspace = f"bench_messages_{messages}"
    preparation = prepare_keyspace(spark, settings, keyspace, messages, inconsistency_rate, seed)
    session = connect(settings, keyspace)
    generation = detect_generation(session, keyspace)
    close(session)
    columns = message_columns(generation)

    scan = _timed("bare scan", spark, lambda: bare_scan(spark, keyspace, columns))
    check = _timed("dry run", spark, lambda: execute(spark, settings, RunOptions("messages", keyspace, mode="check")))
    repair = _timed(
        "repair",
        spark,
        lambda: execute(spark, settings, RunOptions("messages", keyspace, mode="repair", allow_destructive=True)),
    )
    # The reference repairs what the Spark repair already fixed: re-break the keyspace so it has the same work.
    prepare_keyspace(spark, settings, keyspace, messages, inconsistency_rate, seed + 1)
    reference = _timed(
        "James-style reference",
        spark,
        lambda: james_style_reference(settings, keyspace, columns, reference_sample),
    )

    truth_rows = repair["result"]["processedImapUidEntries"]
    scanned_rows = scan["result"]

    def rate(rows, phase):
        return round(rows / phase["seconds"]) if phase["seconds"] else None

    figures = {
        "keyspace": keyspace,
        "messages": truth_rows,
        "inconsistencyRate": inconsistency_rate,
        "broken": preparation["broken"],
        "found": repair["result"]["inconsistencies"],
        "fixed": {
            "added": repair["result"]["addedMessageIdEntries"],
            "updated": repair["result"]["updatedMessageIdEntries"],
            "removed": repair["result"]["removedMessageIdEntries"],
        },
        "bareScan": {
            "seconds": scan["seconds"],
            "rowsPerSecond": rate(scanned_rows, scan),
            "rowsScanned": scanned_rows,
        },
        "dryRun": {"seconds": check["seconds"], "truthRowsPerSecond": rate(truth_rows, check)},
        "repair": {"seconds": repair["seconds"], "truthRowsPerSecond": rate(truth_rows, repair)},
        "jamesStyleReference": {
            "seconds": reference["seconds"],
            "truthRowsPerSecond": rate(reference["result"]["processed"], reference),
            **reference["result"],
        },
        "driverPeakJvmHeapMiB": {
            phase: figures_of["peakJvmHeapMiB"]
            for phase, figures_of in (("bareScan", scan), ("dryRun", check), ("repair", repair))
        },
        "driverPeakPythonRssMiB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }
    figures["ratios"] = {
        "repairTimeOverBareScanTime": round(repair["seconds"] / scan["seconds"], 2),
        "repairOverReferenceThroughput": round(
            figures["repair"]["truthRowsPerSecond"] / max(figures["jamesStyleReference"]["truthRowsPerSecond"], 1), 1
        ),
    }
    return figures


# The faults that break each projection other than messageIdTable (the bench of `messages` has its own).
TARGET_FAULTS = {
    "acl": ("acl-user-missing", "acl-user-wrong-rights", "acl-user-extra"),
    "aclv2": ("aclv2-missing", "aclv2-wrong"),
    "deleted": ("deleted-missing", "deleted-stale"),
    "unseen": ("unseen-missing", "unseen-stale"),
    "recent": ("recent-missing", "recent-stale"),
    "flags": ("applicable-flag-missing",),
    "counters": ("counters-wrong",),
    "quotas": ("quota-wrong",),
}


def bench_projection(spark, settings: CassandraSettings, target: str, *, messages: int, rate: float, seed: int) -> dict:
    """The same bench for any other target, on the same seeded keyspace as `bench messages`: a bare scan of the
    tables the repair reads, its dry run and its repair (James has no repair to compare with for most of them)."""
    from james_consistency.engine.run import resolve_target
    from james_consistency.faults import inject

    keyspace = f"bench_messages_{messages}"
    seeded = prepare_keyspace(spark, settings, keyspace, messages, 0.0, seed)["seeded"]
    spec, _ = resolve_target(settings, target, keyspace)
    broken = {
        kind: inject(
            settings, keyspace=keyspace, kind=kind, rate=rate, random_seed=seed + int(time.time()), manifest_path=None
        )["count"]
        for kind in TARGET_FAULTS[target]
    }

    def bare_scan_of_spec() -> int:
        tables = {spec.truth_table: spec.truth_columns or None, spec.projection_table: spec.columns}
        tables.update({table: None for table in spec.extra_truth_tables})
        total = 0
        for table, columns in tables.items():
            frame = read_table(spark, keyspace, table, columns) if columns else _whole_table(spark, keyspace, table)
            total += frame.count()
        return total

    scan = _timed("bare scan", spark, bare_scan_of_spec)
    check = _timed("dry run", spark, lambda: execute(spark, settings, RunOptions(target, keyspace, mode="check")))
    repair = _timed(
        "repair",
        spark,
        lambda: execute(spark, settings, RunOptions(target, keyspace, mode="repair", allow_destructive=True)),
    )
    names = spec.report_names
    truth_rows = repair["result"][names.processed_truth]

    def per_second(rows, phase):
        return round(rows / phase["seconds"]) if phase["seconds"] else None

    return {
        "target": target,
        "keyspace": keyspace,
        "messages": seeded.get("messages", messages),
        "truthRows": truth_rows,
        "projectionRows": repair["result"][names.processed_projection],
        "broken": broken,
        "found": repair["result"]["inconsistencies"],
        "fixed": {
            "added": repair["result"][names.added],
            "updated": repair["result"][names.updated],
            "removed": repair["result"][names.removed],
            "failed": repair["result"].get("failedCount", 0),
        },
        "status": repair["result"]["status"],
        "bareScan": {
            "seconds": scan["seconds"],
            "rowsScanned": scan["result"],
            "rowsPerSecond": per_second(scan["result"], scan),
        },
        "dryRun": {"seconds": check["seconds"], "truthRowsPerSecond": per_second(truth_rows, check)},
        "repair": {"seconds": repair["seconds"], "truthRowsPerSecond": per_second(truth_rows, repair)},
        "ratios": {"repairTimeOverBareScanTime": round(repair["seconds"] / max(scan["seconds"], 0.001), 2)},
        "driverPeakJvmHeapMiB": {
            phase: figures_of["peakJvmHeapMiB"]
            for phase, figures_of in (("bareScan", scan), ("dryRun", check), ("repair", repair))
        },
    }


def _whole_table(spark, keyspace: str, table: str):
    return spark.read.format("org.apache.spark.sql.cassandra").options(keyspace=keyspace, table=table.lower()).load()


def write_figures(figures: dict, path: str | None) -> Path:
    name = figures.get("target", "messages")
    target = Path(path or LOCAL_DIR / "bench" / f"{name}-{figures['messages']}.json")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(figures, indent=2) + "\n")
    return target
