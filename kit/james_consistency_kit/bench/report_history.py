"""The bench page's history: every published run, newest first: the result files kept in docs/benchmarks/ (the newest
of each target, size and place) and the records of the others (docs/benchmarks/history.json)."""

import json
from pathlib import Path

from james_consistency_kit.bench import formatting as show
from james_consistency_kit.bench.report_impact import IMPACT, impact_note
from james_consistency_kit.bench.results import BenchFile, load, on_one_node, size_class, where

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
        "bareScanSeconds": figures.get("bareScan", {}).get("seconds"),
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
        "note": impact_note(figures)
        if result.target == IMPACT
        else ""
        if on_one_node(figures)
        else f"on {where(figures)}",
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
        return show.when(row.get("date"), row.get("time"))
    if key in ("dryRun", "repair"):
        seconds, rate = row.get(f"{key}Seconds"), row.get(f"{key}TruthRowsPerSecond")
        text = show.seconds(seconds) if seconds is not None else ""
        return f"{text} ({rate:,} truth rows/s)" if rate else text or "—"
    if key == "bareScanSeconds":
        return show.seconds(row.get(key))
    if key == "brokenShare":
        return show.percent(row.get(key)) if row.get(key) is not None else "—"
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
    if key == "source":  # a kept result file, or how a recorded figure was taken
        return f"`{row[key]}`" if str(row.get(key, "")).endswith(".json") else row.get(key) or "—"
    value = row.get(key)
    return show.ratio(value) if isinstance(value, int | float) else "—"


HISTORY_FILE = "history.json"


def retire_superseded(folder: Path) -> list[str]:
    """Keep in `folder` the newest result file of each target, size (order of magnitude) and place; record each older
    one in the history file (its figures, without naming a file that is gone) and delete it. The retired files' names,
    oldest first."""
    results, _ = load([folder])
    newest: dict[tuple, BenchFile] = {}
    retired: list[BenchFile] = []
    for result in sorted(results, key=lambda each: each.date or ""):
        key = (result.target, size_class(result), where(result.figures))
        if key in newest:
            retired.append(newest[key])
        newest[key] = result
    if not retired:
        return []
    path = folder / HISTORY_FILE
    kept = json.loads(path.read_text()) if path.is_file() else {"history": []}
    for result in retired:
        kept["history"].append({**history_record(result), "source": None})
    kept["history"].sort(key=lambda row: row.get("date") or "")
    path.write_text(json.dumps(kept, indent=2) + "\n")
    for result in retired:
        (folder / result.name).unlink()
    return [result.name for result in retired]
