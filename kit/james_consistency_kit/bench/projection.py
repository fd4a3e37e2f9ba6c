"""`bench <target>` for every target but messages: on the same seeded keyspace as `bench messages`, a bare scan of
the tables the repair reads, its dry run and its repair (James has no repair to compare with, but for counters)."""

import time

from james_consistency.cassandra.cql import CassandraSettings

from james_consistency_kit.bench.james import james_counters_phases
from james_consistency_kit.bench.jobs import read_table, run_job, target_spec
from james_consistency_kit.bench.keyspace import (
    TARGET_FAULTS,
    bench_keyspace,
    bench_prefix,
    break_kinds,
    prepare_keyspace,
)
from james_consistency_kit.bench.measure import driver_memory, timed
from james_consistency_kit.bench.results import cluster, machine, run_record


def bench_projection(
    spark,
    settings: CassandraSettings,
    target: str,
    *,
    messages: int,
    rate: float,
    seed: int,
    keyspace_prefix: str | None = None,
    replication_factor: int = 1,
) -> dict:
    started_on = machine()
    keyspace = bench_keyspace(messages, keyspace_prefix or bench_prefix(replication_factor))
    seeded = prepare_keyspace(spark, settings, keyspace, messages, 0.0, seed, replication_factor)["seeded"]
    spec = target_spec(settings, target, keyspace)
    broken = break_kinds(settings, keyspace, TARGET_FAULTS[target], rate, seed + int(time.time()))

    def bare_scan_of_spec() -> int:
        tables = {spec.truth.table: spec.truth.columns or None, spec.projection_table: spec.columns}
        tables.update({table: None for table in spec.truth.extra_tables})
        total = 0
        for table, columns in tables.items():
            frame = read_table(spark, keyspace, table, columns) if columns else _whole_table(spark, keyspace, table)
            total += frame.count()
        return total

    def run(mode: str, **options) -> dict:
        return run_job(spark, settings, target, keyspace, mode, **options)

    bare_scan_of_spec()  # untimed, as for messages: the timed phases start in a warm JVM
    scan = timed("bare scan", spark, settings.port, bare_scan_of_spec)
    check = timed("dry run", spark, settings.port, lambda: run("check"))
    repair = timed("repair", spark, settings.port, lambda: run("repair", allow_destructive=True))
    names = spec.report_names
    truth_rows = repair.result[names.processed_truth]
    james = None
    if target == "counters":
        james = james_counters_phases(settings, keyspace, truth_rows=truth_rows, rate=rate, seed=seed)

    figures = {
        "target": target,
        "keyspace": keyspace,
        "messages": seeded.get("messages", messages),
        "inconsistencyRate": rate,
        "truthRows": truth_rows,
        "projectionRows": repair.result[names.processed_projection],
        "broken": broken,
        "found": repair.result["inconsistencies"],
        "fixed": {
            "added": repair.result[names.added],
            "updated": repair.result[names.updated],
            "removed": repair.result[names.removed],
            "failed": repair.result.get("failedCount", 0),
        },
        "status": repair.result["status"],
        "bareScan": {
            "seconds": scan.seconds,
            "rowsScanned": scan.result,
            "rowsPerSecond": scan.per_second(scan.result),
        },
        "dryRun": {"seconds": check.seconds, "truthRowsPerSecond": check.per_second(truth_rows)},
        "repair": {"seconds": repair.seconds, "truthRowsPerSecond": repair.per_second(truth_rows)},
        "ratios": {"repairTimeOverBareScanTime": round(repair.seconds / max(scan.seconds, 0.001), 2)},
        **driver_memory({"bareScan": scan, "dryRun": check, "repair": repair}),
        "machineCpu": {"bareScan": scan.cpu, "dryRun": check.cpu, "repair": repair.cpu},
    }
    if james is not None:
        figures["jamesRecomputeMailboxCounters"] = james
        if james.get("truthRowsPerSecond"):
            figures["ratios"]["repairOverJamesThroughput"] = round(
                figures["repair"]["truthRowsPerSecond"] / james["truthRowsPerSecond"], 1
            )
    return {**figures, "cluster": cluster(spark, settings, replication_factor), **run_record(started_on)}


def _whole_table(spark, keyspace: str, table: str):
    return spark.read.format("org.apache.spark.sql.cassandra").options(keyspace=keyspace, table=table.lower()).load()
