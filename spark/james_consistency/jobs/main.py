"""The code of the spark-submit entry points (jobs/entry_points/): `reconcile.py` calls `main()` (a projection, by its
`--target`), `mailboxes.py` calls `mailboxes_main()` (the offline mailbox repair, with its own options and typed
confirmation), `undo.py` calls `undo_main()`. Each resolves its repair (jobs.targets), hands it to the engine, writes
the report and emits its figures.

Exit codes: 0 COMPLETED, 2 bad input (wrong keyspace, missing table, malformed arguments), 3 PARTIAL (some rows
failed; the report lists them; a re-run converges), 4 a Great Expectations gate failed (nothing written when it was
a gate before the repair), 5 an infrastructure failure: no node answered at start, or the node went away
during the run (the report names the stage; a re-run converges), 6 the window ended (--until, --max-ranges) at a
range boundary: nothing half-done, the next run of the same target and keyspace goes on. Only 5 is worth retrying.
A mailbox repair whose only unresolved findings are reported conflicts ends with status PARTIAL (as James's task)
and exit code 0: nothing failed.
"""

import argparse
import dataclasses
import importlib
import logging
import os
import sys
import threading
from functools import partial

from james_consistency.cassandra.consistency_levels import DEFAULT_CONSISTENCY_LEVEL
from james_consistency.cassandra.cql import CassandraSettings
from james_consistency.engine.reports import write_report
from james_consistency.errors import NodeUnreachable, OperatorError
from james_consistency.mailboxes import CONFIRMATION
from james_consistency.mailboxes.options import DEFAULT_MAX_PASSES, ORPHAN_PATH_POLICIES, RECREATE
from james_consistency.report.exit_codes import (
    EXIT_BAD_INPUT,
    EXIT_COMPLETED,
    EXIT_GATE_FAILED,
    EXIT_PARTIAL,
    EXIT_RUN_FAILED,
    EXIT_WINDOW_ENDED,
)
from james_consistency.report.metrics import emit as emit_metrics
from james_consistency.report.progress import mark_ended, progress_path
from james_consistency.report.run_report import PARTIAL, WINDOW_ENDED, RunReport, parse_report, summary_line
from james_consistency.settings import DEFAULT_MAX_DESTRUCTIVE_SHARE, setting


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="reconcile", description="Repair one James projection from its truth.")
    parser.add_argument("--target", required=True)
    parser.add_argument("--keyspace", required=True)
    parser.add_argument("--mode", choices=["check", "repair", "verify"], default="check")
    parser.add_argument("--messages-per-second", type=float, default=0.0)
    parser.add_argument(
        "--recheck-delay",
        type=float,
        default=0.0,
        help="seconds between scan and re-check; a verify reads a key it found wrong again this long after (1 s at "
        "least)",
    )
    parser.add_argument(
        "--truth-consistency", help="every truth re-read at this level (default: as James is configured)"
    )
    parser.add_argument("--write-consistency", default=DEFAULT_CONSISTENCY_LEVEL)
    parser.add_argument("--max-destructive-share", type=float, default=DEFAULT_MAX_DESTRUCTIVE_SHARE)
    parser.add_argument("--allow-destructive", action="store_true")
    parser.add_argument(
        "--remove-unused-flags", action="store_true", help="flags: also remove keywords no message uses any more"
    )
    parser.add_argument("--no-gates", action="store_true", help="skip the Great Expectations gates (benchmarks)")
    parser.add_argument("--report", required=True, help="where to write the JSON report")
    parser.add_argument(
        "--run-dir", help="work folder for the kept scan, candidates and outcomes (a path or a Hadoop URL)"
    )
    parser.add_argument(
        "--reuse-scan",
        action="store_true",
        help="repair/verify: work from the scan the check kept in --run-dir instead of scanning again",
    )
    add_range_arguments(parser)
    add_load_arguments(parser)
    parser.add_argument(
        "--verify-sample-fraction",
        type=float,
        default=0.001,
        help="share of consistent keys the check keeps for a verify that reuses its scan",
    )
    return parser


def add_range_arguments(parser: argparse.ArgumentParser) -> None:
    """The token-range scan's options, shared with the CLI."""
    parser.add_argument(
        "--ranges",
        type=int,
        help="scan in this many journalled token ranges (0: from the data size); a stopped run is resumed",
    )
    parser.add_argument(
        "--until", help="stop at the first range boundary after this time (ISO 8601, or HH:MM UTC); exit code 6"
    )
    parser.add_argument("--max-ranges", type=int, help="scan at most this many ranges in this run; exit code 6")
    parser.add_argument("--fresh", action="store_true", help="ignore the journal's unfinished scan and start over")
    parser.add_argument("--work-root", help="where the ranges' kept rows go (a path or a Hadoop URL)")


def add_load_arguments(parser: argparse.ArgumentParser) -> None:
    """How hard the scan may read the ring (engine.load_limits), shared with the CLI; unset, the deployment's
    settings (JAMES_SCAN_ROWS_PER_SECOND, JAMES_LATENCY_TARGET_MS, JAMES_RATE_FLOOR_ROWS_PER_SECOND); the adaptive
    mode only when asked (scheduled DAG runs ask for it as JAMES_ADAPTIVE_RATE says)."""
    from james_consistency.engine import load_limits

    parser.add_argument(
        "--scan-rows-per-second",
        type=_checked(load_limits.rows_per_second),
        metavar="R",
        help="rows a second the scan may read across the cluster, both tables together (0: no limit; default "
        "JAMES_SCAN_ROWS_PER_SECOND)",
    )
    parser.add_argument(
        "--adaptive",
        action=argparse.BooleanOptionalAction,
        help="adapt the scan's rate to the latency of a canary read of James's keyspace, between batches of token "
        "ranges (scans in ranges); off unless asked",
    )
    parser.add_argument(
        "--latency-target-ms",
        type=_checked(load_limits.latency_target_ms),
        metavar="MS",
        help="the canary's p99 the adaptive mode keeps under, in ms, or 'derived' (its p99 before the scan plus "
        "20 ms, or twice it if more; default JAMES_LATENCY_TARGET_MS)",
    )
    parser.add_argument(
        "--rate-floor",
        type=_checked(partial(load_limits.rows_per_second, what="rate floor")),
        metavar="R",
        help="the adaptive mode never reads slower than this, rows a second (default JAMES_RATE_FLOOR_ROWS_PER_SECOND)",
    )


def _checked(parse):
    """An argparse type from a parser raising OperatorError: its message as argparse's one-line error."""

    def parsed(text: str):
        try:
            return parse(text)
        except OperatorError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return parsed


def load_limits_given(args: argparse.Namespace):
    """The scan's limits as the command line gives them, the deployment's settings for the others; checked (an
    OperatorError names the one that makes no sense)."""
    from james_consistency.engine.load_limits import LoadLimits

    return LoadLimits.from_settings(
        adaptive=bool(args.adaptive),
        rows_per_second=args.scan_rows_per_second,
        latency_target_ms=args.latency_target_ms,
        floor=args.rate_floor,
    ).validate()


def settings_from_spark(spark) -> CassandraSettings:
    """Host and port as the connector sees them; credentials from the environment only."""
    conf = spark.sparkContext.getConf()
    env = CassandraSettings.from_env()
    return dataclasses.replace(
        env,
        host=conf.get("spark.cassandra.connection.host", env.host),
        port=int(conf.get("spark.cassandra.connection.port", str(env.port))),
        local_dc=conf.get("spark.cassandra.connection.localDC", env.local_dc or "") or None,
    )


def build_mailboxes_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mailboxes", description="Diagnose or repair mailbox <-> path (offline).")
    parser.add_argument("--keyspace", required=True)
    parser.add_argument("--mode", choices=["check", "repair", "verify"], default="check")
    parser.add_argument("--confirm", dest="confirmation", help=f"repair: must be {CONFIRMATION}")
    parser.add_argument("--merge", action="store_true")
    parser.add_argument("--orphan-paths", choices=ORPHAN_PATH_POLICIES, default=RECREATE)
    parser.add_argument("--max-passes", type=int, default=DEFAULT_MAX_PASSES)
    parser.add_argument("--sample-size", type=int, default=100)
    parser.add_argument("--no-gates", action="store_true")
    parser.add_argument("--report", required=True)
    parser.add_argument("--run-dir")
    return parser


def build_undo_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="undo", description="Take a repair back from its before-images.")
    parser.add_argument("--run-dir", required=True, help="the repair's work folder (a path or a Hadoop URL)")
    parser.add_argument("--apply", action="store_true", help="write (without it: a dry run, nothing written)")
    parser.add_argument("--confirm", dest="confirmation", help=f"undoing a mailbox repair: must be {CONFIRMATION}")
    parser.add_argument("--sample-size", type=int, default=100)
    parser.add_argument("--report", required=True)
    return parser


def main(argv: list[str] | None = None) -> int:
    configure_logging()
    args = build_parser().parse_args(argv)
    if not args.no_gates:
        # Great Expectations takes seconds to import: let that happen while the Spark JVM starts and scans (a later
        # import waits for this one to finish).
        threading.Thread(target=importlib.import_module, args=("great_expectations",), daemon=True).start()
    try:
        options = run_options(args)
    except OperatorError as error:
        print_error(error)
        return EXIT_BAD_INPUT
    return _run_and_publish(options, args.report)


def mailboxes_main(argv: list[str] | None = None) -> int:
    configure_logging()
    args = build_mailboxes_parser().parse_args(argv)
    options = mailbox_options(args)
    return _run_and_publish(options, args.report)


def undo_main(argv: list[str] | None = None) -> int:
    """The undo of the repair whose work folder is --run-dir: a dry run, or --apply. Its own work goes to a folder of
    that work folder (undo/<run id>), its report where --report says."""
    configure_logging()
    args = build_undo_parser().parse_args(argv)
    forget_progress(args.report)
    report, code = _run(spark_session("james-consistency-undo"), partial(_undo, args))
    if report is not None:
        publish(report, args.report)
    end_progress(args.report, report, code)
    return code


def _undo(args: argparse.Namespace, spark, settings: CassandraSettings) -> dict:
    from james_consistency.undo.repair import undo_run

    return undo_run(
        spark,
        settings,
        args.run_dir,
        args.apply,
        args.confirmation,
        args.sample_size,
        progress_file=str(progress_path(args.report)),
    )


def run_options(args: argparse.Namespace):
    """The run's options as the command line gives them; OperatorError for an --until that is no time."""
    from james_consistency.engine.ranges import parse_until
    from james_consistency.engine.run import RunOptions
    from james_consistency.projections.flags import FlagOptions

    until = parse_until(args.until) if args.until else None
    if args.remove_unused_flags and args.target != "flags":
        raise OperatorError(f"--remove-unused-flags is an option of the flags target, not of {args.target}")
    return RunOptions(
        target=args.target,
        keyspace=args.keyspace,
        mode=args.mode,
        messages_per_second=args.messages_per_second,
        recheck_delay_seconds=args.recheck_delay,
        truth_consistency=args.truth_consistency,
        write_consistency=args.write_consistency,
        max_destructive_share=args.max_destructive_share,
        allow_destructive=args.allow_destructive,
        run_dir=args.run_dir,
        reuse_scan=args.reuse_scan,
        verify_sample_fraction=args.verify_sample_fraction,
        gates_enabled=not args.no_gates,
        target_options=FlagOptions(remove_unused=True) if args.remove_unused_flags else None,
        ranges=args.ranges,
        until=until,
        max_ranges=args.max_ranges,
        fresh=args.fresh,
        work_root=args.work_root,
        load=load_limits_given(args),
    )


def mailbox_options(args: argparse.Namespace):
    """The mailbox repair's options as its command line gives them."""
    from james_consistency.engine.run import RunOptions
    from james_consistency.mailboxes.options import MailboxOptions

    return RunOptions(
        target="mailboxes",
        keyspace=args.keyspace,
        mode=args.mode,
        target_options=MailboxOptions(
            confirmation=args.confirmation,
            merge=args.merge,
            orphan_paths=args.orphan_paths,
            max_passes=args.max_passes,
        ),
        sample_size=args.sample_size,
        gates_enabled=not args.no_gates,
        run_dir=args.run_dir,
    )


def _run_and_publish(options, report_path: str) -> int:
    """Check what can be checked before a Spark JVM starts (a repair without its confirmation is refused at once),
    then run; the report published when there is one."""
    from james_consistency.jobs.targets import confirm

    try:
        options.validate()
        confirm(options)
    except OperatorError as error:
        print_error(error)
        return EXIT_BAD_INPUT
    from james_consistency.jobs.targets import run_target

    forget_progress(report_path)
    options.progress_file = str(progress_path(report_path))
    spark = spark_session(f"james-consistency-{options.mode}-{options.target}")
    report, code = _run(spark, lambda spark, settings: run_target(spark, settings, options))
    if report is not None:
        publish(report, report_path)
    end_progress(report_path, report, code)
    return code


def forget_progress(report_path: str) -> None:
    """An earlier attempt's progress (a task retried) is not this run's."""
    progress_path(report_path).unlink(missing_ok=True)


def end_progress(report_path: str, report: dict | None, code: int) -> None:
    """The progress the run published marked as ended, once its report is written: as the report's status, or by
    the exit code of a run that stopped before it had one."""
    mark_ended(progress_path(report_path), report["status"] if report else f"exit code {code}")


def _run(spark, run) -> tuple[dict | None, int]:
    """The report of `run(spark, settings)` and its exit code; no report when the run stopped before it had one
    (said on stderr). The Spark session is stopped either way."""
    from james_consistency.engine.run import GateFailed, RunFailed

    try:
        report = run(spark, settings_from_spark(spark))
    except GateFailed as failure:
        return failure.report, EXIT_GATE_FAILED
    except RunFailed as failure:
        print_error(failure.report["error"])
        return failure.report, EXIT_RUN_FAILED
    except NodeUnreachable as error:
        print_error(error)
        return None, EXIT_RUN_FAILED
    except OperatorError as error:
        print_error(error)
        return None, EXIT_BAD_INPUT
    finally:
        spark.stop()
    return report, exit_code(parse_report(report))


def exit_code(report: RunReport) -> int:
    """The exit code of a run that ended with a report (a failed gate or run raises instead): 6 when its window
    ended; 3 when it is PARTIAL because something failed or could not be read (a re-run converges); 0 otherwise,
    reported conflicts included."""
    if report.status == WINDOW_ENDED:
        return EXIT_WINDOW_ENDED
    if report.status == PARTIAL and (report.failedCount or report.unreadableTruth):
        return EXIT_PARTIAL
    return EXIT_COMPLETED


# ---- the job process ---------------------------------------------------------------------------------------------


def configure_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    for noisy in ("great_expectations", "py4j", "cassandra"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def end_process(code: int) -> None:
    """End a job's process with `code` once its Spark session is stopped and its report written, without the
    interpreter's teardown of the modules Great Expectations imports (pandas, scipy, ...): about 0.7 s of every
    spark-submit, with nothing left to clean up."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def print_error(error) -> None:
    print(f"james-consistency: error: {error}", file=sys.stderr)


def spark_session(app_name: str):
    """The job's Spark session. The password and truststore password come from the job's environment, never from its
    command line."""
    from pyspark.sql import SparkSession

    from james_consistency.runtime.spark_env import connector_secrets, import_named_classes

    builder = SparkSession.builder.appName(app_name)
    for key, value in connector_secrets(CassandraSettings.from_env()).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(setting("SPARK_LOG_LEVEL"))
    import_named_classes(spark)
    return spark


def publish(report: dict, path: str) -> None:
    """The report written to `path` and its figures emitted, then on stdout: its summary line, each failed gate (but
    those whose failure is an answer, not a fault: `blocking` false) and where the report is."""
    written = write_report(report, path)
    typed = parse_report(report, source=str(written))
    emit_metrics(typed)  # to StatsD / OpenTelemetry when Airflow's [metrics] settings say so (never fails the job)
    print(summary_line(typed))
    for gate in typed.gates:
        if not gate.success and gate.blocking:
            print(f"gate {gate.name} FAILED: {gate.failed_expectations}")
    print(f"report: {written}")
