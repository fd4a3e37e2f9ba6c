"""`bench messages`: the phases of the messageIdTable repair's bench, in one Spark session, on one broken keyspace.

    prepare the keyspace -> bare scan -> dry run -> repair -> James-style reference -> nightly run
      -> dry run in token ranges, then stopped at half and resumed -> James's own task -> figures

Each phase that repairs faces a keyspace broken again at the benched rate; each is timed with its processor time and
the driver's heap (measure.py).
"""

import resource
import time
from dataclasses import dataclass, field
from functools import partial

from james_consistency.cassandra.cql import CassandraSettings, close, connect
from james_consistency.runtime.paths import LOCAL_DIR

from james_consistency_kit import james_harness
from james_consistency_kit.bench.james import NOT_BUILT, james_message_phases
from james_consistency_kit.bench.jobs import read_table, run_job
from james_consistency_kit.bench.keyspace import (
    JAMES_VERSION,
    RESEED_BELOW,
    bench_keyspace,
    bench_prefix,
    prepare_keyspace,
)
from james_consistency_kit.bench.measure import CpuClock, Timed, driver_memory, timed
from james_consistency_kit.bench.results import cluster, machine, run_record


@dataclass
class MessagesBench:
    """One `bench messages`: where it runs, what it benches, and each timed phase by its name in the figures."""

    spark: object
    settings: CassandraSettings
    keyspace: str
    messages: int
    rate: float
    seed: int
    replication_factor: int = 1
    columns: tuple[str, ...] = ()
    preparation: dict = field(default_factory=dict)
    phases: dict[str, Timed] = field(default_factory=dict)
    nightly_broken: dict = field(default_factory=dict)
    nightly_steps_cpu: dict = field(default_factory=dict)

    def run(self, mode: str, **options) -> dict:
        return run_job(self.spark, self.settings, "messages", self.keyspace, mode, **options)

    def time(self, phase: str, label: str, action) -> Timed:
        self.phases[phase] = timed(label, self.spark, self.settings.port, action)
        return self.phases[phase]

    def break_again(self, offset: int) -> dict:
        """Break the keyspace at the benched rate again (other rows: the seed moves); what was broken."""
        keyspace, messages, seed = self.keyspace, self.messages, self.seed + offset
        return prepare_keyspace(
            self.spark, self.settings, keyspace, messages, self.rate, seed, self.replication_factor
        )["broken"]

    @property
    def truth_rows(self) -> int:
        return self.phases["repair"].result["processedImapUidEntries"]


def bench_messages(
    spark,
    settings: CassandraSettings,
    *,
    messages: int,
    inconsistency_rate: float,
    reference_sample: int,
    seed: int,
    james_sample: int = 20_000,
    keyspace_prefix: str | None = None,
    replication_factor: int = 1,
) -> dict:
    """Every phase, in order, on the keyspace of `messages` messages broken at `inconsistency_rate` (seeded with
    `replication_factor` replicas); the figures, ending with the run's record (results.py)."""
    started_on = machine()
    keyspace_prefix = keyspace_prefix or bench_prefix(replication_factor)
    keyspace = bench_keyspace(messages, keyspace_prefix)
    bench = MessagesBench(spark, settings, keyspace, messages, inconsistency_rate, seed, replication_factor)
    prepare(bench)
    time_bare_scan(bench)
    time_dry_run(bench)
    time_repair(bench)
    time_reference(bench, reference_sample)
    time_nightly_run(bench)
    time_stopped_and_resumed(bench)
    result = figures(bench)
    result["jamesSolveMessageInconsistencies"] = james = james_own_task(bench, james_sample, keyspace_prefix)
    result["ratios"].update(james_ratios(result["repair"]["truthRowsPerSecond"], james))
    return {**result, "cluster": cluster(spark, settings, replication_factor), **run_record(started_on)}


# ---- the phases ------------------------------------------------------------------------------------------------


def prepare(bench: MessagesBench) -> None:
    """Seed the keyspace (or reuse it, unless it lost too many messages), break it at the benched rate, and read which
    schema it holds."""
    from james_consistency.cassandra.schema import detect_generation
    from james_consistency.projections.messages import message_columns

    bench.preparation = prepare_keyspace(
        bench.spark,
        bench.settings,
        bench.keyspace,
        bench.messages,
        bench.rate,
        bench.seed,
        bench.replication_factor,
        repair=lambda: bench.run("repair", allow_destructive=True),
        reseed_below=RESEED_BELOW,
    )
    session = connect(bench.settings, bench.keyspace)
    try:
        bench.columns = message_columns(detect_generation(session, bench.keyspace))
    finally:
        close(session)


def time_bare_scan(bench: MessagesBench) -> None:
    """The floor. Once untimed first: the first scan of a session runs in a cold JVM (about a third slower); every
    timed phase starts warm."""
    bare_scan(bench.spark, bench.keyspace, bench.columns)
    bench.time("bareScan", "bare scan", partial(bare_scan, bench.spark, bench.keyspace, bench.columns))


def time_dry_run(bench: MessagesBench) -> None:
    bench.time("dryRun", "dry run", lambda: bench.run("check"))


def time_repair(bench: MessagesBench) -> None:
    bench.time("repair", "repair", lambda: bench.run("repair", allow_destructive=True))


def time_reference(bench: MessagesBench, sample: int) -> None:
    """The reference repairs what the Spark repair already fixed: the keyspace is broken again, so it has the same
    work."""
    bench.break_again(1)
    reference = partial(james_style_reference, bench.settings, bench.keyspace, bench.columns, sample)
    bench.time("jamesStyleReference", "James-style reference", reference)


def time_nightly_run(bench: MessagesBench) -> None:
    """The nightly DAG run on a keyspace broken at the benched rate (the reference fixed only its sample: what it
    left is repaired first, untimed)."""
    bench.run("repair", allow_destructive=True)
    bench.nightly_broken = bench.break_again(2)
    run_dir = str(LOCAL_DIR / "bench" / f"nightly-{bench.keyspace}")
    nightly = partial(nightly_run, bench.spark, bench.settings, bench.keyspace, run_dir, bench.nightly_steps_cpu)
    bench.time("nightlyRun", "nightly run (check, repair, verify)", nightly)


def time_stopped_and_resumed(bench: MessagesBench) -> None:
    """A dry run in token ranges, uninterrupted, then stopped at half of its ranges and resumed (the same ranges:
    the total work is compared)."""
    bench.break_again(3)
    ranged = bench.time("dryRunInRanges", "dry run in token ranges", lambda: bench.run("check", ranges=0, fresh=True))
    half = ranged.result["ranges"]["total"] // 2
    resumed = partial(stopped_and_resumed, bench.spark, bench.settings, bench.keyspace, half)
    bench.time("stoppedAndResumed", "dry run stopped at half and resumed", resumed)


def james_own_task(bench: MessagesBench, sample: int, prefix: str) -> dict:
    """James 3.8.1's SolveMessageInconsistencies (james.py), when its harness is built."""
    if not james_harness.is_built(JAMES_VERSION):
        return dict(NOT_BUILT)
    return james_message_phases(
        bench.spark,
        bench.settings,
        messages=bench.messages,
        rate=bench.rate,
        sample=sample,
        prefix=prefix,
        seed=bench.seed,
        replication_factor=bench.replication_factor,
        full_rows=bench.truth_rows + bench.phases["repair"].result["processedMessageIdEntries"],
    )


# ---- the figures ----------------------------------------------------------------------------------------------

# The phases whose driver heap, and whose processor time, the figures give.
MEMORY_PHASES = ("bareScan", "dryRun", "repair", "nightlyRun", "dryRunInRanges")
CPU_PHASES = (*MEMORY_PHASES, "stoppedAndResumed")


def figures(bench: MessagesBench) -> dict:
    """The bench's JSON (without James's own task): each phase's time and throughput, what the nightly run found
    and fixed, the driver's memory, the machine's processor time, and the ratios."""
    phases, truth_rows = bench.phases, bench.truth_rows
    repair = phases["repair"].result
    return {
        "keyspace": bench.keyspace,
        "messages": truth_rows,
        "inconsistencyRate": bench.rate,
        "broken": bench.preparation["broken"],
        "found": repair["inconsistencies"],
        "fixed": _fixed(repair),
        "bareScan": {
            "seconds": phases["bareScan"].seconds,
            "rowsPerSecond": phases["bareScan"].per_second(phases["bareScan"].result),
            "rowsScanned": phases["bareScan"].result,
        },
        "dryRun": _throughput(phases["dryRun"], truth_rows),
        # Every write of the repair recorded its before-image first (what `undo` takes back): their cost is in here.
        "repair": {**_throughput(phases["repair"], truth_rows), "beforeImages": _images(repair)},
        "nightlyRun": _nightly_figures(bench),
        "dryRunInRanges": {
            **_throughput(phases["dryRunInRanges"], truth_rows),
            "ranges": phases["dryRunInRanges"].result["ranges"]["total"],
        },
        "stoppedAndResumed": _resumed_figures(phases["stoppedAndResumed"], phases["dryRunInRanges"]),
        "jamesStyleReference": {
            **_throughput(phases["jamesStyleReference"], phases["jamesStyleReference"].result["processed"]),
            **phases["jamesStyleReference"].result,
        },
        **driver_memory({name: phases[name] for name in MEMORY_PHASES}),
        "driverPeakPythonRssMiB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "machineCpu": {name: phases[name].cpu for name in CPU_PHASES},
        "ratios": ratios(phases),
    }


def ratios(phases: dict[str, Timed]) -> dict:
    scan, nightly, ranged = phases["bareScan"], phases["nightlyRun"], phases["dryRunInRanges"]
    repair_rate = phases["repair"].per_second(phases["repair"].result["processedImapUidEntries"])
    reference = phases["jamesStyleReference"]
    return {
        "repairTimeOverBareScanTime": round(phases["repair"].seconds / scan.seconds, 2),
        "nightlyRunTimeOverBareScanTime": round(nightly.seconds / scan.seconds, 2),
        # Where both phases keep every core busy, the time ratio cannot be lower than this one.
        "nightlyRunCpuOverBareScanCpu": round(nightly.cpu["cpuSeconds"] / max(scan.cpu["cpuSeconds"], 0.1), 2),
        "rangedDryRunTimeOverBareScanTime": round(ranged.seconds / scan.seconds, 2),
        "stoppedAndResumedOverUninterrupted": round(phases["stoppedAndResumed"].seconds / ranged.seconds, 2),
        "repairOverReferenceThroughput": round(
            repair_rate / max(reference.per_second(reference.result["processed"]), 1), 1
        ),
    }


def james_ratios(ours: int, james: dict) -> dict:
    """Our repair's throughput over James's own task's, unthrottled and at its default rate, on the benched keyspace
    and on the sample keyspace."""
    figures = {}
    for name, phase in (("Unthrottled", "unthrottled"), ("DefaultRate", "defaultRate")):
        if james.get(phase, {}).get("truthRowsPerSecond"):
            figures[f"repairOverJames{name}Throughput"] = round(ours / james[phase]["truthRowsPerSecond"], 1)
            on_sample = james.get(f"{phase}OnSample", james[phase])
            figures[f"repairOnSampleOverJames{name}Throughput"] = round(
                james["ourRepairOnSample"]["truthRowsPerSecond"] / on_sample["truthRowsPerSecond"], 1
            )
    return figures


def _throughput(phase: Timed, truth_rows: int) -> dict:
    return {"seconds": phase.seconds, "truthRowsPerSecond": phase.per_second(truth_rows)}


def _images(report: dict) -> int:
    return (report.get("beforeImages") or {}).get("records", 0)


def _fixed(report: dict) -> dict:
    return {name: report[f"{name}MessageIdEntries"] for name in ("added", "updated", "removed")}


def _nightly_figures(bench: MessagesBench) -> dict:
    nightly = bench.phases["nightlyRun"]
    check, repair, verify = (nightly.result[step] for step in ("check", "repair", "verify"))
    return {
        **_throughput(nightly, bench.truth_rows),
        "broken": bench.nightly_broken,
        "found": check["inconsistencies"],
        "fixed": _fixed(repair),
        "beforeImages": _images(repair),
        "remainingAfterVerify": verify["remainingInconsistencies"],
        "verifiedCandidates": verify["verifiedCandidates"],
        "verifiedSample": verify["verifiedSample"],
        "ranges": check["ranges"]["total"],
        "steps": {step: report["durationSeconds"] for step, report in nightly.result.items()},
        "stepsCpu": bench.nightly_steps_cpu,
    }


def _resumed_figures(resumed: Timed, uninterrupted: Timed) -> dict:
    stopped, second = resumed.result["stopped"], resumed.result["resumed"]
    return {
        "seconds": resumed.seconds,
        "stoppedAfterRanges": stopped["ranges"]["done"],
        "stoppedStatus": stopped["status"],
        "resumedScannedRanges": second["ranges"]["scannedByThisRun"],
        "resumedStatus": second["status"],
        "sameFindings": second["inconsistencies"] == uninterrupted.result["inconsistencies"],
    }


# ---- what the phases run ---------------------------------------------------------------------------------------


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
        "check": {"mode": "check", "ranges": 0, "run_dir": run_dir},
        "repair": {"mode": "repair", "allow_destructive": True, "run_dir": run_dir, "reuse_scan": True},
        "verify": {"mode": "verify", "run_dir": run_dir, "reuse_scan": True},
    }
    reports = {}
    for step, options in steps.items():
        started = CpuClock.now(settings.port)
        reports[step] = run_job(spark, settings, "messages", keyspace, **options)
        if cpu is not None:
            cpu[step] = CpuClock.now(settings.port).since(started)
    return reports


def stopped_and_resumed(spark, settings: CassandraSettings, keyspace: str, ranges: int) -> dict:
    """A dry run in `ranges` token ranges per table stopped after half of them, then resumed by the next run."""
    stopped = run_job(spark, settings, "messages", keyspace, "check", ranges=ranges, max_ranges=ranges, fresh=True)
    resumed = run_job(spark, settings, "messages", keyspace, "check")
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
