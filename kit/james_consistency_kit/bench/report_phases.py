"""The bench page's method and its tables of a speed bench's phases (`bench messages`, `bench <target>`): each phase's
time, throughput, processor time and ratios to the bare scan and to James's own task."""

from dataclasses import dataclass, replace

from james_consistency_kit.bench import formatting as show
from james_consistency_kit.bench.keyspace import RESEED_BELOW
from james_consistency_kit.bench.results import BenchFile

PHASES_MEASURED = (
    (
        "bare scan",
        "imapUidTable and messageIdTable read whole, every column, into Spark's no-op sink: the floor any full repair "
        "pays. Run once untimed first, so that every timed phase starts in a warm JVM",
    ),
    ("dry run", "`check`: the scan, the diff, the gates and the live re-check of the candidates; nothing written"),
    ("repair", "`repair --allow-destructive`, as an operator runs it (gates included)"),
    (
        "James-style reference",
        "James's pass B in Python on a sample of truth rows, one at a time: read the projection row, re-read the "
        "truth, write when they differ; unthrottled",
    ),
    (
        "nightly run",
        "what the nightly DAG runs: a check in token ranges keeping its scan, then the repair and the verify reusing "
        "it (its steps are listed under it)",
    ),
    (
        "dry run in token ranges, then stopped at half and resumed",
        "the ranged check uninterrupted, then stopped after half of its ranges and resumed by the next run: what "
        "stopping at a window's end costs",
    ),
    (
        "James 3.8.1's own task",
        "SolveMessageInconsistenciesTask (the harness in `james/harness-3.8.1/`) unthrottled and at its default 100 "
        "messages/s, on a sample keyspace (`--james-sample`) when the whole pass would take more than 10 minutes; "
        "then its report after our repair, which must add nothing",
    ),
)

METHOD = """\
## Method

`make bench` starts the local Cassandra node and runs `james-consistency bench messages --messages 1000000
--inconsistency-rate 0.01`: one Spark session (`local[*]`) on the same machine as the node, both sharing its cores.
The keyspace is made by James 3.8.1's own `schema` command and filled by the project's seeder (reused by later runs
of the same size, repaired first, untimed; seeded afresh once the orphans broken left it under {reseed:.0%} of that
size), then broken at the given rate: messageIdTable rows missing, with stale flags, or orphaned. Every phase that
repairs faces the keyspace broken again at that rate. In order:

{phases}

For each phase: the wall time; the throughput in truth rows (imapUidTable rows) a second; the machine's processor
time from `/proc` with the cores it kept busy on average (the machine's load during the phase, the bench's own work
included, against the cores it has) and the benched nodes' share (the local Cassandra JVMs serving its CQL port);
the driver's JVM heap (in the JSON).
A phase's ratio to the bare scan is its time over the bare scan's; its ratio to James's own task is its time over
the time James's unthrottled task takes for the same truth rows at the throughput it was measured at.
`bench counters` (and the other targets) times the bare scan of the tables the repair reads, the dry run and the
repair; for counters, James's RecomputeMailboxCountersTask too.

To publish a run: `make bench` (or `james-consistency bench messages ...`) writes `.local/bench/messages-<N>.json`;
`james-consistency bench messages ... --publish` also copies it into `docs/benchmarks/` and rewrites this page (or copy
the file there and run `james-consistency bench report`). This page and `docs/benchmarks/phases.png` are written by
`bench report` from the JSON files in `docs/benchmarks/`: change those, or `kit/james_consistency_kit/bench/report.py`,
not the page.

On the local ring and Spark standalone cluster (what checks the model below beyond one node; all of it still on this
machine's cores): `james-consistency cassandra start --nodes 3 && JAMES_SPARK_FULL_JIT=1 james-consistency spark
start` (executors with their full JIT, as on a real cluster), then `CASSANDRA_HOST=127.0.0.1 CASSANDRA_PORT=29242
SPARK_MASTER=spark://127.0.0.1:7077 james-consistency bench messages --messages N --replication-factor 3 --publish`.
Its keyspaces are `bench_james_rf3_<N>`, its executors run the shipped product zip, and its file records where it ran
(`cluster`); the Latest figures stay those on one node.
""".format(
    reseed=RESEED_BELOW,
    phases="\n".join(
        ["| phase | what it measures |", "|---|---|", *(f"| {name} | {what} |" for name, what in PHASES_MEASURED)]
    ),
)


@dataclass(frozen=True)
class PhaseRow:
    """One line of a file's table: a phase, its time, throughput, processor figures and ratios."""

    phase: str
    seconds: float | None
    throughput: str = ""
    cpu: dict | None = None
    over_bare_scan: float | None = None
    over_james: float | None = None
    note: str = ""
    step: bool = False  # a step of the phase above it


def file_section(result: BenchFile) -> str:
    figures = result.figures
    title = f"### `bench {result.target}`: {figures['messages']:,} messages"
    if figures.get("inconsistencyRate") is not None:
        title += f", {show.percent(figures['inconsistencyRate'])} broken"
    lines = [
        title,
        "",
        f"`{result.name}`, {show.when(figures.get('date'), figures.get('time'))}{show.commit(figures)}.",
    ]
    if figures.get("machine"):
        lines[-1] += " Machine: " + show.machine(figures["machine"])
    lines += [
        "",
        "| phase | time | throughput | processor time (cores kept busy; Cassandra's part) | over the bare scan "
        "| over James's own task | note |",
        "|---|---|---|---|---|---|---|",
    ]
    cores = figures.get("machineCpu", {}).get("bareScan", {}).get("cores")
    for row in phase_rows(figures):
        lines.append(
            f"| {row.phase} | {show.seconds(row.seconds)} | {row.throughput} | {show.cpu(row.cpu, cores)} "
            f"| {show.ratio(row.over_bare_scan)} | {show.ratio(row.over_james)} | {row.note} |"
        )
    return "\n".join(lines) + "\n"


def phase_rows(figures: dict) -> list[PhaseRow]:
    """The rows of a result file's table, in the bench's order."""
    if figures.get("target", "messages") == "messages":
        return _message_rows(figures)
    return _projection_rows(figures)


@dataclass(frozen=True)
class _Phases:
    """A result file's phases, as table rows measured against its bare scan and James's own task."""

    figures: dict
    james_seconds: float | None  # James's own task for the benched truth rows

    @property
    def scan(self) -> float:
        return self.figures["bareScan"]["seconds"]

    def over_james(self, seconds: float) -> float | None:
        return seconds / self.james_seconds if self.james_seconds else None

    def row(self, phase: str, key: str, **extra) -> PhaseRow:
        """The row of the phase whose figures are under `key` (and its processor time under machineCpu[key])."""
        seconds = self.figures[key]["seconds"]
        return PhaseRow(
            phase,
            seconds,
            show.rate(self.figures[key].get("truthRowsPerSecond"), "truth rows/s"),
            self.figures.get("machineCpu", {}).get(key),
            seconds / self.scan,
            self.over_james(seconds),
            **extra,
        )

    def bare_scan(self, phase: str) -> PhaseRow:
        return replace(
            self.row(phase, "bareScan"), throughput=show.rate(self.figures["bareScan"]["rowsPerSecond"], "rows/s")
        )


def _message_rows(figures: dict) -> list[PhaseRow]:
    james = figures.get("jamesSolveMessageInconsistencies", {})
    phases = _Phases(figures, _james_seconds(figures["messages"], james.get("unthrottled", {})))
    nightly = figures["nightlyRun"]
    rows = [
        phases.bare_scan("bare scan (both tables, every column)"),
        phases.row("dry run", "dryRun"),
        phases.row("repair", "repair", note=f"{show.count(figures['found'])} found"),
        phases.row("nightly run", "nightlyRun", note=f"{nightly.get('ranges', '?')} ranges"),
        *(
            PhaseRow(
                f"↳ its {step}",
                seconds,
                cpu=nightly.get("stepsCpu", {}).get(step),
                over_bare_scan=seconds / phases.scan,
                step=True,
            )
            for step, seconds in nightly.get("steps", {}).items()
        ),
        phases.row(
            "dry run in token ranges", "dryRunInRanges", note=f"{figures['dryRunInRanges'].get('ranges')} ranges"
        ),
        phases.row(
            "the same, stopped at half and resumed",
            "stoppedAndResumed",
            note=f"{show.ratio(figures['ratios'].get('stoppedAndResumedOverUninterrupted'))} the uninterrupted one",
        ),
    ]
    reference = figures.get("jamesStyleReference", {})
    if reference:
        rows.append(
            PhaseRow(
                f"James-style reference ({reference.get('processed', 0):,} rows, one at a time)",
                reference["seconds"],
                show.rate(reference.get("truthRowsPerSecond"), "truth rows/s"),
            )
        )
    return rows + _james_message_rows(james, phases)


def _james_message_rows(james: dict, phases: _Phases) -> list[PhaseRow]:
    if "skipped" in james or not james:
        return [PhaseRow("James 3.8.1's own task", None, note=james.get("skipped", "not run"))]
    rows = []
    for key, how in (("unthrottled", "unthrottled"), ("defaultRate", "at its default 100 messages/s")):
        run, name = james.get(key, {}), f"James 3.8.1's own task, {how}"
        if "skipped" in run:
            rows.append(PhaseRow(name, None, note=run["skipped"]))
        elif run.get("measuredOn") == "the benched keyspace":
            rows.append(_james_row(name, run, phases))
        else:
            rows.append(_james_row(name, run, None, note=f"on {run.get('measuredOn', 'a sample keyspace')}"))
    after = james.get("jamesAfterOurRepair")
    if after is not None:
        verdict = "adds nothing" if after.get("addsNothing") else f"fixed more: {after}"
        rows.append(PhaseRow("James's task after our repair", None, note=verdict))
    return rows


def _projection_rows(figures: dict) -> list[PhaseRow]:
    james = figures.get("jamesRecomputeMailboxCounters", {})
    phases = _Phases(figures, _james_seconds(figures.get("truthRows"), james))
    rows = [
        phases.bare_scan("bare scan (the tables the repair reads)"),
        phases.row("dry run", "dryRun"),
        phases.row("repair", "repair"),
    ]
    if james.get("seconds"):
        rows.append(_james_row("James 3.8.1's RecomputeMailboxCounters", james, phases))
    return rows


def _james_row(name: str, run: dict, phases: _Phases | None, note: str = "") -> PhaseRow:
    """A run of James's own task: against the bare scan and the benched rows only when it ran on the benched
    keyspace (`phases`)."""
    seconds = run.get("seconds")
    measured = phases is not None and bool(seconds)
    return PhaseRow(
        name,
        seconds,
        show.rate(run.get("truthRowsPerSecond"), "truth rows/s"),
        over_bare_scan=seconds / phases.scan if measured else None,
        over_james=phases.over_james(seconds) if measured else None,
        note=note,
    )


def _james_seconds(truth_rows: int | None, run: dict) -> float | None:
    """How long James's own task takes for `truth_rows`, at the throughput it was measured at."""
    rate = run.get("truthRowsPerSecond")
    return truth_rows / rate if truth_rows and rate else None
