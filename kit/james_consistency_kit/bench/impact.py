"""`bench impact`: what a night costs James's users, on one seeded and broken keyspace, in one run.

    prepare the keyspace -> a night untimed (a warm JVM) -> without traffic: a default night and an unthrottled one,
    twice in turn -> the client starts (client.py) -> no night -> a default night -> an unthrottled night -> a night
    at each fixed scan limit -> no night again -> the client stops -> its writes against the tables -> figures

A night is what the nightly DAG runs, in process: a check in token ranges keeping its scan, then the repair and the
verify reusing it, with the DAGs' defaults (a re-check delay of 5 s). Every step takes the load's limits, as in a
DAG run (the scan reads at them, the re-checks keep to the rate the scan ended at): a default night's are a
scheduled night's (the settings, the adaptive mode as JAMES_ADAPTIVE_RATE says), an unthrottled night has none, and
each night of the trade-off has a fixed limit. Before each night the keyspace
is broken again at the benched rate (messageIdTable rows missing or with stale flags: orphans are made by deleting
truth rows, which the client would then fail to update), and the client's operations in the seconds that take are
left out of every period.
"""

import logging
import multiprocessing
import shutil
import time
from dataclasses import dataclass, field
from datetime import datetime

from james_consistency.cassandra.cql import CassandraSettings, close, connect
from james_consistency.engine.load_limits import LoadLimits
from james_consistency.engine.run import GateFailed
from james_consistency.runtime.paths import LOCAL_DIR
from james_consistency.settings import setting

from james_consistency_kit.bench.client import ClientOptions, Record, run_client
from james_consistency_kit.bench.jobs import run_job
from james_consistency_kit.bench.keyspace import bench_keyspace, break_kinds, prepare_keyspace
from james_consistency_kit.bench.latency import between, over_time, per_kind, ratio, summary
from james_consistency_kit.bench.measure import CpuClock, local_cassandra_processes
from james_consistency_kit.bench.results import cassandra_nodes, cluster, machine, run_record
from james_consistency_kit.traffic import read_log, read_projections, undone_writes

log = logging.getLogger("james_consistency")

BROKEN_KINDS = ("projection-missing", "projection-stale-flags")
# The DAGs' default re-check delay (james_airflow.consistency_dag.repair_params).
DAG_RECHECK_DELAY_SECONDS = 5.0
# The fixed scan limits of the trade-off, as shares of the unthrottled night's scan rate without traffic.
LIMIT_SHARES = (0.05, 0.1, 0.25, 0.5)
# The targets of issue 68 on this machine.
P99_RATIO_TARGET = 2.0
DURATION_RATIO_TARGET = 1.25
# How long the client runs before its first period counts (its prepared statements, Cassandra's caches).
WARM_UP_SECONDS = 10.0
# The timeline's buckets: at 100 operations a second, 200 operations each, so that a bucket's p99 is not its maximum.
TIMELINE_BUCKET_SECONDS = 2.0


@dataclass
class ImpactBench:
    spark: object
    settings: CassandraSettings
    keyspace: str
    rate: float  # the share of messages broken before each night
    seed: int
    settle_seconds: float
    recheck_delay_seconds: float = DAG_RECHECK_DELAY_SECONDS
    work: object = None  # the nights' work folders
    breakings: int = 0
    origin: float = 0.0  # when the client's first period began (epoch seconds): the timeline's 0
    periods: list[dict] = field(default_factory=list)  # name, started, ended, night, cpu

    def break_again(self) -> dict:
        """Break the keyspace at the benched rate again (other rows each time), then let it settle."""
        self.breakings += 1
        share = self.rate / len(BROKEN_KINDS)
        broken = break_kinds(self.settings, self.keyspace, BROKEN_KINDS, share, self.seed + 1000 * self.breakings)
        time.sleep(self.settle_seconds)
        return broken

    def night(self, name: str, load: LoadLimits) -> dict:
        """One night (check, repair, verify), its scan at the `load` limits; its figures."""
        run_dir = self.work / name
        shutil.rmtree(run_dir, ignore_errors=True)
        common = {"run_dir": str(run_dir), "load": load, "recheck_delay_seconds": self.recheck_delay_seconds}
        steps = {
            "check": {"mode": "check", "ranges": 0, "fresh": True, **common},
            "repair": {"mode": "repair", "reuse_scan": True, "allow_destructive": True, **common},
            "verify": {"mode": "verify", "reuse_scan": True, **common},
        }
        reports, times = {}, {}
        for step, options in steps.items():
            started = time.time()
            try:
                reports[step] = run_job(self.spark, self.settings, "messages", self.keyspace, **options)
            except GateFailed as failed:  # the night's figures say which; the bench goes on
                reports[step] = {**failed.report, "failedGate": str(failed)}
            times[step] = (started, time.time())
            if "failedGate" in reports[step]:
                break
        log.info("bench impact: %s night in %.1fs", name, max(end for _, end in times.values()) - times["check"][0])
        return night_figures(name, load, reports, times)

    def period(self, name: str, action) -> dict:
        """Run `action` (a night, or a wait) as the period `name` of the traffic; what it returned."""
        started, cpu = time.time(), CpuClock.now(self.settings.port)
        result = action()
        self.periods.append(
            {
                "name": name,
                "started": started,
                "ended": time.time(),
                "night": result,
                "cpu": CpuClock.now(self.settings.port).since(cpu),
            }
        )
        return result


def bench_impact(
    spark,
    settings: CassandraSettings,
    *,
    messages: int,
    inconsistency_rate: float,
    ops_per_second: float,
    quiet_seconds: float = 60.0,
    settle_seconds: float = 5.0,
    scan_limits: tuple[int, ...] | None = None,
    repeats_without_traffic: int = 2,
    timeout_seconds: float = 2.0,
    seed: int = 42,
    keyspace_prefix: str = "bench_impact",
    recheck_delay_seconds: float = DAG_RECHECK_DELAY_SECONDS,
    warm_up_seconds: float = WARM_UP_SECONDS,
) -> dict:
    """Every period of the impact bench in order; its figures, ending with the run's record (results.py). The
    re-check delay and the client's warm-up are shortened only by the test of the bench itself."""
    started_on = machine()
    keyspace = bench_keyspace(messages, keyspace_prefix)
    bench = ImpactBench(spark, settings, keyspace, inconsistency_rate, seed, settle_seconds, recheck_delay_seconds)
    bench.work = LOCAL_DIR / "bench" / f"impact-{keyspace}"
    prepare_keyspace(
        spark,
        settings,
        keyspace,
        messages,
        0.0,
        seed,
        repair=lambda: run_job(spark, settings, "messages", keyspace, "repair", allow_destructive=True),
    )
    bench.break_again()
    bench.night("warm-up", unthrottled())  # the first scan of a session runs in a cold JVM

    alone = nights_without_traffic(bench, repeats_without_traffic)
    limits = scan_limits or derived_limits(alone["unthrottled"])
    traffic = ClientOptions(
        keyspace=keyspace,
        ops_per_second=ops_per_second,
        records_path=str(bench.work / "client-records.jsonl"),
        log_path=str(bench.work / "client-writes.jsonl"),
        timeout_seconds=timeout_seconds,
        seed=seed,
    )
    with client_running(settings, traffic):
        time.sleep(warm_up_seconds)
        bench.origin = time.time()
        bench.period("noNight", lambda: time.sleep(quiet_seconds))
        for name, load in (("defaultNight", default_load()), ("unthrottledNight", unthrottled())):
            bench.break_again()
            bench.period(name, lambda name=name, load=load: bench.night(name, load))
        for limit in limits:
            bench.break_again()
            bench.period(f"limit{limit}", lambda limit=limit: bench.night(f"limit{limit}", limited(limit)))
        bench.period("noNightAgain", lambda: time.sleep(quiet_seconds / 2))
    writes = user_writes(settings, keyspace, traffic.log_path)
    records = Record.read(traffic.records_path)
    result = figures(bench, records, traffic, alone, writes, messages)
    return {**result, "cluster": cluster(spark, settings, 1), **run_record(started_on)}


# ---- the night's load options -----------------------------------------------------------------------------------


def default_load() -> LoadLimits:
    """What a scheduled night's scan runs with (james_airflow.operators.run_load on a scheduled run)."""
    return LoadLimits.from_settings(adaptive=setting("JAMES_ADAPTIVE_RATE")).validate()


def unthrottled() -> LoadLimits:
    return LoadLimits(rows_per_second=0.0, adaptive=False)


def limited(rows_per_second: int) -> LoadLimits:
    """A fixed limit (a floor only matters to the adaptive mode, but may not be above the limit)."""
    return LoadLimits(rows_per_second=float(rows_per_second), floor=min(LoadLimits().floor, rows_per_second))


def derived_limits(unthrottled_nights: list[dict]) -> tuple[int, ...]:
    """LIMIT_SHARES of the unthrottled night's scan rate, to two significant digits."""
    rate = sum(night["scanRowsPerSecond"] for night in unthrottled_nights) / len(unthrottled_nights)
    return tuple(int(float(f"{rate * share:.2g}")) for share in LIMIT_SHARES)


# ---- the periods ------------------------------------------------------------------------------------------------


def nights_without_traffic(bench: ImpactBench, repeats: int) -> dict:
    """A default night and an unthrottled one, `repeats` times in turn, on a keyspace broken again for each."""
    nights = {"default": [], "unthrottled": []}
    for number in range(1, repeats + 1):
        for kind, load in (("default", default_load()), ("unthrottled", unthrottled())):
            bench.break_again()
            nights[kind].append(bench.night(f"alone-{kind}-{number}", load))
    return nights


class client_running:
    """The client in a process of its own while the block runs: started, and ready (it loaded what it serves) when
    the block begins; stopped after it, its records written."""

    def __init__(self, settings: CassandraSettings, options: ClientOptions):
        context = multiprocessing.get_context("spawn")
        self.ready, self.stop = context.Event(), context.Event()
        self.process = context.Process(
            target=run_client, args=(settings, options, self.ready, self.stop), name="impact-client", daemon=True
        )

    def __enter__(self):
        self.process.start()
        deadline = time.monotonic() + 600
        while not self.ready.wait(1.0):
            if not self.process.is_alive() or time.monotonic() > deadline:
                self.process.kill()
                raise RuntimeError("the impact bench's client did not start (see its output above)")
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.process.join(300)
        if self.process.exitcode != 0 and exc[0] is None:
            raise RuntimeError(f"the impact bench's client failed (exit code {self.process.exitcode})")


def user_writes(settings: CassandraSettings, keyspace: str, log_path: str) -> dict:
    """The client's writes against the projection tables now: what a night undid (none, or the bench failed its
    promise)."""
    logged = read_log(log_path)
    session = connect(settings, keyspace)
    try:
        undone = undone_writes(logged, read_projections(session, keyspace))
    finally:
        close(session)
    return {"logged": len(logged), "undone": len(undone), "undoneSample": [str(write) for write in undone[:5]]}


# ---- the figures ------------------------------------------------------------------------------------------------


def night_figures(name: str, load: LoadLimits, reports: dict, times: dict) -> dict:
    """A night's figures from its steps' reports (a step whose gate failed ends it: the later ones are missing)."""
    check, repair, verify = (reports.get(step, {}) for step in ("check", "repair", "verify"))
    failed = next(
        (f"{step}: {report['failedGate']}" for step, report in reports.items() if "failedGate" in report), None
    )
    rows = sum((check.get("rowsScanned") or {}).values())
    scan_seconds = (check.get("load") or {}).get("scanSeconds") or check["durationSeconds"]
    return {
        "name": name,
        "load": {
            "scanRowsPerSecond": load.rows_per_second,
            "adaptive": load.adaptive,
            "latencyTargetMs": load.latency_target_ms,
            "rateFloorRowsPerSecond": load.floor,
        },
        "seconds": round(max(end for _, end in times.values()) - times["check"][0], 3),
        "steps": {step: round(end - start, 3) for step, (start, end) in times.items()},
        "stepTimes": {step: [start, end] for step, (start, end) in times.items()},
        "found": check.get("inconsistencies", {}),
        "fixed": {kind: repair.get(f"{kind}MessageIdEntries", 0) for kind in ("added", "updated", "removed")},
        "remainingAfterVerify": verify.get("remainingInconsistencies"),
        **({"failedGate": failed} if failed else {}),
        **({"remainingSample": verify["remainingSample"][:5]} if verify.get("remainingInconsistencies") else {}),
        "rowsScanned": rows,
        "scanRowsPerSecond": round(rows / scan_seconds) if scan_seconds else None,
        "truthRows": (check.get("rowsScanned") or {}).get("truth"),
        # The night's own account of its load (the rate over time, how long it held back), where the product has it.
        **({"loadReport": check["load"]} if check.get("load") else {}),
        **({"scanTimes": scan_times(check["load"])} if scan_times(check.get("load")) else {}),
    }


def scan_times(load: dict | None) -> list[float] | None:
    """When the scan itself read (epoch seconds): from its first batch of ranges' start to its last one's end, as the
    report's `load.rate` says (None without it)."""
    batches = [batch for batch in (load or {}).get("rate") or [] if batch.get("at") and batch.get("seconds")]
    if not batches:
        return None
    starts = [datetime.fromisoformat(batch["at"]).timestamp() for batch in batches]
    return [min(starts), max(start + batch["seconds"] for start, batch in zip(starts, batches, strict=True))]


def figures(bench: ImpactBench, records: list[Record], traffic: ClientOptions, alone: dict, writes: dict, size) -> dict:
    periods = {}
    for period in bench.periods:
        during = between(records, period["started"], period["ended"])
        periods[period["name"]] = {
            "startSecond": round(period["started"] - bench.origin, 1),
            "seconds": round(period["ended"] - period["started"], 1),
            "latency": per_kind(during),
            "machineCpu": period["cpu"],
            **({"night": _relative(period["night"], bench.origin)} if period["night"] else {}),
        }
    quiet = periods["noNight"]["latency"]["all"]
    for period in periods.values():
        period["p99OverNoNight"] = ratio(period["latency"]["all"], quiet)
        scan = period.get("night", {}).get("scanTimes")
        if scan:  # the part of the night the scan's limit governs
            period["duringScan"] = summary(between(records, bench.origin + scan[0], bench.origin + scan[1]))
            period["p99OverNoNightDuringScan"] = ratio(period["duringScan"], quiet)
    default, unlimited = periods["defaultNight"], periods["unthrottledNight"]
    alone_seconds = {kind: _mean([night["seconds"] for night in nights]) for kind, nights in alone.items()}
    under_traffic = [period["night"] for period in periods.values() if "night" in period]
    failures = default["latency"]["all"]["errors"] + default["latency"]["all"]["timeouts"]
    ratios = {
        "defaultNightP99OverNoNight": default["p99OverNoNight"],
        "unthrottledNightP99OverNoNight": unlimited["p99OverNoNight"],
        "defaultOverUnthrottledWithoutTraffic": round(alone_seconds["default"] / alone_seconds["unthrottled"], 2),
        "defaultOverUnthrottledUnderTraffic": round(default["night"]["seconds"] / unlimited["night"]["seconds"], 2),
    }
    others = len(local_cassandra_processes()) - cassandra_nodes(bench.settings)
    return {
        "target": "impact",
        "keyspace": bench.keyspace,
        "messages": default["night"]["truthRows"] or size,
        "inconsistencyRate": bench.rate,
        "traffic": {
            "opsPerSecond": traffic.ops_per_second,
            "mix": traffic.mix,
            "timeoutSeconds": traffic.timeout_seconds,
            "operations": len(records),
        },
        "periods": periods,
        "tradeOff": trade_off(periods),
        "withoutTraffic": {
            "nights": {kind: [_relative(night, None) for night in nights] for kind, nights in alone.items()},
            "meanSeconds": alone_seconds,
        },
        "userWrites": writes,
        "timeline": {
            "origin": bench.origin,
            "bucketSeconds": TIMELINE_BUCKET_SECONDS,
            "buckets": over_time(records, bench.origin, TIMELINE_BUCKET_SECONDS),
        },
        "ratios": ratios,
        "targets": {
            "defaultNightP99WithinTwice": _target(ratios["defaultNightP99OverNoNight"], P99_RATIO_TARGET),
            "noFailureDuringDefaultNight": {"value": failures, "limit": 0, "met": failures == 0},
            "defaultNightWithoutTrafficWithin125": _target(
                ratios["defaultOverUnthrottledWithoutTraffic"], DURATION_RATIO_TARGET
            ),
            "convergesUnderTraffic": {
                "value": sum(night["remainingAfterVerify"] or 0 for night in under_traffic),
                "limit": 0,
                "met": all(night["remainingAfterVerify"] == 0 for night in under_traffic),
            },
            "noUserWriteUndone": {"value": writes["undone"], "limit": 0, "met": writes["undone"] == 0},
        },
        "otherCassandraJvmsOnTheMachine": max(others, 0),
    }


def trade_off(periods: dict) -> list[dict]:
    """Each night under traffic: its scan limit (None: none) and whether it adapted, its duration and the traffic's p99
    over the p99 without a night."""
    return [
        {
            "night": name,
            "scanRowsPerSecond": period["night"]["load"]["scanRowsPerSecond"] or None,
            "adaptive": period["night"]["load"]["adaptive"],
            "nightSeconds": period["night"]["seconds"],
            "p99OverNoNight": period["p99OverNoNight"],
            "p99OverNoNightDuringScan": period.get("p99OverNoNightDuringScan"),
        }
        for name, period in periods.items()
        if "night" in period
    ]


def _relative(night: dict, origin: float | None) -> dict:
    """A night's figures with its steps' and its scan's times in seconds since `origin` (without them when there is
    none)."""
    rest = {key: value for key, value in night.items() if key not in ("stepTimes", "scanTimes")}
    if origin is None:
        return rest

    def since(times: list[float]) -> list[float]:
        return [round(moment - origin, 1) for moment in times]

    steps = {step: since(times) for step, times in night["stepTimes"].items()}
    return {**rest, "stepTimes": steps, **({"scanTimes": since(night["scanTimes"])} if "scanTimes" in night else {})}


def _target(value: float | None, limit: float) -> dict:
    return {"value": value, "limit": limit, "met": value is not None and value <= limit}


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 3)
