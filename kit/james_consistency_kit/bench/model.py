"""A model of a night on any cluster, from constants the messages bench measures (`bench model`).

A night (the nightly DAG run: check, repair, verify) costs, in processor time:
- on Cassandra: the scan (CPU per row read, both tables) and the re-checks (CPU per candidate re-checked);
- on Spark (the driver and the executors): the scan's kept rows and the diff (CPU per row read) and the re-checks
  (CPU per candidate: reading the live rows, deciding, writing the fix and its before-image);
- a fixed part per night (job start-up, gates, Spark's scheduling), the intercept of two bench sizes: wall seconds,
  and the processor seconds each side spends in them.

The candidates of a night are what it finds (its broken share of the messages) re-checked twice (the repair, then
the verify), and the verify's sample of consistent keys once. With Cassandra and Spark on machines of their own, the
slower side bounds the night; on shared cores (this machine) their CPU adds up on the same cores:

    separate   wall = fixed + max(Cassandra CPU / (nodes x cores per node x share of them for the night),
                                  Spark CPU / executor cores)
    shared     wall = fixed + (Cassandra CPU + Spark CPU) / cores

A night whose scan reads at most R rows a second across the cluster (JAMES_SCAN_ROWS_PER_SECOND) reads its rows in
no less than rows / R seconds, and re-checks its candidates after the scan at their own pace:

    at R       wall = fixed + max(the night above without its fixed part, rows / R + re-checks alone)

so the rate at which a night just fits its window is rows / (window - fixed - re-checks alone).

Constants come from one bench file (the fixed part then 0), or two of different sizes (per row and per candidate
from the difference, the fixed part from the rest); by default the newest runs on one node. Runs of the bench on the
local ring and Spark standalone cluster (`--replication-factor 3`, SPARK_MASTER) are not fitted on: the model
predicts them, which checks its costs per row and per candidate against replicated reads and writes and executors
in processes of their own.
"""

from dataclasses import dataclass, replace

from james_consistency_kit.bench.results import BenchFile, on_one_node, where

# The verify's sample of consistent keys (engine.run.RunOptions.verify_sample_fraction's default).
VERIFY_SAMPLE_FRACTION = 0.001


@dataclass(frozen=True)
class Measured:
    """One nightly run of the bench, as the model reads it."""

    messages: int
    rows_read: int  # both tables, every row
    candidates: int  # re-checks of the repair and the verify
    seconds: float
    cassandra_scan_cpu: float  # the nightly check's Cassandra CPU seconds
    spark_scan_cpu: float  # the nightly check's other CPU seconds
    cassandra_recheck_cpu: float  # the repair's and verify's Cassandra CPU seconds
    spark_recheck_cpu: float
    cores: int
    # The bench's seeded size: its keyspace (a night's breakage leaves another count of messages in the same one).
    size: str = ""
    # Where it ran: one node and local Spark (what the constants are fitted on), or a ring and a Spark cluster.
    one_node: bool = True
    where: str = ""
    # The machine's processor: runs on another machine are not comparable (see on_a_cluster).
    processor: str = ""

    @staticmethod
    def in_bench(figures: dict) -> bool:
        """Whether a bench file has what the model reads (older files lack the nightly steps' processor time)."""
        nightly = figures.get("nightlyRun", {})
        return "found" in nightly and {"check", "repair", "verify"} <= set(nightly.get("stepsCpu", {}))

    @classmethod
    def from_bench(cls, figures: dict) -> "Measured":
        nightly = figures["nightlyRun"]
        steps = nightly["stepsCpu"]
        found = sum(nightly["found"].values())
        rows_per_message = figures["bareScan"]["rowsScanned"] / max(figures["messages"], 1)

        def spark(step: str) -> float:
            return steps[step]["cpuSeconds"] - steps[step]["cassandraCpuSeconds"]

        return cls(
            messages=figures["messages"],
            rows_read=round(rows_per_message * figures["messages"]),
            candidates=found + nightly["verifiedCandidates"] + nightly["verifiedSample"],
            seconds=nightly["seconds"],
            cassandra_scan_cpu=steps["check"]["cassandraCpuSeconds"],
            spark_scan_cpu=spark("check"),
            cassandra_recheck_cpu=steps["repair"]["cassandraCpuSeconds"] + steps["verify"]["cassandraCpuSeconds"],
            spark_recheck_cpu=spark("repair") + spark("verify"),
            cores=steps["check"]["cores"],
            size=figures.get("keyspace", str(figures["messages"])),
            one_node=on_one_node(figures),
            where=where(figures),
            processor=figures.get("machine", {}).get("processor", ""),
        )


@dataclass(frozen=True)
class Constants:
    """What a night costs per row read, per candidate re-checked, and once (seconds of processor time; wall seconds
    for the fixed part)."""

    cassandra_cpu_per_row: float
    spark_cpu_per_row: float
    cassandra_cpu_per_candidate: float
    spark_cpu_per_candidate: float
    fixed_seconds: float
    rows_per_message: float
    fixed_cassandra_cpu: float = 0.0
    fixed_spark_cpu: float = 0.0

    @classmethod
    def measured(cls, runs: list[Measured]) -> "Constants":
        """From one run (no fixed part), or from the smallest and the largest of several: the costs per row and
        per candidate from their difference, the fixed part from what the smallest run's wall time has beyond them."""
        runs = sorted(runs, key=lambda run: run.messages)
        small, large = runs[0], runs[-1]
        two_sizes = large.rows_read > small.rows_read
        base = _difference(large, small) if two_sizes else large
        rows, candidates = max(base.rows_read, 1), max(base.candidates, 1)
        variable = cls(
            cassandra_cpu_per_row=max(base.cassandra_scan_cpu, 0.0) / rows,
            spark_cpu_per_row=max(base.spark_scan_cpu, 0.0) / rows,
            cassandra_cpu_per_candidate=max(base.cassandra_recheck_cpu, 0.0) / candidates,
            spark_cpu_per_candidate=max(base.spark_recheck_cpu, 0.0) / candidates,
            fixed_seconds=0.0,
            rows_per_message=large.rows_read / max(large.messages, 1),
        )
        if not two_sizes:
            return variable
        small_night = Night(small.messages, small.candidates / max(small.messages, 1), variable)
        cassandra, spark = small_night.cpu()
        return replace(
            variable,
            fixed_seconds=max(small.seconds - small_night.shared(small.cores)["seconds"], 0.0),
            fixed_cassandra_cpu=max(small.cassandra_scan_cpu + small.cassandra_recheck_cpu - cassandra, 0.0),
            fixed_spark_cpu=max(small.spark_scan_cpu + small.spark_recheck_cpu - spark, 0.0),
        )


def _difference(large: Measured, small: Measured) -> Measured:
    """What the larger run did beyond the smaller one."""
    return Measured(
        messages=large.messages - small.messages,
        rows_read=large.rows_read - small.rows_read,
        candidates=large.candidates - small.candidates,
        seconds=large.seconds - small.seconds,
        cassandra_scan_cpu=large.cassandra_scan_cpu - small.cassandra_scan_cpu,
        spark_scan_cpu=large.spark_scan_cpu - small.spark_scan_cpu,
        cassandra_recheck_cpu=large.cassandra_recheck_cpu - small.cassandra_recheck_cpu,
        spark_recheck_cpu=large.spark_recheck_cpu - small.spark_recheck_cpu,
        cores=large.cores,
    )


@dataclass(frozen=True)
class Night:
    """A night of `messages` with `candidates_per_message` re-checks per message (broken share x 2, plus the
    verify's sample), costed by `constants`."""

    messages: int
    candidates_per_message: float
    constants: Constants

    @classmethod
    def broken(cls, messages: int, broken_share: float, constants: Constants) -> "Night":
        return cls(messages, 2 * broken_share + VERIFY_SAMPLE_FRACTION, constants)

    def cpu(self) -> tuple[float, float]:
        """(Cassandra, Spark) processor seconds of the night's rows and candidates (without its fixed part)."""
        c = self.constants
        rows = self.messages * c.rows_per_message
        candidates = self.messages * self.candidates_per_message
        return (
            rows * c.cassandra_cpu_per_row + candidates * c.cassandra_cpu_per_candidate,
            rows * c.spark_cpu_per_row + candidates * c.spark_cpu_per_candidate,
        )

    def total_cpu(self) -> tuple[float, float]:
        """(Cassandra, Spark) processor seconds of the whole night, its fixed part included."""
        cassandra, spark = self.cpu()
        return cassandra + self.constants.fixed_cassandra_cpu, spark + self.constants.fixed_spark_cpu

    @property
    def rows(self) -> float:
        """Rows the night's scan reads (both tables)."""
        return self.messages * self.constants.rows_per_message

    def separate(
        self,
        executor_cores: int,
        nodes: int,
        cores_per_node: int,
        cassandra_share: float,
        scan_rows_per_second: float = 0.0,
    ) -> dict:
        """Cassandra on its nodes (a share of their cores for the night), Spark on its executors; the scan at most
        `scan_rows_per_second` rows a second across the cluster (0: no limit)."""
        cassandra, spark = self.cpu()
        capacity = nodes * cores_per_node * cassandra_share
        cassandra_wall = cassandra / capacity
        spark_wall = spark / executor_cores
        seconds, bound = max(cassandra_wall, spark_wall), "cassandra" if cassandra_wall >= spark_wall else "spark"
        if scan_rows_per_second:
            limited = self.rows / scan_rows_per_second + self.rechecks_alone(executor_cores, capacity)
            if limited > seconds:
                seconds, bound = limited, "rate limit"
        return {"seconds": self.constants.fixed_seconds + seconds, **self._cpu_figures(), "boundBy": bound}

    def rechecks_alone(self, executor_cores: int, capacity: float) -> float:
        """Wall seconds of the re-checks on their own (after a scan held to its limit), on `capacity` Cassandra
        cores and the executors."""
        c = self.constants
        candidates = self.messages * self.candidates_per_message
        return max(
            candidates * c.cassandra_cpu_per_candidate / capacity,
            candidates * c.spark_cpu_per_candidate / executor_cores,
        )

    def rate_to_fit(self, seconds: float, executor_cores: int, capacity: float) -> float | None:
        """The scan's rows a second at which the night takes `seconds`; None when its re-checks and fixed part alone
        take longer."""
        left = seconds - self.constants.fixed_seconds - self.rechecks_alone(executor_cores, capacity)
        return self.rows / left if left > 0 else None

    def shared(self, cores: int) -> dict:
        """Cassandra and Spark on the same cores (one machine, as the bench runs)."""
        cassandra, spark = self.cpu()
        return {"seconds": self.constants.fixed_seconds + (cassandra + spark) / cores, **self._cpu_figures()}

    def _cpu_figures(self) -> dict:
        cassandra, spark = self.total_cpu()
        return {"cassandraCpuSeconds": cassandra, "sparkCpuSeconds": spark}


# ---- what `bench model` and the bench's page show -------------------------------------------------------------------


def measured_runs(files: list[BenchFile]) -> list[Measured]:
    """The nightly runs of the messages bench files the model can read, oldest first."""
    modelled = [file for file in files if file.target == "messages" and Measured.in_bench(file.figures)]
    return [Measured.from_bench(file.figures) for file in sorted(modelled, key=lambda file: file.date or "")]


def fitted(measured: list[Measured], given: bool = False) -> tuple[Constants, list[Measured]]:
    """The constants and the runs they come from: the runs `given`, or else (`measured` oldest first) the newest run
    on one node of each of the two largest sizes, on the machine of the newest one."""
    if given:
        return Constants.measured(measured), measured
    by_size = {run.size: run for run in on_the_newest_machine([run for run in measured if run.one_node])}
    runs = sorted(by_size.values(), key=lambda run: run.messages)[-2:]
    return Constants.measured(runs), runs


def against_the_bench(constants: Constants, runs: list[Measured]) -> list[dict]:
    """How the model predicts each run (shared cores, as the bench ran): its wall time and each side's processor
    time, measured and predicted."""
    checked = []
    for run in runs:
        predicted = Night(run.messages, run.candidates / max(run.messages, 1), constants).shared(run.cores)
        cassandra_cpu = run.cassandra_scan_cpu + run.cassandra_recheck_cpu
        spark_cpu = run.spark_scan_cpu + run.spark_recheck_cpu
        checked.append(
            {
                "messages": run.messages,
                "where": run.where,
                "measuredSeconds": run.seconds,
                "predictedSeconds": round(predicted["seconds"], 1),
                "off": _off(predicted["seconds"], run.seconds),
                "measuredCassandraCpuSeconds": round(cassandra_cpu, 1),
                "predictedCassandraCpuSeconds": round(predicted["cassandraCpuSeconds"], 1),
                "cassandraCpuOff": _off(predicted["cassandraCpuSeconds"], cassandra_cpu),
                "measuredSparkCpuSeconds": round(spark_cpu, 1),
                "predictedSparkCpuSeconds": round(predicted["sparkCpuSeconds"], 1),
                "sparkCpuOff": _off(predicted["sparkCpuSeconds"], spark_cpu),
            }
        )
    return checked


def on_a_cluster(measured: list[Measured]) -> list[Measured]:
    """The newest run of each size measured on a ring and a Spark cluster (what checks the model beyond one node),
    among a place's runs on the machine of its newest one (`measured` oldest first). The others stay in the page's
    history."""
    on_rings = on_the_newest_machine([run for run in measured if not run.one_node])
    by_size = {(run.where, run.size): run for run in on_rings}
    return sorted(by_size.values(), key=lambda run: (run.where, run.messages))


def on_the_newest_machine(measured: list[Measured]) -> list[Measured]:
    """Each place's runs on the machine of its newest run (`measured` oldest first): constants fitted on runs of two
    machines would mix their costs."""
    newest_machine = {run.where: run.processor for run in measured}
    return [run for run in measured if run.processor == newest_machine[run.where]]


def _off(predicted: float, measured: float) -> str:
    return f"{(predicted - measured) / measured:+.0%}" if measured else "—"


def night(
    constants: Constants,
    messages: int,
    broken_share: float,
    executor_cores: int,
    nodes: int,
    cores_per_node: int,
    cassandra_share: float,
    window_minutes: float,
    scan_rows_per_second: float = 0.0,
) -> dict:
    """A night on separate machines, its scan at most `scan_rows_per_second` rows a second across the cluster (0: no
    limit): its wall time, each side's processor time, what bounds it, whether it fits, and the scan rate at which
    it just fits its window."""
    modelled = Night.broken(messages, broken_share, constants)
    predicted = modelled.separate(executor_cores, nodes, cores_per_node, cassandra_share, scan_rows_per_second)
    to_fit = modelled.rate_to_fit(window_minutes * 60, executor_cores, nodes * cores_per_node * cassandra_share)
    return {
        "messages": messages,
        "brokenShare": broken_share,
        "executorCores": executor_cores,
        "cassandraNodes": nodes,
        "coresPerNode": cores_per_node,
        "cassandraShare": cassandra_share,
        "seconds": round(predicted["seconds"]),
        "cassandraCpuSeconds": round(predicted["cassandraCpuSeconds"]),
        "sparkCpuSeconds": round(predicted["sparkCpuSeconds"]),
        "boundBy": predicted["boundBy"],
        "fitsInWindow": predicted["seconds"] <= window_minutes * 60,
        "rowsRead": round(modelled.rows),
        "scanRowsPerSecond": scan_rows_per_second,
        "scanRowsPerSecondPerNode": round(scan_rows_per_second / nodes) if scan_rows_per_second else 0,
        "scanRowsPerSecondToFitWindow": round(to_fit) if to_fit is not None else None,
    }
