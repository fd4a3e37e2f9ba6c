"""`james-consistency bench report`: docs/benchmarks.md and its figures, written from the bench's JSON result files.

The page has the bench's method, the latest figures of each target's largest size (a table per file: each phase's
time, throughput, processor time with the cores it kept busy, and its ratios to the bare scan and to James's own task),
what a night costs James's users (the latest `bench impact`), the model of a night on a cluster fitted on the latest
two sizes of `bench messages` (`bench model`), and a dated history: every result file given, and the figures recorded
before the bench wrote this page (docs/benchmarks/history.json). A new result file in docs/benchmarks/ is all a new
figure takes.

Modules: report_phases (the method and the speed benches' tables), report_impact (the impact section), report_model
(the model's section), report_history (the history), plots (the figures), formatting (how figures are written).
"""

from pathlib import Path

from james_consistency.runtime.paths import PROJECT_ROOT

from james_consistency_kit.bench import formatting as show
from james_consistency_kit.bench.plots import draw_impact_timeline, draw_phases, draw_trade_off
from james_consistency_kit.bench.report_history import history_rows, history_section
from james_consistency_kit.bench.report_impact import IMPACT, TIMELINE_FIGURE, TRADE_OFF_FIGURE, impact_section
from james_consistency_kit.bench.report_model import model_section
from james_consistency_kit.bench.report_phases import METHOD, file_section
from james_consistency_kit.bench.results import PUBLISHED_DIR, BenchFile, load, on_one_node, size_class

PAGE = PROJECT_ROOT / "docs" / "benchmarks.md"
FIGURE = "phases.png"


def write_report(paths: list[Path] | None = None, page: Path = PAGE) -> tuple[Path, Path | None]:
    """Write the page (and its figures, in the folder named after the page) from the result files and history
    records among `paths` (default: docs/benchmarks/); the page and the phases' figure (None when none was drawn)."""
    results, history = load(paths or [PUBLISHED_DIR])
    latest = latest_per_target(results)
    speed = [result for result in latest if result.target != IMPACT]
    impact = next((result for result in latest if result.target == IMPACT), None)
    folder = page.parent / page.stem
    drawn = next((result for result in speed if result.target == "messages"), speed[0] if speed else None)
    if drawn is not None:
        draw_phases(drawn, folder / FIGURE)
    if impact is not None:
        draw_impact_timeline(impact, folder / TIMELINE_FIGURE)
        draw_trade_off(impact, folder / TRADE_OFF_FIGURE)
    page.parent.mkdir(parents=True, exist_ok=True)
    figure_link = f"{page.stem}/{FIGURE}" if drawn is not None else None
    impact_text = impact_section(impact, page.stem) if impact is not None else ""
    history = history_rows(results, history)
    page.write_text(render_page(speed, history, figure_link, drawn, model_section(results), impact_text))
    return page, folder / FIGURE if drawn is not None else None


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


def render_page(
    latest: list[BenchFile],
    history: list[dict],
    figure: str | None,
    drawn: BenchFile | None,
    model: str = "",
    impact: str = "",
) -> str:
    """The page: its method, the latest file of each speed target, the figure drawn from `drawn`, what a night costs
    James's users, the model, the history."""
    parts = [
        "# Benchmarks\n\nHow fast the repairs are on a real Cassandra node, against the floor (a bare scan of the "
        "tables) and against James's own tasks, and what a night costs James's users meanwhile. Written by "
        "`james-consistency bench report`.\n",
        METHOD,
    ]
    if latest and latest[0].figures.get("machine"):
        parts.append(f"The latest run's machine: {show.machine(latest[0].figures['machine'])}\n")
    parts.append("## Latest figures\n")
    parts += [file_section(result) for result in latest] or ["No bench result file yet: publish one (see above).\n"]
    if figure is not None and drawn is not None:
        parts.append(
            f"![each phase of {drawn.name} against the bare scan and James's own task, time and processor "
            f"time]({figure})\n"
        )
    if impact:
        parts.append(impact)
    if model:
        parts.append(model)
    parts.append(history_section(history))
    return "\n".join(parts)
