"""`james-consistency bench report`: docs/benchmarks.md and its figure, written from the bench's JSON result files.

The page has the bench's method, the latest figures of each target's largest size (a table per file: each phase's
time, throughput, processor time with the cores it kept busy, and its ratios to the bare scan and to James's own task),
the model of a night on a cluster fitted on the latest two sizes of `bench messages` (`bench model`), and a dated
history: every result file given, and the figures recorded before the bench wrote this page
(docs/benchmarks/history.json). A new result file in docs/benchmarks/ is all a new figure takes.
"""

import math
from dataclasses import dataclass, replace
from pathlib import Path

from james_consistency.runtime.paths import PROJECT_ROOT

from james_consistency_kit.bench.keyspace import RESEED_BELOW
from james_consistency_kit.bench.model import against_the_bench, fitted, measured_runs, night, on_a_cluster
from james_consistency_kit.bench.results import PUBLISHED_DIR, BenchFile, load, on_one_node, where

PAGE = PROJECT_ROOT / "docs" / "benchmarks.md"
FIGURE = "phases.png"

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


def write_report(paths: list[Path] | None = None, page: Path = PAGE) -> tuple[Path, Path | None]:
    """Write the page (and its figure, in the folder named after the page) from the result files and history
    records among `paths` (default: docs/benchmarks/)."""
    results, history = load(paths or [PUBLISHED_DIR])
    latest = latest_per_target(results)
    figure_path = page.parent / page.stem / FIGURE
    drawn = next((result for result in latest if result.target == "messages"), latest[0] if latest else None)
    if drawn is not None:
        draw_phases(drawn, figure_path)
    figure_link = f"{page.stem}/{FIGURE}" if drawn is not None else None
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(render_page(latest, history_rows(results, history), figure_link, drawn, model_section(results)))
    return page, figure_path if drawn is not None else None


def latest_per_target(results: list[BenchFile]) -> list[BenchFile]:
    """The newest result on one node of each target's largest size (messages first), sizes compared by their order
    of magnitude (`make bench`'s 1M seeds 976,723 or 996,730 messages): a smaller run published after it, for the
    model, does not hide the figures the targets are read from. Undated files count as the oldest. Runs on a ring
    are in the model's section and the history."""
    newest: dict[str, BenchFile] = {}
    for result in sorted(results, key=lambda each: (size_class(each), each.date or "")):
        if on_one_node(result.figures):
            newest[result.target] = result
    return sorted(newest.values(), key=lambda each: (each.target != "messages", each.target))


def size_class(result: BenchFile) -> int:
    """The order of magnitude of a run's messages (0 when the file does not say)."""
    messages = result.figures.get("messages") or 0
    return round(math.log10(messages)) if messages > 0 else 0


# ---- the page --------------------------------------------------------------------------------------------------

# The nights the page predicts: 100M messages, 1 % broken, 6 Cassandra nodes of 8 cores (half of them for the night),
# on 10 Spark workers of 1, 4 and 8 cores.
MODELLED_NIGHTS = tuple(
    {"messages": 100_000_000, "broken_share": 0.01, "executor_cores": cores, "nodes": 6, "cores_per_node": 8}
    for cores in (10, 40, 80)
)
CASSANDRA_SHARE = 0.5
WINDOW_MINUTES = 60


def render_page(
    latest: list[BenchFile], history: list[dict], figure: str | None, drawn: BenchFile | None, model: str = ""
) -> str:
    """The page: its method, the latest file of each target, the figure drawn from `drawn`, the model, the
    history."""
    parts = [
        "# Benchmarks\n\nHow fast the repairs are on a real Cassandra node, against the floor (a bare scan of the "
        "tables) and against James's own tasks. Written by `james-consistency bench report`.\n",
        METHOD,
    ]
    if latest and latest[0].figures.get("machine"):
        parts.append(f"The latest run's machine: {_machine(latest[0].figures['machine'])}\n")
    parts.append("## Latest figures\n")
    parts += [file_section(result) for result in latest] or ["No bench result file yet: publish one (see above).\n"]
    if figure is not None and drawn is not None:
        parts.append(
            f"![each phase of {drawn.name} against the bare scan and James's own task, time and processor "
            f"time]({figure})\n"
        )
    if model:
        parts.append(model)
    parts.append(history_section(history))
    return "\n".join(parts)


def file_section(result: BenchFile) -> str:
    figures = result.figures
    title = f"### `bench {result.target}`: {figures['messages']:,} messages"
    if figures.get("inconsistencyRate") is not None:
        title += f", {_percent(figures['inconsistencyRate'])} broken"
    lines = [title, "", f"`{result.name}`, {_when(figures.get('date'), figures.get('time'))}{_commit(figures)}."]
    if figures.get("machine"):
        lines[-1] += " Machine: " + _machine(figures["machine"])
    lines += [
        "",
        "| phase | time | throughput | processor time (cores kept busy; Cassandra's part) | over the bare scan "
        "| over James's own task | note |",
        "|---|---|---|---|---|---|---|",
    ]
    cores = figures.get("machineCpu", {}).get("bareScan", {}).get("cores")
    for row in phase_rows(figures):
        lines.append(
            f"| {row.phase} | {_seconds(row.seconds)} | {row.throughput} | {_cpu(row.cpu, cores)} "
            f"| {_ratio(row.over_bare_scan)} | {_ratio(row.over_james)} | {row.note} |"
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
            _rate(self.figures[key].get("truthRowsPerSecond"), "truth rows/s"),
            self.figures.get("machineCpu", {}).get(key),
            seconds / self.scan,
            self.over_james(seconds),
            **extra,
        )

    def bare_scan(self, phase: str) -> PhaseRow:
        return replace(
            self.row(phase, "bareScan"), throughput=_rate(self.figures["bareScan"]["rowsPerSecond"], "rows/s")
        )


def _message_rows(figures: dict) -> list[PhaseRow]:
    james = figures.get("jamesSolveMessageInconsistencies", {})
    phases = _Phases(figures, _james_seconds(figures["messages"], james.get("unthrottled", {})))
    nightly = figures["nightlyRun"]
    rows = [
        phases.bare_scan("bare scan (both tables, every column)"),
        phases.row("dry run", "dryRun"),
        phases.row("repair", "repair", note=f"{_count(figures['found'])} found"),
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
            note=f"{_ratio(figures['ratios'].get('stoppedAndResumedOverUninterrupted'))} the uninterrupted one",
        ),
    ]
    reference = figures.get("jamesStyleReference", {})
    if reference:
        rows.append(
            PhaseRow(
                f"James-style reference ({reference.get('processed', 0):,} rows, one at a time)",
                reference["seconds"],
                _rate(reference.get("truthRowsPerSecond"), "truth rows/s"),
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
        _rate(run.get("truthRowsPerSecond"), "truth rows/s"),
        over_bare_scan=seconds / phases.scan if measured else None,
        over_james=phases.over_james(seconds) if measured else None,
        note=note,
    )


def _james_seconds(truth_rows: int | None, run: dict) -> float | None:
    """How long James's own task takes for `truth_rows`, at the throughput it was measured at."""
    rate = run.get("truthRowsPerSecond")
    return truth_rows / rate if truth_rows and rate else None


# ---- the history -----------------------------------------------------------------------------------------------

HISTORY_COLUMNS = (
    ("date", "date"),
    ("target", "target"),
    ("commit", "commit"),
    ("messages", "messages"),
    ("brokenShare", "broken"),
    ("bareScanSeconds", "bare scan"),
    ("dryRun", "dry run"),
    ("repair", "repair"),
    ("nightlyOverBareScan", "nightly / bare scan"),
    ("resumedOverUninterrupted", "resumed / uninterrupted"),
    ("repairOverJamesUnthrottled", "repair / James (throughput)"),
    ("nightlyCpuOverBareScanCpu", "nightly CPU / bare scan CPU"),
    ("load", "machine: bare scan's busy cores, load average at start, speed reference at start"),
    ("source", "source"),
)


def model_section(results: list[BenchFile]) -> str:
    """The model (`bench model`, kit/.../bench/model.py) fitted on the newest messages files on one node of the two
    largest sizes: how it predicts them and the runs on a ring, the constants of each, and the nights of
    MODELLED_NIGHTS; empty without two sizes on one node to fit on."""
    measured = measured_runs(results)
    if len({run.size for run in measured if run.one_node}) < 2:
        return ""
    constants, runs = fitted(measured)
    on_rings = on_a_cluster(measured)
    fits = {"one node": constants, **_fitted_per_ring(on_rings)}
    # A ring measured on another processor than the one-node fit's would be off by the machines' difference too.
    processor = runs[-1].processor
    on_rings_here = [run for run in on_rings if run.processor == processor]
    elsewhere = sorted({run.processor or "an unnamed processor" for run in on_rings if run.processor != processor})
    lines = [
        "## A night on a cluster (model)",
        "",
        "`james-consistency bench model` costs a nightly run (check, repair, verify) from the processor time the "
        "bench measured per row scanned and per candidate re-checked, on Cassandra's side and on Spark's, plus a "
        "fixed part per night. With Cassandra and Spark on machines of their own, the slower side bounds the night. "
        "Fitted on the nightly runs on one node of the newest files of the two largest sizes; a share of "
        f"{CASSANDRA_SHARE:.0%} of the Cassandra nodes' cores is given to the night. The constants come from a 2-core "
        "machine; below the fit, the same model against the runs on the local ring and Spark standalone cluster "
        "(all on these 2 cores: what it checks is the cost per row and per candidate, not the spread over machines). "
        "With replication factor 3 a quorum read asks two replicas and a fix writes three, and the executors are "
        "processes of their own: constants fitted on one node understate a replicated cluster; those fitted on the "
        "ring's own sizes are the ones to predict it with.",
        "",
        *_model_checks("the nightly runs it is fitted on", against_the_bench(constants, runs)),
        *_model_checks(
            "the nightly runs on the local ring and Spark cluster (not fitted on)",
            against_the_bench(constants, on_rings_here),
        ),
        *(
            [
                f"The runs on the local ring and Spark cluster were measured on another processor "
                f"({', '.join(elsewhere)}) than the one-node fit ({processor or 'an unnamed processor'}): the "
                "one-node constants are not checked against them, and each fit's constants and nights below are "
                "its own machine's.",
                "",
            ]
            if elsewhere
            else []
        ),
        *(
            line
            for where, fit in fits.items()
            if where != "one node"
            for line in _model_checks(
                f"the runs on {where}, with the constants fitted on its smallest and largest",
                against_the_bench(fit, [run for run in on_rings if run.where == where]),
            )
        ),
        *_constants_table(fits),
        "| constants from | messages | broken | Spark executor cores | Cassandra nodes | night | Cassandra CPU "
        f"| Spark CPU | bound by | fits in {WINDOW_MINUTES} min |",
        "|---|---:|---:|---:|---|---:|---:|---:|---|---|",
    ]
    for fitted_on, fit in fits.items():
        for wanted in MODELLED_NIGHTS:
            predicted = night(fit, **wanted, cassandra_share=CASSANDRA_SHARE, window_minutes=WINDOW_MINUTES)
            lines.append(
                f"| {fitted_on} | {predicted['messages']:,} | {_percent(predicted['brokenShare'])} "
                f"| {predicted['executorCores']} | {predicted['cassandraNodes']} x {predicted['coresPerNode']} cores "
                f"| {predicted['seconds']:,} s | {predicted['cassandraCpuSeconds']:,} s "
                f"| {predicted['sparkCpuSeconds']:,} s "
                f"| {predicted['boundBy']} | {'yes' if predicted['fitsInWindow'] else 'no'} |"
            )
    return "\n".join(lines) + "\n"


def _fitted_per_ring(on_rings: list) -> dict:
    """The model's constants fitted on the runs of each ring and Spark cluster that ran two sizes or more."""
    by_place: dict[str, list] = {}
    for run in on_rings:
        by_place.setdefault(run.where, []).append(run)
    return {where: fitted(runs, given=True)[0] for where, runs in by_place.items() if len(runs) > 1}


def _constants_table(fits: dict) -> list[str]:
    """Each fit's constants side by side: what a row, a candidate and a night's fixed part cost where it ran."""
    if len(fits) < 2:
        return []
    rows = (
        ("Cassandra CPU per row read", lambda c: f"{c.cassandra_cpu_per_row * 1e6:.1f} µs"),
        ("Spark CPU per row read", lambda c: f"{c.spark_cpu_per_row * 1e6:.1f} µs"),
        ("Cassandra CPU per candidate", lambda c: f"{c.cassandra_cpu_per_candidate * 1e3:.2f} ms"),
        ("Spark CPU per candidate", lambda c: f"{c.spark_cpu_per_candidate * 1e3:.2f} ms"),
        ("a night's fixed part: wall", lambda c: f"{c.fixed_seconds:.1f} s"),
        ("a night's fixed part: Cassandra CPU", lambda c: f"{c.fixed_cassandra_cpu:.1f} s"),
        ("a night's fixed part: Spark CPU", lambda c: f"{c.fixed_spark_cpu:.1f} s"),
    )
    return [
        "The constants fitted on each place's two sizes:",
        "",
        "| constant | " + " | ".join(fits) + " |",
        "|---|" + "---:|" * len(fits),
        *(f"| {name} | " + " | ".join(shown(fit) for fit in fits.values()) + " |" for name, shown in rows),
        "",
    ]


def _model_checks(title: str, rows: list[dict]) -> list[str]:
    """The model's predictions of measured runs (on the runs' own cores), wall time and each side's CPU."""
    if not rows:
        return []
    return [
        f"The model against {title}:",
        "",
        "| nightly run | where | wall time, measured / model | off | Cassandra CPU, measured / model | off "
        "| Spark CPU, measured / model | off |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
        *(
            f"| {row['messages']:,} messages | {row['where']} "
            f"| {row['measuredSeconds']:.1f} s / {row['predictedSeconds']:.1f} s | {row['off']} "
            f"| {row['measuredCassandraCpuSeconds']:.1f} s / {row['predictedCassandraCpuSeconds']:.1f} s "
            f"| {row['cassandraCpuOff']} "
            f"| {row['measuredSparkCpuSeconds']:.1f} s / {row['predictedSparkCpuSeconds']:.1f} s "
            f"| {row['sparkCpuOff']} |"
            for row in rows
        ),
        "",
    ]


def history_rows(results: list[BenchFile], recorded: list[dict]) -> list[dict]:
    """Every run, newest first: the result files' and the recorded ones, in the same fields."""
    rows = [*(history_record(result) for result in results), *recorded]
    return sorted(rows, key=lambda row: row.get("date") or "", reverse=True)


def history_record(result: BenchFile) -> dict:
    """A result file's figures in the fields of history.json."""
    figures, ratios = result.figures, result.figures.get("ratios", {})
    return {
        "date": figures.get("date"),
        "commit": figures.get("commit"),
        "target": result.target,
        "source": result.name,
        "messages": figures["messages"],
        "brokenShare": figures.get("inconsistencyRate"),
        "bareScanSeconds": figures["bareScan"]["seconds"],
        "dryRunSeconds": figures.get("dryRun", {}).get("seconds"),
        "dryRunTruthRowsPerSecond": figures.get("dryRun", {}).get("truthRowsPerSecond"),
        "repairSeconds": figures.get("repair", {}).get("seconds"),
        "repairTruthRowsPerSecond": figures.get("repair", {}).get("truthRowsPerSecond"),
        "nightlyOverBareScan": ratios.get("nightlyRunTimeOverBareScanTime"),
        "resumedOverUninterrupted": ratios.get("stoppedAndResumedOverUninterrupted"),
        "repairOverJamesUnthrottled": ratios.get("repairOverJamesUnthrottledThroughput")
        or ratios.get("repairOverJamesThroughput"),
        "nightlyCpuOverBareScanCpu": ratios.get("nightlyRunCpuOverBareScanCpu"),
        "bareScanBusyCores": figures.get("machineCpu", {}).get("bareScan", {}).get("busyCores"),
        "loadAverageAtStart": (figures.get("machine") or {}).get("loadAverageAtStart", [None])[0],
        "speedReferenceSeconds": (figures.get("machine") or {}).get("speedReferenceSecondsAtStart"),
        "note": "" if on_one_node(figures) else f"on {where(figures)}",
    }


def history_section(rows: list[dict]) -> str:
    lines = [
        "## History",
        "",
        "Every published run, newest first, with the figures the README recorded before this page existed "
        "(`docs/benchmarks/history.json`). The machine varies from hour to hour (three runs within three hours on "
        "2026-11-25 timed the same bare scan at 18.9 s, 29.1 s and 23.0 s) and from day to day with an idle load "
        "average; since 2026-12-02 a run records its speed reference (`ref`: the best of three timings of a fixed "
        "one-core loop, higher on a slower host): compare ratios, and times only at a like reference.",
        "",
        "| " + " | ".join(title for _, title in HISTORY_COLUMNS) + " | note |",
        "|" + "---|" * (len(HISTORY_COLUMNS) + 1),
    ]
    for row in rows:
        cells = [_history_cell(row, key) for key, _ in HISTORY_COLUMNS]
        lines.append("| " + " | ".join(cells) + f" | {row.get('note', '')} |")
    return "\n".join(lines) + "\n"


def _history_cell(row: dict, key: str) -> str:
    if key == "date":
        return _when(row.get("date"), row.get("time"))
    if key in ("dryRun", "repair"):
        seconds, rate = row.get(f"{key}Seconds"), row.get(f"{key}TruthRowsPerSecond")
        text = _seconds(seconds) if seconds is not None else ""
        return f"{text} ({rate:,} truth rows/s)" if rate else text or "—"
    if key == "bareScanSeconds":
        return _seconds(row.get(key))
    if key == "brokenShare":
        return _percent(row.get(key)) if row.get(key) is not None else "—"
    if key == "messages":
        return f"{row[key]:,}" if row.get(key) else "—"
    if key == "load":
        busy, load = row.get("bareScanBusyCores"), row.get("loadAverageAtStart")
        speed = row.get("speedReferenceSeconds")
        parts = [f"{busy:.2f} cores"] if busy is not None else []
        parts += [f"{load:.2f}"] if load is not None else []
        parts += [f"ref {speed:.2f} s"] if speed is not None else []
        return ", ".join(parts) or "—"
    if key == "target":
        return row.get(key) or "—"
    if key == "commit":
        return f"`{row[key]}`" if row.get(key) else "—"
    if key == "source":
        return f"`{row[key]}`" if str(row.get(key, "")).endswith(".json") else row.get(key) or "—"
    value = row.get(key)
    return _ratio(value) if isinstance(value, int | float) else "—"


# ---- the figure ------------------------------------------------------------------------------------------------


def draw_phases(result: BenchFile, path: Path) -> None:
    """Each phase timed on the benched keyspace, beside the bare scan and James's own task for the same rows: time
    (left) and processor time with the cores it kept busy (right; James's task's is not measured)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = _drawn_rows(result.figures)
    names, colours = [row.phase for row in rows], [_colour(row) for row in rows]
    fig, (time_axis, cpu_axis) = plt.subplots(1, 2, figsize=(14, 0.5 * len(rows) + 2.5), sharey=True)
    time_axis.barh(names, [row.seconds for row in rows], color=colours)
    time_axis.axvline(rows[0].seconds, color="tab:grey", linestyle="--", label="bare scan")
    for position, row in enumerate(rows):
        ratios = [f"{_ratio(row.over_bare_scan)} scan"] + (
            [f"{_ratio(row.over_james)} James"] if row.over_james else []
        )
        time_axis.text(row.seconds, position, f" {row.seconds:.1f} s ({', '.join(ratios)})", va="center", fontsize=8)
    time_axis.set_xlim(0, max(row.seconds for row in rows) * 1.6)
    time_axis.set_xlabel("seconds")
    time_axis.set_title("time (over the bare scan, over James's own task)")
    time_axis.legend(loc="lower right", fontsize=8)
    time_axis.invert_yaxis()
    with_cpu = [(position, row) for position, row in enumerate(rows) if row.cpu]
    cpu_axis.barh(
        [names[position] for position, _ in with_cpu],
        [row.cpu["cpuSeconds"] for _, row in with_cpu],
        color=[colours[position] for position, _ in with_cpu],
    )
    if rows[0].cpu:
        cpu_axis.axvline(rows[0].cpu["cpuSeconds"], color="tab:grey", linestyle="--")
    for position, row in with_cpu:
        text = f" {row.cpu['cpuSeconds']:.1f} CPU-s, {row.cpu['busyCores']:.2f} cores busy"
        cpu_axis.text(row.cpu["cpuSeconds"], position, text, va="center", fontsize=8)
    if with_cpu:
        cpu_axis.set_xlim(0, max(row.cpu["cpuSeconds"] for _, row in with_cpu) * 1.7)
    cpu_axis.set_xlabel("processor seconds, the whole machine's (James's task: not measured)")
    cpu_axis.set_title("processor time (cores kept busy on average)")
    figures = result.figures
    fig.suptitle(
        f"bench {result.target}: {figures['messages']:,} messages, {_when(figures.get('date'), None)} ({result.name})"
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _drawn_rows(figures: dict) -> list[PhaseRow]:
    """The phases timed on the benched keyspace (not the samples, nor the nightly run's steps), and James's own task
    for the same rows at the throughput it was measured at."""
    rows = [row for row in phase_rows(figures) if row.over_bare_scan and not row.step and not _is_james(row)]
    james_seconds = next((row.seconds / row.over_james for row in rows if row.over_james), None)
    if james_seconds:
        rows.append(
            PhaseRow(
                "James 3.8.1's own task, same rows",
                james_seconds,
                over_bare_scan=james_seconds / rows[0].seconds,
                over_james=1.0,
            )
        )
    return rows


def _is_james(row: PhaseRow) -> bool:
    return row.phase.startswith("James")


def _colour(row: PhaseRow) -> str:
    if row.phase.startswith("bare scan"):
        return "tab:grey"
    return "tab:red" if _is_james(row) else "tab:blue"


# ---- formatting ------------------------------------------------------------------------------------------------


def _seconds(value: float | None) -> str:
    return f"{value:.1f} s" if value is not None else "—"


def _rate(value: int | None, unit: str) -> str:
    return f"{value:,} {unit}" if value else ""


def _ratio(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.2f}x" if value < 10 else f"{value:,.0f}x" if value >= 100 else f"{value:.1f}x"


def _percent(share: float) -> str:
    return f"{share * 100:g} %"


def _count(found: dict | int) -> str:
    total = sum(found.values()) if isinstance(found, dict) else found
    return f"{total:,}"


def _cpu(cpu: dict | None, cores: int | None) -> str:
    if not cpu:
        return ""
    of = f" of {cores}" if cores else ""
    return f"{cpu['cpuSeconds']} CPU-s ({cpu['busyCores']:.2f}{of}; Cassandra {cpu['cassandraCpuSeconds']} CPU-s)"


def _when(date: str | None, time_of_day: str | None) -> str:
    if not date:
        return "undated"
    text = date.replace("T", " ").replace("Z", " UTC")
    return f"{text} ({time_of_day})" if time_of_day else text.strip()


def _commit(figures: dict) -> str:
    if not figures.get("commit"):
        return ""
    changed = " with uncommitted changes" if figures.get("uncommittedChanges") else ""
    return f", commit `{figures['commit']}`{changed}"


def _machine(record: dict) -> str:
    load = record.get("loadAverageAtStart")
    parts = [f"{record.get('cores')} cores", record.get("processor"), f"{record.get('memoryGiB')} GiB of memory"]
    text = ", ".join(part for part in parts if part)
    if load:
        text += f"; load average when the bench started {' / '.join(f'{value:.2f}' for value in load)} (1, 5, 15 min)"
    speeds = [record.get(f"speedReferenceSeconds{when}") for when in ("AtStart", "AtEnd")]
    if speeds[0] is not None:
        text += f"; speed reference (a fixed one-core loop, higher on a slower host) {speeds[0]:.2f} s at the start"
        text += f" and {speeds[1]:.2f} s at the end" if speeds[1] is not None else ""
    return text + "."
