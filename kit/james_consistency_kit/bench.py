"""`james-consistency bench <target>`: how fast a repair is, against the floor (and, for messages, against James).

In one Spark session it times, on the same broken keyspace:
- the floor: a bare connector scan of imapUidTable and messageIdTable (count only);
- the dry run (check) and the repair, as the operator runs them (gates included);
- a James-style reference on a sample: the solve-message-inconsistencies pass B, one truth row at a time through
  the Python driver (read the projection row, re-read the truth, write when they differ), unthrottled;
- James 3.8.1 itself (the harness, james/harness-3.8.1/): SolveMessageInconsistenciesTask unthrottled and at its
  default 100 messages/s, RecomputeMailboxCountersTask for `bench counters`, and James's report after our repair.
The bench keyspace is created by James's own `schema` command (its whole 3.8.1 schema, which its DAOs need), then
filled by the project's fast seeder: the message, mailbox, ACL and counter tables are column-identical.
It samples the driver's memory while each phase runs: the JVM heap (in local mode the executors share it) and the
Python process's resident set; and the machine's processor time each phase took, all of it and the local Cassandra
nodes' share (on a machine they share with Spark, a phase that keeps every core busy cannot get faster than the work
it does: the figures say which work that is).
"""

import json
import logging
import os
import resource
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from james_consistency.cql import CassandraSettings, close, connect
from james_consistency.engine.run import RunOptions, execute, read_table
from james_consistency.paths import LOCAL_DIR

from james_consistency_kit import james_harness
from james_consistency_kit.cassandra_node import CASSANDRA_MARKER
from james_consistency_kit.processes import runs

log = logging.getLogger("james_consistency")

BROKEN_KINDS = ("projection-missing", "projection-stale-flags", "projection-orphan")

JAMES_VERSION = "3.8.1"
JAMES_DEFAULT_RATE = 100  # SolveMessageInconsistenciesService.RunningOptions.DEFAULT, messages per second
# "Unthrottled": James's throttle makes one window of this many messages (RunningOptions accepts any positive int,
# as webadmin's messagesPerSecond does); its only remaining cost is the 1 s delay of that window, once per pass.
JAMES_UNTHROTTLED = 2**31 - 1
JAMES_PHASE_LIMIT_SECONDS = 600  # a James phase estimated longer runs on the sample keyspace instead


def bench_keyspace(messages: int, prefix: str = "bench_james") -> str:
    return f"{prefix}_{messages}"


@dataclass
class MemorySampler:
    """The JVM heap while a phase runs: its peak (sampled every 200 ms; in local mode the executors' tasks share the
    driver's heap, and garbage waits for the collector) and what stays after it (after a full collection: what the
    driver keeps)."""

    spark: object
    peak_heap_bytes: int = 0
    retained_heap_bytes: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)

    def _used(self) -> int:
        return self.spark._jvm.java.lang.management.ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed()

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak_heap_bytes = max(self.peak_heap_bytes, self._used())
            self._stop.wait(0.2)

    def __enter__(self):
        self.spark._jvm.java.lang.System.gc()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.spark._jvm.java.lang.System.gc()
        self.retained_heap_bytes = self._used()


@dataclass(frozen=True)
class CpuClock:
    """The machine's processor time so far (Linux /proc): all of it, and that of the local Cassandra nodes' JVMs."""

    wall: float
    busy: float
    cassandra: float

    @staticmethod
    def now() -> "CpuClock":
        return CpuClock(time.perf_counter(), _machine_busy_seconds(), _cassandra_seconds())

    def since(self, start: "CpuClock") -> dict:
        """Between two readings: the processor seconds used, and how many cores that kept busy on average."""
        wall = max(self.wall - start.wall, 1e-9)
        busy, cassandra = self.busy - start.busy, self.cassandra - start.cassandra
        return {
            "cpuSeconds": round(busy, 1),
            "busyCores": round(busy / wall, 2),
            "cassandraCpuSeconds": round(cassandra, 1),
            "cassandraCores": round(cassandra / wall, 2),
            "cores": os.cpu_count(),
        }


def _machine_busy_seconds() -> float:
    try:
        fields = [int(value) for value in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except OSError:
        return 0.0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle and iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _cassandra_seconds() -> float:
    """User and system time of every live process whose command line runs CassandraDaemon (0 where /proc is not)."""
    total = 0
    for process in Path("/proc").glob("[0-9]*"):
        if not runs(int(process.name), CASSANDRA_MARKER):
            continue
        try:
            fields = (process / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # it ended since
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


def _timed(name: str, spark, action) -> dict:
    with MemorySampler(spark) as memory:
        started = CpuClock.now()
        result = action()
        finished = CpuClock.now()
    seconds, cpu = finished.wall - started.wall, finished.since(started)
    log.info("bench %s: %.1fs, %.2f cores busy", name, seconds, cpu["busyCores"])
    return {
        "seconds": round(seconds, 3),
        "cpu": cpu,
        "peakJvmHeapMiB": round(memory.peak_heap_bytes / 2**20),
        "retainedJvmHeapMiB": round(memory.retained_heap_bytes / 2**20),
        "result": result,
    }


def driver_memory(phases) -> dict:
    """The driver's JVM heap per timed phase (name, `_timed` result): peak and retained."""
    return {
        "driverPeakJvmHeapMiB": {phase: timed["peakJvmHeapMiB"] for phase, timed in phases},
        "driverRetainedJvmHeapMiB": {phase: timed["retainedJvmHeapMiB"] for phase, timed in phases},
    }


def bare_scan(spark, keyspace: str, columns: tuple[str, ...]) -> int:
    """Both tables read whole, every column, into Spark's no-op sink (a count would let the connector skip columns);
    returns the rows read."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    rows = 0
    for table in ("imapuidtable", "messageidtable"):
        counted = Observation(f"bare-{table}-{time.time_ns()}")
        frame = read_table(spark, keyspace, table, columns).observe(counted, F.count(F.lit(1)).alias("rows"))
        frame.write.format("noop").mode("overwrite").save()
        rows += counted.get["rows"]
    return rows


def nightly_run(spark, settings: CassandraSettings, keyspace: str, run_dir: str, cpu: dict | None = None) -> dict:
    """The nightly DAG run's work, in process: a check in token ranges keeping its scan, the repair and the verify
    reusing it (the DAG runs the same three jobs by spark-submit). `cpu`, when given, gets each step's processor
    time (CpuClock)."""
    steps = {
        "check": RunOptions("messages", keyspace, mode="check", ranges=0, run_dir=run_dir),
        "repair": RunOptions(
            "messages", keyspace, mode="repair", allow_destructive=True, run_dir=run_dir, reuse_scan=True
        ),
        "verify": RunOptions("messages", keyspace, mode="verify", run_dir=run_dir, reuse_scan=True),
    }
    reports = {}
    for step, options in steps.items():
        started = CpuClock.now()
        reports[step] = execute(spark, settings, options)
        if cpu is not None:
            cpu[step] = CpuClock.now().since(started)
    return reports


def stopped_and_resumed(spark, settings: CassandraSettings, keyspace: str, ranges: int) -> dict:
    """A dry run in `ranges` token ranges per table stopped after half of them, then resumed by the next run."""
    stopped = execute(
        spark, settings, RunOptions("messages", keyspace, mode="check", ranges=ranges, max_ranges=ranges, fresh=True)
    )
    resumed = execute(spark, settings, RunOptions("messages", keyspace, mode="check"))
    return {"stopped": stopped, "resumed": resumed}


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
    from james_consistency_kit.faults import inject
    from james_consistency_kit.seed import seed_platform

    session = connect(settings)
    try:
        existing = session.execute(
            "SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = %s", (keyspace,)
        ).one()
    finally:
        close(session)
    marker = LOCAL_DIR / "bench" / f"{keyspace}.json"
    seeded = json.loads(marker.read_text()) if existing and marker.exists() else None
    if seeded is None or seeded.get("requested", seeded.get("messages")) != messages:
        if james_harness.is_built(JAMES_VERSION):
            # James's DAOs are wired on its whole schema (currentQuota, ...): let James create the keyspace.
            james_harness.run(JAMES_VERSION, "schema", ["--keyspace", keyspace], settings)
        mailboxes_per_user = 10
        messages_per_mailbox = 1000 if messages >= 100_000 else 100 if messages >= 1000 else max(1, messages // 10)
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
        seeded["requested"] = messages
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


def james_solve(
    settings: CassandraSettings, keyspace: str, target: str, messages_per_second: int | None = None
) -> dict:
    """James 3.8.1's own task on `keyspace` (one harness JVM): its report without the list of fixed ids, and the
    task's own wall time (the JVM start and the Guice wiring excluded)."""
    arguments = [target, "--keyspace", keyspace]
    if messages_per_second is not None:
        arguments += ["--messages-per-second", str(messages_per_second)]
    log.info("bench: James %s %s on %s", target, messages_per_second or "", keyspace)
    outcome = james_harness.run(JAMES_VERSION, "solve", arguments, settings)
    report = dict(outcome["additionalInformation"])
    for listed in ("fixedInconsistencies", "errors", "failedMailboxes"):
        if listed in report:
            report[listed] = len(report[listed])
    report.pop("timestamp", None)
    report.pop("runningOptions", None)
    return {"seconds": outcome["seconds"], "result": outcome["result"], "report": report}


def _james_message_figures(run: dict, keyspace: str, messages: int) -> dict:
    report = run["report"]
    truth_rows = report["processedImapUidEntries"]
    return {
        "keyspace": keyspace,
        "messages": messages,
        "seconds": run["seconds"],
        "truthRowsPerSecond": round(truth_rows / run["seconds"]) if run["seconds"] else None,
        "result": run["result"],
        **report,
    }


def james_message_phases(
    spark,
    settings: CassandraSettings,
    *,
    messages: int,
    rate: float,
    sample: int,
    seed: int,
    full_rows: int,
    prefix: str = "bench_james",
) -> dict:
    """James's SolveMessageInconsistencies unthrottled and at its default rate, and James's report after our repair.

    They run on the bench keyspace of min(messages, sample) messages, broken at the same rate before each run (that
    is the benched keyspace itself when it is not larger than the sample). When the benched keyspace is larger, the
    unthrottled run is repeated on it if the sample's throughput puts it under JAMES_PHASE_LIMIT_SECONDS."""
    sample_messages = min(messages, sample)
    keyspace = bench_keyspace(sample_messages, prefix)
    measured_on = "the benched keyspace" if sample_messages == messages else f"a sample keyspace of {sample_messages}"
    figures = {"james": JAMES_VERSION, "sampleKeyspace": keyspace, "sampleMessages": sample_messages}

    broken = prepare_keyspace(spark, settings, keyspace, sample_messages, rate, seed + 2)["broken"]
    unthrottled = james_solve(settings, keyspace, "messages", JAMES_UNTHROTTLED)
    figures["unthrottled"] = {
        **_james_message_figures(unthrottled, keyspace, sample_messages),
        "broken": broken,
        "measuredOn": measured_on,
    }
    sample_rows = unthrottled["report"]["processedImapUidEntries"] + unthrottled["report"]["processedMessageIdEntries"]

    # Both passes are throttled: the task reads (truth + projection rows) / rate seconds at least.
    estimate = sample_rows / JAMES_DEFAULT_RATE
    if estimate <= JAMES_PHASE_LIMIT_SECONDS:
        broken = prepare_keyspace(spark, settings, keyspace, sample_messages, rate, seed + 3)["broken"]
        throttled = james_solve(settings, keyspace, "messages", JAMES_DEFAULT_RATE)
        figures["defaultRate"] = {
            **_james_message_figures(throttled, keyspace, sample_messages),
            "messagesPerSecond": JAMES_DEFAULT_RATE,
            "broken": broken,
            "measuredOn": measured_on,
        }
    else:
        figures["defaultRate"] = {
            "skipped": f"estimated {estimate:.0f} s > {JAMES_PHASE_LIMIT_SECONDS} s: lower --james-sample"
        }

    # Our repair on the same (re-broken) keyspace, then James: its report must add nothing.
    broken = prepare_keyspace(spark, settings, keyspace, sample_messages, rate, seed + 4)["broken"]
    ours = _timed(
        "repair (James sample)",
        spark,
        lambda: execute(spark, settings, RunOptions("messages", keyspace, mode="repair", allow_destructive=True)),
    )
    after = james_solve(settings, keyspace, "messages", JAMES_UNTHROTTLED)["report"]
    fixed_by_james = {
        name: after[name] for name in ("addedMessageIdEntries", "updatedMessageIdEntries", "removedMessageIdEntries")
    }
    figures["ourRepairOnSample"] = {
        "seconds": ours["seconds"],
        "truthRowsPerSecond": round(ours["result"]["processedImapUidEntries"] / ours["seconds"]),
        "broken": broken,
        "found": ours["result"]["inconsistencies"],
    }
    figures["jamesAfterOurRepair"] = {**fixed_by_james, "addsNothing": not any(fixed_by_james.values())}

    if sample_messages < messages:
        sample_rate = sample_rows / max(unthrottled["seconds"], 0.001)
        estimate = full_rows / sample_rate
        if estimate <= JAMES_PHASE_LIMIT_SECONDS:
            full_keyspace = bench_keyspace(messages, prefix)
            broken = prepare_keyspace(spark, settings, full_keyspace, messages, rate, seed + 5)["broken"]
            full = james_solve(settings, full_keyspace, "messages", JAMES_UNTHROTTLED)
            figures["unthrottledOnSample"] = figures["unthrottled"]
            figures["unthrottled"] = {
                **_james_message_figures(full, full_keyspace, messages),
                "broken": broken,
                "measuredOn": "the benched keyspace",
            }
        else:
            figures["unthrottled"]["fullRunEstimateSeconds"] = round(estimate)
    return figures


def bench_messages(
    spark,
    settings: CassandraSettings,
    *,
    messages: int,
    inconsistency_rate: float,
    reference_sample: int,
    seed: int,
    james_sample: int = 20_000,
    keyspace_prefix: str = "bench_james",
) -> dict:
    from james_consistency.projections.messages import message_columns
    from james_consistency.schema import detect_generation

    keyspace = bench_keyspace(messages, keyspace_prefix)
    preparation = prepare_keyspace(spark, settings, keyspace, messages, inconsistency_rate, seed)
    session = connect(settings, keyspace)
    generation = detect_generation(session, keyspace)
    close(session)
    columns = message_columns(generation)

    # Untimed: the first scan of a session runs in a cold JVM (about a third slower); every timed phase starts warm.
    bare_scan(spark, keyspace, columns)
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

    # The nightly DAG run on a keyspace broken at the benched rate (the reference fixed only its sample: what it left
    # is repaired first, untimed), then a dry run in token ranges uninterrupted and stopped at half of its ranges and
    # resumed (same ranges: the total work is compared).
    execute(spark, settings, RunOptions("messages", keyspace, mode="repair", allow_destructive=True))
    broken_for_nightly = prepare_keyspace(spark, settings, keyspace, messages, inconsistency_rate, seed + 2)["broken"]
    nightly_steps_cpu: dict = {}
    nightly = _timed(
        "nightly run (check, repair, verify)",
        spark,
        lambda: nightly_run(
            spark, settings, keyspace, str(LOCAL_DIR / "bench" / f"nightly-{keyspace}"), nightly_steps_cpu
        ),
    )
    prepare_keyspace(spark, settings, keyspace, messages, inconsistency_rate, seed + 3)
    ranged = _timed(
        "dry run in token ranges",
        spark,
        lambda: execute(spark, settings, RunOptions("messages", keyspace, mode="check", ranges=0, fresh=True)),
    )
    ranges = ranged["result"]["ranges"]["total"] // 2
    resumed = _timed(
        "dry run stopped at half and resumed",
        spark,
        lambda: stopped_and_resumed(spark, settings, keyspace, ranges),
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
        "nightlyRun": {
            "seconds": nightly["seconds"],
            "truthRowsPerSecond": rate(truth_rows, nightly),
            "broken": broken_for_nightly,
            "found": nightly["result"]["check"]["inconsistencies"],
            "fixed": {
                name: nightly["result"]["repair"][f"{name}MessageIdEntries"] for name in ("added", "updated", "removed")
            },
            "remainingAfterVerify": nightly["result"]["verify"]["remainingInconsistencies"],
            "verifiedCandidates": nightly["result"]["verify"]["verifiedCandidates"],
            "verifiedSample": nightly["result"]["verify"]["verifiedSample"],
            "ranges": nightly["result"]["check"]["ranges"]["total"],
            "steps": {step: report["durationSeconds"] for step, report in nightly["result"].items()},
            "stepsCpu": nightly_steps_cpu,
        },
        "dryRunInRanges": {
            "seconds": ranged["seconds"],
            "truthRowsPerSecond": rate(truth_rows, ranged),
            "ranges": ranged["result"]["ranges"]["total"],
        },
        "stoppedAndResumed": {
            "seconds": resumed["seconds"],
            "stoppedAfterRanges": resumed["result"]["stopped"]["ranges"]["done"],
            "stoppedStatus": resumed["result"]["stopped"]["status"],
            "resumedScannedRanges": resumed["result"]["resumed"]["ranges"]["scannedByThisRun"],
            "resumedStatus": resumed["result"]["resumed"]["status"],
            "sameFindings": resumed["result"]["resumed"]["inconsistencies"] == ranged["result"]["inconsistencies"],
        },
        "jamesStyleReference": {
            "seconds": reference["seconds"],
            "truthRowsPerSecond": rate(reference["result"]["processed"], reference),
            **reference["result"],
        },
        **driver_memory(
            (
                ("bareScan", scan),
                ("dryRun", check),
                ("repair", repair),
                ("nightlyRun", nightly),
                ("dryRunInRanges", ranged),
            )
        ),
        "driverPeakPythonRssMiB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "machineCpu": {
            phase: timed["cpu"]
            for phase, timed in (
                ("bareScan", scan),
                ("dryRun", check),
                ("repair", repair),
                ("nightlyRun", nightly),
                ("dryRunInRanges", ranged),
                ("stoppedAndResumed", resumed),
            )
        },
    }
    figures["ratios"] = {
        "repairTimeOverBareScanTime": round(repair["seconds"] / scan["seconds"], 2),
        "nightlyRunTimeOverBareScanTime": round(nightly["seconds"] / scan["seconds"], 2),
        # Where both phases keep every core busy, the time ratio cannot be lower than this one.
        "nightlyRunCpuOverBareScanCpu": round(nightly["cpu"]["cpuSeconds"] / max(scan["cpu"]["cpuSeconds"], 0.1), 2),
        "rangedDryRunTimeOverBareScanTime": round(ranged["seconds"] / scan["seconds"], 2),
        "stoppedAndResumedOverUninterrupted": round(resumed["seconds"] / ranged["seconds"], 2),
        "repairOverReferenceThroughput": round(
            figures["repair"]["truthRowsPerSecond"] / max(figures["jamesStyleReference"]["truthRowsPerSecond"], 1), 1
        ),
    }
    if not james_harness.is_built(JAMES_VERSION):
        figures["jamesSolveMessageInconsistencies"] = {"skipped": "the James 3.8.1 harness is not built: make setup"}
        return figures
    full_rows = truth_rows + repair["result"]["processedMessageIdEntries"]
    james = james_message_phases(
        spark,
        settings,
        messages=messages,
        rate=inconsistency_rate,
        sample=james_sample,
        prefix=keyspace_prefix,
        seed=seed,
        full_rows=full_rows,
    )
    figures["jamesSolveMessageInconsistencies"] = james
    ours = figures["repair"]["truthRowsPerSecond"]
    for name, phase in (("Unthrottled", "unthrottled"), ("DefaultRate", "defaultRate")):
        if james[phase].get("truthRowsPerSecond"):
            figures["ratios"][f"repairOverJames{name}Throughput"] = round(ours / james[phase]["truthRowsPerSecond"], 1)
            on_sample = james.get(f"{phase}OnSample", james[phase])
            figures["ratios"][f"repairOnSampleOverJames{name}Throughput"] = round(
                james["ourRepairOnSample"]["truthRowsPerSecond"] / on_sample["truthRowsPerSecond"], 1
            )
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


def bench_projection(
    spark,
    settings: CassandraSettings,
    target: str,
    *,
    messages: int,
    rate: float,
    seed: int,
    keyspace_prefix: str = "bench_james",
) -> dict:
    """The same bench for any other target, on the same seeded keyspace as `bench messages`: a bare scan of the
    tables the repair reads, its dry run and its repair (James has no repair to compare with for most of them)."""
    from james_consistency.engine.run import resolve_target

    from james_consistency_kit.faults import inject

    keyspace = bench_keyspace(messages, keyspace_prefix)
    seeded = prepare_keyspace(spark, settings, keyspace, messages, 0.0, seed)["seeded"]
    spec, _ = resolve_target(settings, target, keyspace)
    broken = {
        kind: inject(
            settings, keyspace=keyspace, kind=kind, rate=rate, random_seed=seed + int(time.time()), manifest_path=None
        )["count"]
        for kind in TARGET_FAULTS[target]
    }

    def bare_scan_of_spec() -> int:
        tables = {spec.truth.table: spec.truth.columns or None, spec.projection_table: spec.columns}
        tables.update({table: None for table in spec.truth.extra_tables})
        total = 0
        for table, columns in tables.items():
            frame = read_table(spark, keyspace, table, columns) if columns else _whole_table(spark, keyspace, table)
            total += frame.count()
        return total

    bare_scan_of_spec()  # untimed, as for messages: the timed phases start in a warm JVM
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

    james = None
    if target == "counters":
        james = james_counters_phases(settings, keyspace, truth_rows=truth_rows, rate=rate, seed=seed)

    figures = {
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
        **driver_memory((("bareScan", scan), ("dryRun", check), ("repair", repair))),
        "machineCpu": {"bareScan": scan["cpu"], "dryRun": check["cpu"], "repair": repair["cpu"]},
    }
    if james is not None:
        figures["jamesRecomputeMailboxCounters"] = james
        if james.get("truthRowsPerSecond"):
            figures["ratios"]["repairOverJamesThroughput"] = round(
                figures["repair"]["truthRowsPerSecond"] / james["truthRowsPerSecond"], 1
            )
    return figures


def _counter_rows(settings: CassandraSettings, keyspace: str) -> dict:
    session = connect(settings, keyspace)
    try:
        rows = session.execute(f"SELECT mailboxid, count, unseen FROM {keyspace}.mailboxcounters")
        return {row.mailboxid: (row.count, row.unseen) for row in rows}
    finally:
        close(session)


def james_counters_phases(
    settings: CassandraSettings, keyspace: str, *, truth_rows: int, rate: float, seed: int
) -> dict:
    """James's RecomputeMailboxCounters (it has no rate) on the benched keyspace: first right after our repair, where
    it must change no counter, then on the keyspace broken again at the same rate, timed."""
    from james_consistency_kit.faults import inject

    if not james_harness.is_built(JAMES_VERSION):
        return {"skipped": "the James 3.8.1 harness is not built: make setup"}
    before = _counter_rows(settings, keyspace)
    after_ours = james_solve(settings, keyspace, "counters")
    changed = sum(1 for mailbox, counts in _counter_rows(settings, keyspace).items() if before.get(mailbox) != counts)
    broken = {
        kind: inject(
            settings,
            keyspace=keyspace,
            kind=kind,
            rate=rate,
            random_seed=seed + 7 + int(time.time()),
            manifest_path=None,
        )["count"]
        for kind in TARGET_FAULTS["counters"]
    }
    timed = james_solve(settings, keyspace, "counters")
    return {
        "james": JAMES_VERSION,
        "measuredOn": "the benched keyspace",
        "broken": broken,
        "seconds": timed["seconds"],
        "truthRowsPerSecond": round(truth_rows / timed["seconds"]) if timed["seconds"] else None,
        "result": timed["result"],
        **timed["report"],
        "afterOurRepair": {
            "seconds": after_ours["seconds"],
            "result": after_ours["result"],
            "countersChangedByJames": changed,
            "addsNothing": changed == 0,
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
