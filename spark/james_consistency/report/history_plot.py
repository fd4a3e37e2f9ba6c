"""The history of the kept reports drawn as a PNG (`james-consistency history --plot`): matplotlib with its Agg
backend, no display needed (the `plot` extra)."""

from __future__ import annotations

import json
import zlib
from datetime import datetime
from pathlib import Path

from james_consistency.report.history import RunEntry


def _color(target: str, known: tuple[str, ...]):
    """One stable colour per projection (the same in every plot): the known targets' in their order, then one by the
    name's checksum."""
    from matplotlib import colormaps

    index = known.index(target) if target in known else len(known) + zlib.crc32(target.encode())
    return colormaps["tab10"](index % 10)


def series(entries: list[RunEntry]) -> dict[str, list[tuple[datetime, int]]]:
    """What the plot draws: '<projection> found' and '<projection> fixed', (time, count) points each."""
    drawn: dict[str, list[tuple[datetime, int]]] = {}
    for entry in entries:
        if entry.found is not None:
            drawn.setdefault(f"{entry.target} found", []).append((entry.when, entry.found))
        if entry.fixed is not None:
            drawn.setdefault(f"{entry.target} fixed", []).append((entry.when, entry.fixed))
    return drawn


def plot(
    entries: list[RunEntry], path: Path, known_targets: tuple[str, ...] = ()
) -> dict[str, list[tuple[datetime, int]]]:
    """A PNG: inconsistencies found (top) and fixed (bottom) per projection over time; failed runs marked with a
    red cross; `known_targets` give the first colours, in their order. The series drawn are also in the PNG's
    `Series` text chunk (JSON: label -> number of points, and `failed runs`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    drawn = series(entries)
    figure, (found_axis, fixed_axis) = plt.subplots(2, 1, figsize=(11, 7), sharex=True, constrained_layout=True)
    for label, points in drawn.items():
        target, what = label.rsplit(" ", 1)
        axis = found_axis if what == "found" else fixed_axis
        times, counts = zip(*points, strict=True)
        axis.plot(times, counts, marker="o", linewidth=2, color=_color(target, known_targets), label=target)
    failed = [entry for entry in entries if entry.status == "FAILED"]
    if failed:
        found_axis.scatter(
            [entry.when for entry in failed],
            [entry.found or 0 for entry in failed],
            marker="x",
            s=80,
            color="red",
            zorder=3,
            label="failed run",
        )
    found_axis.set_title("Inconsistencies found per projection")
    fixed_axis.set_title("Inconsistencies fixed per projection (repairs)")
    for axis in (found_axis, fixed_axis):
        axis.set_ylabel("rows")
        axis.set_ylim(bottom=0)
        axis.yaxis.set_major_locator(MaxNLocator(integer=True))
        axis.grid(True, alpha=0.3)
        if axis.get_legend_handles_labels()[0]:
            axis.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    fixed_axis.xaxis.set_major_formatter(mdates.ConciseDateFormatter(fixed_axis.xaxis.get_major_locator()))
    fixed_axis.set_xlabel("run start (UTC)")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(
        path,
        format="png",
        dpi=100,
        metadata={
            "Title": "james-consistency history",
            "Series": json.dumps(
                {
                    **{label: len(points) for label, points in drawn.items()},
                    **({"failed runs": len(failed)} if failed else {}),
                }
            ),
        },
    )
    plt.close(figure)
    return drawn
