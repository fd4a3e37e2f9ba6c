"""`james-consistency`: the command line of the installed package. Its own commands drive the repair jobs outside
Airflow (check, repair, verify), read the kept reports (history) and list the settings; they need no more than the
package. The local kit's commands (local nodes, seeders, faults, James harness, demo, bench) are added when the kit
is installed (`pip install 'james-consistency[kit]'`); without it, each of them says so in one line.
"""

import argparse
import sys
from datetime import UTC, datetime
from importlib import metadata

from james_consistency.cassandra.consistency_levels import CONSISTENCY_LEVELS, DEFAULT_CONSISTENCY_LEVEL
from james_consistency.errors import NodeUnreachable, OperatorError
from james_consistency.jobs.submit import submit
from james_consistency.report.exit_codes import EXIT_BAD_INPUT, EXIT_RUN_FAILED
from james_consistency.settings import DEFAULT_MAX_DESTRUCTIVE_SHARE

KIT_EXTRA = "pip install 'james-consistency[kit]'"
# The entry point group through which the kit adds its commands (kit/pyproject.toml).
COMMANDS_GROUP = "james_consistency.commands"
# The local kit's commands, named here for an install without the kit.
KIT_COMMANDS = ("cassandra", "spark", "schema", "seed", "break", "traffic", "demo", "ui", "bench", "james")
# A repair's default wait between its scan and its re-check, letting James's writes in flight land.
RECHECK_DELAY = 5.0


def non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative: sizes must be 0 or more")
    return value


def rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"rate {value} is outside 0..1")
    return value


def port(text: str) -> int:
    value = non_negative(text)
    if not 0 < value < 65536:
        raise argparse.ArgumentTypeError(f"port {value} is outside 1..65535")
    return value


def add_connection_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", help="Cassandra contact point (default: CASSANDRA_HOST or 127.0.0.1)")
    parser.add_argument("--port", type=port, help="CQL port (default: CASSANDRA_PORT or 9042)")


def add_quiet_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="no progress while the job runs (a bar on a terminal, else a line now and then)",
    )


def cassandra_settings(args):
    from james_consistency.cassandra.cql import CassandraSettings

    return CassandraSettings.from_env(host=args.host, port=args.port)


def version() -> str:
    from james_consistency.report.run_report import package_version

    return package_version() or "(not installed)"


def build_parser() -> argparse.ArgumentParser:
    from james_consistency.cli.history import add_history_command

    parser = argparse.ArgumentParser(
        prog="james-consistency",
        description="Consistency repairs for Apache James's Cassandra tables.",
    )
    parser.add_argument("--version", action="version", version=f"james-consistency {version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    if not _add_kit_commands(commands):
        parser.epilog = f"The local kit's commands need the kit: {KIT_EXTRA}"
    add_history_command(commands)  # history [--target T] [--since DATE] [--plot FILE.png]

    settings_table = commands.add_parser("settings", help="the deployment's JAMES_* settings, as a markdown table")
    settings_table.set_defaults(handler=_print_settings)

    undo = commands.add_parser("undo", help="take a repair back from its before-images (a dry run unless --apply)")
    undo.add_argument("--run-dir", required=True, help="the repair's work folder (its report's workDir)")
    undo.add_argument("--apply", action="store_true", help="write; without it, say what would be restored")
    undo.add_argument(
        "--i-know-what-i-am-doing",
        dest="offline_confirmation",
        metavar="ALL-SERVICES-ARE-OFFLINE",
        help="required to undo the offline mailbox repair, once SMTP, IMAP and JMAP are stopped",
    )
    undo.add_argument("--report", help="JSON report path (default: .local/reports/undo-<time>.json)")
    add_connection_options(undo)
    add_quiet_option(undo)
    undo.set_defaults(handler=_undo)

    for mode, help_text in (
        ("check", "diagnose a projection (dry run: same counts as a repair, nothing written)"),
        ("repair", "repair a projection from its source of truth"),
        ("verify", "re-scan and re-check: does the projection now match its truth?"),
    ):
        job = commands.add_parser(mode, help=help_text)
        _add_job_options(job, mode)
        job.set_defaults(handler=_job, mode=mode)
    return parser


def command_sets() -> list[metadata.EntryPoint]:
    """What installed distributions add to this command line: the entry points of COMMANDS_GROUP (the kit's)."""
    return list(metadata.entry_points(group=COMMANDS_GROUP))


def _add_kit_commands(commands) -> bool:
    """The kit's commands when it is installed (True); else, under their names, a one-line error naming the extra.
    The package knows the kit by its entry point only: it never imports it."""
    added = command_sets()
    for command_set in added:
        command_set.load()(commands)
    if not added:
        for name in KIT_COMMANDS:
            commands.add_parser(name, help="(local kit, not installed)", add_help=False).set_defaults(
                handler=_kit_missing
            )
    return bool(added)


def _kit_missing(args) -> int:
    raise OperatorError(f"{args.command} is a command of the local kit, which this install lacks: {KIT_EXTRA}")


def _print_settings(args) -> int:
    from james_consistency.settings import render_table

    print(render_table(), end="")
    return 0


def _add_job_options(parser: argparse.ArgumentParser, mode: str) -> None:
    from james_consistency.cli.mailboxes import add_options as add_mailbox_options
    from james_consistency.jobs.main import add_load_arguments, add_range_arguments
    from james_consistency.projections import CHECKS, TARGETS

    parser.add_argument("target", choices=[*TARGETS, *CHECKS, "mailboxes"], help="what to check or repair")
    parser.add_argument("--keyspace", required=True)
    parser.add_argument("--report", help="JSON report path (default: .local/reports/<target>-<mode>-<time>.json)")
    parser.add_argument("--no-gates", action="store_true", help="skip the Great Expectations gates")
    parser.add_argument(
        "--remove-unused-flags",
        action="store_true",
        help="flags only: also remove keywords no message of the mailbox uses (James itself only adds them)",
    )
    parser.add_argument(
        "--run-dir", help="work folder for the kept scan, candidates and outcomes (a path or a Hadoop URL)"
    )
    add_range_arguments(parser)
    add_load_arguments(parser)
    if mode in ("repair", "verify"):
        parser.add_argument(
            "--reuse-scan",
            action="store_true",
            help="work from the scan the check kept in --run-dir (no second scan); the verify re-checks the check's "
            "candidates and a sample of the consistent keys",
        )
    if mode == "repair":
        parser.add_argument(
            "--messages-per-second", type=float, default=0.0, help="rate limit of the fixes (0 = unthrottled)"
        )
        parser.add_argument(
            "--recheck-delay", type=float, help=f"seconds between scan and re-check (default {RECHECK_DELAY:g})"
        )
        parser.add_argument(
            "--truth-consistency",
            choices=CONSISTENCY_LEVELS,
            help="the level every truth re-read is made at (default: as James is configured, "
            "JAMES_MESSAGE_WRITE_STRONG_CONSISTENCY and JAMES_LWT_SERIAL_CONSISTENCY: imapUidTable at SERIAL, "
            f"the rest at {DEFAULT_CONSISTENCY_LEVEL})",
        )
        parser.add_argument("--max-destructive-share", type=rate, help=f"(default {DEFAULT_MAX_DESTRUCTIVE_SHARE:g})")
        parser.add_argument("--allow-destructive", action="store_true")
    add_mailbox_options(parser, mode)
    add_connection_options(parser)
    add_quiet_option(parser)


def _job(args) -> int:
    """Run the Spark job through spark-submit, exactly as the DAGs do."""
    from james_consistency.cassandra.schema import validate_keyspace_name
    from james_consistency.cli.mailboxes import refuse_foreign_options
    from james_consistency.engine.run import RunOptions
    from james_consistency.errors import NotApplicable
    from james_consistency.jobs.main import load_limits_given
    from james_consistency.jobs.targets import resolve
    from james_consistency.projections.flags import FlagOptions
    from james_consistency.runtime.paths import REPORTS_DIR

    if args.target == "mailboxes":  # the offline mailbox repair: its own job, options and confirmation
        from james_consistency.cli.mailboxes import run as run_mailboxes

        return run_mailboxes(args, cassandra_settings(args))
    refuse_foreign_options(args)
    keyspace = validate_keyspace_name(args.keyspace)
    load = load_limits_given(args)  # a limit that makes no sense, said before anything starts
    settings = cassandra_settings(args)
    own = FlagOptions(remove_unused=True) if args.remove_unused_flags else None
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    report = args.report or str(REPORTS_DIR / f"{args.target}-{args.mode}-{stamp}.json")
    # Fail in seconds on a wrong keyspace or an unreachable node, before a Spark JVM starts.
    try:
        resolve(settings, RunOptions(args.target, keyspace, args.mode, target_options=own))
    except NotApplicable as reason:
        return _not_applicable(RunOptions(args.target, keyspace, args.mode), str(reason), report)
    arguments = ["--target", args.target, "--keyspace", keyspace, "--mode", args.mode, "--report", report]
    arguments += load.as_arguments()
    if args.no_gates:
        arguments.append("--no-gates")
    if args.remove_unused_flags:
        arguments.append("--remove-unused-flags")
    if args.run_dir:
        arguments += ["--run-dir", args.run_dir]
    if getattr(args, "reuse_scan", False):
        arguments.append("--reuse-scan")
    for option in ("ranges", "until", "max_ranges", "work_root"):
        if getattr(args, option, None) is not None:
            arguments += [f"--{option.replace('_', '-')}", str(getattr(args, option))]
    if args.fresh:
        arguments.append("--fresh")
    if args.mode == "repair":
        arguments += [
            "--messages-per-second",
            str(args.messages_per_second),
            "--recheck-delay",
            str(RECHECK_DELAY if args.recheck_delay is None else args.recheck_delay),
            "--max-destructive-share",
            str(DEFAULT_MAX_DESTRUCTIVE_SHARE if args.max_destructive_share is None else args.max_destructive_share),
        ]
        if args.truth_consistency:  # given, it wins over James's settings
            arguments += ["--truth-consistency", args.truth_consistency]
        if args.allow_destructive:
            arguments.append("--allow-destructive")
    return submit("reconcile.py", arguments, settings, report, quiet=args.quiet)


def _not_applicable(options, reason: str, report: str) -> int:
    """A target the keyspace's James does not have (or does not use): its NOT_APPLICABLE report, no Spark job."""
    from james_consistency.engine.reports import not_applicable, write_report
    from james_consistency.engine.run import new_run_id
    from james_consistency.report.run_report import parse_report, summary_line

    document = not_applicable(options, new_run_id(), reason)
    written = write_report(document, report)
    print(summary_line(parse_report(document, source=str(written))))
    print(f"report: {written}")
    return 0


def _undo(args) -> int:
    """spark-submit of the undo of the repair whose work folder is --run-dir."""
    from james_consistency.runtime.paths import REPORTS_DIR

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    report = args.report or str(REPORTS_DIR / f"undo-{stamp}.json")
    arguments = ["--run-dir", args.run_dir, "--report", report]
    if args.apply:
        arguments.append("--apply")
    if args.offline_confirmation:
        arguments += ["--confirm", args.offline_confirmation]
    return submit("undo.py", arguments, cassandra_settings(args), report, quiet=args.quiet)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown and args.handler is not _kit_missing:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        return args.handler(args)
    except NodeUnreachable as error:
        print(f"james-consistency: error: {error}", file=sys.stderr)
        return EXIT_RUN_FAILED
    except OperatorError as error:
        print(f"james-consistency: error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
