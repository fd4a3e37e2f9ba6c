"""The kit's `bench` commands: `bench TARGET` times a repair, `bench impact` measures what a night costs James's
users, `bench report` writes docs/benchmarks.md, `bench model` predicts a night on a cluster. The bench's modules are
imported when a command runs (they import Spark)."""

import argparse
import json

from james_consistency.cli.main import add_connection_options, cassandra_settings, non_negative, rate
from james_consistency.errors import OperatorError

# The impact bench's client rate: operations a second (see docs/benchmarks.md's impact section for why this one).
DEFAULT_OPS_PER_SECOND = 100.0


def add_bench_command(commands, targets) -> None:
    """`bench TARGET [options]` times a repair; `bench report [FILES]` writes docs/benchmarks.md from the results."""
    bench = commands.add_parser(
        "bench", help="benchmark a repair (bare scan, dry run, repair, James 3.8.1 itself), or write the bench page"
    )
    kinds = bench.add_subparsers(dest="bench_command", required=True)
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument(
        "--messages", type=non_negative, default=1_000_000, help="messages to seed (reused if present)"
    )
    options.add_argument("--inconsistency-rate", type=rate, default=0.01, help="share of messages to break, 0..1")
    options.add_argument("--reference-sample", type=non_negative, default=20_000, help="rows for the James reference")
    options.add_argument(
        "--james-sample",
        type=non_negative,
        default=20_000,
        help="messages of the keyspace James's own task runs on when the benched one is larger (default 20000)",
    )
    options.add_argument("--random-seed", type=int, default=42)
    options.add_argument(
        "--replication-factor",
        type=non_negative,
        default=1,
        help="replicas of the seeded keyspace (3 on `cassandra start --nodes 3`); its keyspaces are bench_james_rfN_*",
    )
    options.add_argument("--output", help="JSON figures (default: .local/bench/<target>-<N>.json)")
    options.add_argument(
        "--publish",
        action="store_true",
        help="also copy the figures into docs/benchmarks/ and rewrite docs/benchmarks.md (bench report)",
    )
    add_connection_options(options)
    for target in targets:
        kinds.add_parser(target, parents=[options], help=f"time the {target} repair").set_defaults(
            handler=_bench, target=target
        )
    _add_bench_impact(kinds)
    report = kinds.add_parser("report", help="write docs/benchmarks.md and its figure from the bench's JSON files")
    report.add_argument("results", nargs="*", help="result files or folders of them (default: docs/benchmarks/)")
    report.add_argument("--page", help="the page to write (default: docs/benchmarks.md; its figure beside it)")
    report.set_defaults(handler=_bench_report)
    model = kinds.add_parser(
        "model",
        help="a night on any cluster, modelled from the messages bench's figures (see kit/.../bench/model.py)",
    )
    model.add_argument("results", nargs="*", help="messages bench result files (default: the latest two sizes)")
    model.add_argument("--messages", type=non_negative, default=100_000_000)
    model.add_argument("--broken-share", type=rate, default=0.01)
    model.add_argument("--executors", type=non_negative, default=40, help="Spark executor cores")
    model.add_argument("--nodes", type=non_negative, default=6, help="Cassandra nodes")
    model.add_argument("--cores-per-node", type=non_negative, default=8)
    model.add_argument("--cassandra-share", type=rate, default=0.5, help="share of the nodes' cores the night may take")
    model.add_argument("--window-minutes", type=float, default=60.0, help="the night's window")
    model.add_argument(
        "--scan-rows-per-second",
        type=_rows_per_second,
        default=0.0,
        metavar="R",
        help="the scan's limit across the cluster, as JAMES_SCAN_ROWS_PER_SECOND (0: none)",
    )
    model.set_defaults(handler=_bench_model)


def _add_bench_impact(kinds) -> None:
    """`bench impact`: the traffic's latency without a night, during a default night and an unthrottled one."""
    impact = kinds.add_parser(
        "impact",
        help="what a night costs James's users: a James-like client's latency without a night, during a default "
        "night, an unthrottled one and nights at fixed scan limits (see kit/.../bench/impact.py)",
    )
    impact.add_argument("--messages", type=non_negative, default=100_000, help="messages to seed (reused if present)")
    impact.add_argument("--inconsistency-rate", type=rate, default=0.01, help="share broken before each night, 0..1")
    impact.add_argument(
        "--ops-per-second",
        type=positive_number,
        default=DEFAULT_OPS_PER_SECOND,
        help=f"the client's fixed rate of operations (default {DEFAULT_OPS_PER_SECOND:g})",
    )
    impact.add_argument(
        "--quiet-seconds", type=positive_number, default=60.0, help="the period without a night (default 60)"
    )
    impact.add_argument(
        "--scan-limits",
        type=_scan_limits,
        help="the trade-off's fixed scan limits, rows a second, comma-separated (default: shares of the "
        "unthrottled night's scan rate)",
    )
    impact.add_argument(
        "--repeats-without-traffic", type=non_negative, default=2, help="default and unthrottled nights, each"
    )
    impact.add_argument("--timeout-seconds", type=positive_number, default=2.0, help="an operation's timeout")
    impact.add_argument("--random-seed", type=int, default=42)
    impact.add_argument("--output", help="JSON figures (default: .local/bench/impact-<N>.json)")
    impact.add_argument(
        "--publish", action="store_true", help="also copy the figures into docs/benchmarks/ and rewrite the page"
    )
    add_connection_options(impact)
    impact.set_defaults(handler=_bench_impact)


def positive_number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{value} must be above 0")
    return value


def _scan_limits(text: str) -> tuple[int, ...]:
    limits = tuple(non_negative(part.strip()) for part in text.split(",") if part.strip())
    if not limits or 0 in limits:
        raise argparse.ArgumentTypeError(f"'{text}' is not a list of scan limits above 0 (e.g. 5000,10000,20000)")
    return limits


def _rows_per_second(text: str) -> float:
    from james_consistency.engine.load_limits import rows_per_second

    try:
        return rows_per_second(text)
    except OperatorError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _bench(args) -> int:
    from james_consistency.runtime.spark_env import local_session

    from james_consistency_kit.bench import bench_messages, bench_projection
    from james_consistency_kit.bench.results import require_only_the_benched_nodes

    _log_the_bench()
    settings = cassandra_settings(args)
    require_only_the_benched_nodes(settings)
    spark = local_session("james-consistency-bench", settings)
    try:
        if args.target == "messages":
            figures = bench_messages(
                spark,
                settings,
                messages=args.messages,
                inconsistency_rate=args.inconsistency_rate,
                reference_sample=args.reference_sample,
                seed=args.random_seed,
                james_sample=args.james_sample,
                replication_factor=args.replication_factor,
            )
        else:
            figures = bench_projection(
                spark,
                settings,
                args.target,
                messages=args.messages,
                rate=args.inconsistency_rate,
                seed=args.random_seed,
                replication_factor=args.replication_factor,
            )
    finally:
        spark.stop()
    print(json.dumps(figures, indent=2))
    return _keep(figures, args)


def _bench_impact(args) -> int:
    from james_consistency.runtime.spark_env import local_session

    from james_consistency_kit.bench.impact import bench_impact

    _log_the_bench()
    settings = cassandra_settings(args)
    spark = local_session("james-consistency-bench-impact", settings)
    try:
        figures = bench_impact(
            spark,
            settings,
            messages=args.messages,
            inconsistency_rate=args.inconsistency_rate,
            ops_per_second=args.ops_per_second,
            quiet_seconds=args.quiet_seconds,
            scan_limits=args.scan_limits,
            repeats_without_traffic=max(args.repeats_without_traffic, 1),
            timeout_seconds=args.timeout_seconds,
            seed=args.random_seed,
        )
    finally:
        spark.stop()
    print(json.dumps({key: figures[key] for key in ("ratios", "targets", "tradeOff", "userWrites")}, indent=2))
    return _keep(figures, args)


def _log_the_bench() -> None:
    import logging

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    for noisy in ("great_expectations", "py4j", "cassandra"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def _keep(figures: dict, args) -> int:
    """A bench run's figures written; with --publish, into docs/benchmarks/ (retiring the older file of the same
    target, size and place to the history) and the page made again."""
    from james_consistency_kit.bench import write_figures

    written = write_figures(figures, args.output)
    print(f"figures: {written}")
    if args.publish:
        from james_consistency_kit.bench.report import write_report
        from james_consistency_kit.bench.report_history import retire_superseded
        from james_consistency_kit.bench.results import PUBLISHED_DIR, publish

        print(f"published: {publish(written)}")
        for name in retire_superseded(PUBLISHED_DIR):
            print(f"moved to the history: {name}")
        _print_report(*write_report())
    return 0


def _bench_report(args) -> int:
    from pathlib import Path

    from james_consistency_kit.bench.report import PAGE, write_report

    _print_report(*write_report([Path(path) for path in args.results], Path(args.page) if args.page else PAGE))
    return 0


def _bench_model(args) -> int:
    """The model's constants, how it predicts each bench run it was made from and (fitted on the published files)
    the runs on a ring and a Spark cluster, on the runs' own cores, and the night asked for on separate machines."""
    from pathlib import Path

    from james_consistency_kit.bench.model import against_the_bench, fitted, measured_runs, night, on_a_cluster
    from james_consistency_kit.bench.results import PUBLISHED_DIR, load

    files, _ = load([Path(path) for path in args.results] or [PUBLISHED_DIR])
    measured = measured_runs(files)
    if not measured:
        raise OperatorError("no messages bench result to model from: run `james-consistency bench messages` first")
    constants, runs = fitted(measured, given=bool(args.results))
    checked = against_the_bench(constants, runs)
    on_rings = [] if args.results else against_the_bench(constants, on_a_cluster(measured))
    predicted = night(
        constants,
        args.messages,
        args.broken_share,
        args.executors,
        args.nodes,
        args.cores_per_node,
        args.cassandra_share,
        args.window_minutes,
        args.scan_rows_per_second,
    )
    print(
        json.dumps(
            {
                "constants": {name: float(f"{value:.4g}") for name, value in vars(constants).items()},
                "againstTheBench": checked,
                **({"againstRunsOnARing": on_rings} if on_rings else {}),
                "night": predicted,
            },
            indent=2,
        )
    )
    return 0


def _print_report(page, figure) -> None:
    print(f"page: {page}")
    if figure is not None:
        print(f"figure: {figure}")
