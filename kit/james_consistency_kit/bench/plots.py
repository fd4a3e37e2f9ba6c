"""The bench page's figures, drawn with matplotlib: a speed bench's phases against the bare scan and James's own
task; the impact bench's traffic latency over time with the nights' steps marked, and its trade-off."""

from datetime import datetime
from pathlib import Path

from james_consistency_kit.bench import formatting as show
from james_consistency_kit.bench.report_impact import period_name
from james_consistency_kit.bench.report_phases import PhaseRow, phase_rows
from james_consistency_kit.bench.results import BenchFile

# The impact figures' colours of a period, by what ran in it.
PERIOD_COLOURS = {"default": "tab:green", "unthrottled": "tab:red", "limit": "tab:purple", "none": "tab:grey"}


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
        ratios = [f"{show.ratio(row.over_bare_scan)} scan"] + (
            [f"{show.ratio(row.over_james)} James"] if row.over_james else []
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
        f"bench {result.target}: {figures['messages']:,} messages, "
        f"{show.when(figures.get('date'), None)} ({result.name})"
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


# ---- the impact bench --------------------------------------------------------------------------------------------


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _kind(name: str) -> str:
    if name.startswith("limit"):
        return "limit"
    return {"defaultNight": "default", "unthrottledNight": "unthrottled"}.get(name, "none")


def draw_impact_timeline(result: BenchFile, path: Path) -> None:
    """The traffic's latency over time (p50, p99, max of each bucket of seconds; failures marked), each period shaded
    and named, each night's steps marked, and on the right axis the rate each night's scan read at."""
    plt = _pyplot()
    figures = result.figures
    timeline = figures["timeline"]
    rows, origin, width = timeline["buckets"], timeline["origin"], timeline["bucketSeconds"]
    periods = figures["periods"]
    fig, axis = plt.subplots(figsize=(15, 6))
    seconds = [row[0] for row in rows]
    every = f"each {width:g} s"
    axis.plot(seconds, [row[2] for row in rows], color="tab:blue", linewidth=0.8, label=f"p50 of {every}")
    axis.plot(seconds, [row[3] for row in rows], color="tab:orange", linewidth=0.8, label=f"p99 of {every}")
    axis.scatter(seconds, [row[4] for row in rows], s=3, color="tab:grey", alpha=0.5, label=f"max of {every}")
    failed = [row for row in rows if row[5]]
    if failed:
        axis.scatter(
            [row[0] for row in failed],
            [row[4] for row in failed],
            marker="x",
            color="black",
            label="an error or timeout",
        )
    axis.set_yscale("log")
    quiet = periods["noNight"]["latency"]["all"]["p99Ms"]
    if quiet:
        axis.axhline(quiet, color="tab:orange", linestyle="--", linewidth=0.8, label="p99 without a night")
        axis.axhline(2 * quiet, color="tab:red", linestyle=":", linewidth=0.8, label="2x that: the target")
    top = max((row[4] for row in rows), default=1.0)
    rate_axis = axis.twinx()
    for name, period in periods.items():
        start = period["startSecond"]
        axis.axvspan(start, start + period["seconds"], color=PERIOD_COLOURS[_kind(name)], alpha=0.12)
        axis.text(start, top, f" {period_name(name)}", rotation=90, va="top", fontsize=7)
        night = period.get("night")
        if night:
            for step, (began, _) in night["stepTimes"].items():
                axis.axvline(began, color="black", linewidth=0.4, alpha=0.5)
                axis.text(began, axis.get_ylim()[0], f" {step[0]}", fontsize=6, va="bottom")
            if night.get("scanTimes"):
                axis.axvspan(*night["scanTimes"], ymin=0, ymax=0.02, color=PERIOD_COLOURS[_kind(name)])
            _draw_scan_rate(rate_axis, night, origin, PERIOD_COLOURS[_kind(name)])
    rate_axis.set_ylabel("the scan's rows a second, each batch of ranges (steps, in the night's colour)")
    rate_axis.set_ylim(bottom=0)
    axis.set_xlabel(
        "seconds since the first period (steps: c check, r repair, v verify; the bar at the bottom: the scan)"
    )
    axis.set_ylabel("latency from when the operation was due (ms)")
    axis.legend(loc="upper right", fontsize=7)
    traffic = figures["traffic"]
    axis.set_title(
        f"bench impact: {figures['messages']:,} messages, {traffic['opsPerSecond']:g} operations a second; "
        f"{show.when(figures.get('date'), None)} ({result.name})"
    )
    _save(plt, fig, path)


def _draw_scan_rate(axis, night: dict, origin: float, colour: str) -> None:
    """The rate of each batch of the night's scan (its report's `load`), as a step line."""
    batches = (night.get("loadReport") or {}).get("rate") or []
    points = [
        (datetime.fromisoformat(batch["at"]).timestamp() - origin, batch["rowsPerSecond"])
        for batch in batches
        if batch.get("at") and batch.get("rowsPerSecond") is not None
    ]
    if points:
        axis.step([at for at, _ in points], [rate for _, rate in points], where="post", color=colour, linewidth=1.2)


def draw_trade_off(result: BenchFile, path: Path) -> None:
    """Each night under traffic: its duration against the traffic's p99 over the p99 without a night, over the whole
    night (filled) and while its scan read (hollow); the fixed limits joined, the unthrottled night and the default
    (adaptive) one marked."""
    plt = _pyplot()
    points = [point for point in result.figures["tradeOff"] if point["p99OverNoNight"] is not None]
    fig, axis = plt.subplots(figsize=(9, 6))
    fixed = sorted(
        (point for point in points if point["scanRowsPerSecond"] and not point["adaptive"]),
        key=lambda point: point["scanRowsPerSecond"],
    )
    for key, hollow, label in (
        ("p99OverNoNight", False, "fixed scan limits: the whole night"),
        ("p99OverNoNightDuringScan", True, "the same, while the scan read"),
    ):
        shown = [point for point in fixed if point.get(key) is not None]
        if shown:
            axis.plot(
                [point["nightSeconds"] for point in shown],
                [point[key] for point in shown],
                "o--" if hollow else "o-",
                color=PERIOD_COLOURS["limit"],
                markerfacecolor="white" if hollow else PERIOD_COLOURS["limit"],
                label=label,
            )
    for point in fixed:
        label = f" {round(point['scanRowsPerSecond']):,} rows/s"
        axis.annotate(label, (point["nightSeconds"], point["p99OverNoNight"]), fontsize=8)
    for point in points:
        if point["adaptive"]:
            style = {"marker": "*", "s": 250, "colour": PERIOD_COLOURS["default"], "label": "default night (adaptive)"}
        elif not point["scanRowsPerSecond"]:
            style = {"marker": "s", "s": 80, "colour": PERIOD_COLOURS["unthrottled"], "label": "unthrottled night"}
        else:
            continue
        colour = style.pop("colour")
        axis.scatter([point["nightSeconds"]], [point["p99OverNoNight"]], zorder=3, color=colour, **style)
        if point.get("p99OverNoNightDuringScan") is not None:
            axis.scatter(
                [point["nightSeconds"]],
                [point["p99OverNoNightDuringScan"]],
                zorder=3,
                marker=style["marker"],
                s=style["s"],
                facecolors="white",
                edgecolors=colour,
            )
    axis.axhline(2.0, color="tab:red", linestyle=":", label="the target: 2x")
    axis.set_xlabel("the night's duration under traffic (s)")
    axis.set_ylabel("the traffic's p99 during the night / without a night")
    axis.set_ylim(bottom=0)
    axis.set_xlim(left=0)
    axis.legend(fontsize=8)
    axis.set_title(f"a night's scan limit: its duration against its cost to James's users ({result.name})")
    _save(plt, fig, path)


def _save(plt, fig, path: Path) -> None:
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
