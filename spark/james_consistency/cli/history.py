"""`james-consistency history`: inconsistencies found and fixed per projection over time, from the kept reports
(james_consistency.report.history), as a table and on request a PNG."""

import argparse
import importlib.util
from datetime import datetime
from pathlib import Path

from james_consistency.errors import OperatorError
from james_consistency.report.history import (
    collect,
    parse_since,
    still_undoable,
    table_lines,
    totals_lines,
    undoable_lines,
)


def _since_argument(text: str) -> datetime:
    try:
        return parse_since(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def add_history_command(commands) -> None:
    """The `history` sub-command of the `james-consistency` parser."""
    from james_consistency.projections import TARGETS
    from james_consistency.runtime.paths import REPORTS_DIR

    history = commands.add_parser(
        "history", help="inconsistencies found and fixed per projection over time, from the kept reports"
    )
    history.add_argument("--target", help=f"only this projection ({', '.join(TARGETS)}, ...)")
    history.add_argument("--since", type=_since_argument, help="only runs started on or after (YYYY-MM-DD or ISO time)")
    history.add_argument("--keyspace", help="only runs on this keyspace")
    history.add_argument("--plot", metavar="FILE.png", help="also draw the history as a PNG")
    history.add_argument("--reports", default=str(REPORTS_DIR), help=f"reports folder (default {REPORTS_DIR})")
    history.set_defaults(handler=run_history)


def run_history(args) -> int:
    if args.plot and importlib.util.find_spec("matplotlib") is None:
        raise OperatorError("--plot draws with matplotlib: pip install 'james-consistency[plot]'")
    folder = Path(args.reports)
    if not folder.is_dir():
        print(f"no reports folder {folder}")
        return 0
    entries, skipped = collect(folder, target=args.target, since=args.since, keyspace=args.keyspace)
    if not entries:
        print(f"no runs in {folder}" + (" matching the filters" if args.target or args.since or args.keyspace else ""))
        return 0
    for line in table_lines(entries):
        print(line)
    print()
    for line in totals_lines(entries):
        print(line)
    undoable = still_undoable(entries)
    if undoable:
        print()
        print("Undoable runs (the undo_repair DAG takes the same work folder):")
        for line in undoable_lines(undoable):
            print(f"  {line}")
    if skipped:
        print(f"({skipped} JSON files in {folder} are not consistency reports: skipped)")
    if args.plot:
        from james_consistency.projections import TARGETS
        from james_consistency.report.history_plot import plot

        print(f"plot: {Path(args.plot)} ({', '.join(plot(entries, Path(args.plot), TARGETS))})")
    return 0
