"""`james-consistency check|repair|verify mailboxes`: the options of the mailbox repair and its spark-submit run, and
which options each target takes (an option a target does not take is refused in one line, never dropped).

The repair refuses to start, before any Spark JVM, without `--i-know-what-i-am-doing ALL-SERVICES-ARE-OFFLINE`.
"""

import argparse
from datetime import UTC, datetime

from james_consistency.cassandra.cql import CassandraSettings
from james_consistency.errors import OperatorError
from james_consistency.mailboxes import CONFIRMATION
from james_consistency.mailboxes.options import DEFAULT_MAX_PASSES, ORPHAN_PATH_POLICIES, RECREATE, MailboxOptions

MAILBOXES = "mailboxes"
# The options (argparse dests) of `check|repair|verify` the mailbox repair takes; it refuses any other one given.
MAILBOX_TAKES = frozenset(
    {"command", "handler", "mode", "target", "keyspace", "report", "no_gates", "run_dir", "host", "port", "quiet"}
)
# The mailbox repair's own options (argparse dest: option), refused for any other target.
MAILBOX_ONLY = {
    "offline_confirmation": "--i-know-what-i-am-doing",
    "merge": "--merge",
    "orphan_paths": "--orphan-paths",
    "max_passes": "--max-passes",
}
FLAGS_ONLY = {"remove_unused_flags": "--remove-unused-flags"}


def add_options(parser: argparse.ArgumentParser, mode: str) -> None:
    """The mailbox repair's own options (refused for the other targets): what a repair does, which a check
    previews."""
    if mode == "verify":
        return
    group = parser.add_argument_group("mailboxes (offline repair)")
    if mode == "repair":
        group.add_argument(
            "--i-know-what-i-am-doing",
            dest="offline_confirmation",
            metavar=CONFIRMATION,
            help=f"required to repair mailboxes: type {CONFIRMATION} once SMTP, IMAP and JMAP are stopped",
        )
    group.add_argument(
        "--merge",
        action="store_true",
        help="merge a mailbox id claiming a registered path into the registered one (messages and ACL), when it is "
        "registered nowhere (James's autoMerge)",
    )
    group.add_argument(
        "--orphan-paths",
        choices=ORPHAN_PATH_POLICIES,
        help=f"an orphan path: re-create its mailbox row ({RECREATE}, the default, as James 3.9.x), re-create it only "
        "when messages reference it and else delete the path, or always delete the path (James 3.9.0)",
    )
    if mode == "repair":
        group.add_argument(
            "--max-passes",
            type=int,
            help=f"repeat while a pass fixes something, at most N times (default {DEFAULT_MAX_PASSES}; James's "
            "maxIterations)",
        )


def given(args, options) -> list[str]:
    """The options of `options` (argparse dest: option) given on this command line (a value other than the
    unset default)."""
    return [option for dest, option in options.items() if getattr(args, dest, None) not in (None, False)]


def refuse_foreign_options(args) -> None:
    """OperatorError naming every option given that the target does not take."""
    if args.target == MAILBOXES:
        foreign = {dest: f"--{dest.replace('_', '-')}" for dest in vars(args) if dest not in MAILBOX_TAKES}
        foreign = given(args, {dest: option for dest, option in foreign.items() if dest not in MAILBOX_ONLY})
    else:
        foreign = given(args, MAILBOX_ONLY) + ([] if args.target == "flags" else given(args, FLAGS_ONLY))
    if foreign:
        raise OperatorError(f"{args.target} does not take {', '.join(foreign)}: {_whose(args.target)}")


def _whose(target: str) -> str:
    if target == MAILBOXES:
        return "those are options of the projection repairs"
    return f"{', '.join(MAILBOX_ONLY.values())} are options of mailboxes, --remove-unused-flags of flags"


def chosen_options(args) -> MailboxOptions:
    """The mailbox repair's own options as the command line gives them (the defaults for those not given)."""
    max_passes = getattr(args, "max_passes", None)
    return MailboxOptions(
        confirmation=getattr(args, "offline_confirmation", None),
        merge=getattr(args, "merge", False),
        orphan_paths=getattr(args, "orphan_paths", None) or RECREATE,
        max_passes=DEFAULT_MAX_PASSES if max_passes is None else max_passes,
    )


def job_arguments(args, keyspace: str, report: str) -> list[str]:
    """The mailboxes entry point's arguments: every option given is passed on (the others were refused)."""
    own = chosen_options(args)
    arguments = ["--keyspace", keyspace, "--mode", args.mode, "--report", report]
    if args.no_gates:
        arguments.append("--no-gates")
    if args.run_dir:
        arguments += ["--run-dir", args.run_dir]
    if args.mode != "verify":
        arguments += ["--orphan-paths", own.orphan_paths]
        if own.merge:
            arguments.append("--merge")
    if args.mode == "repair":
        arguments += ["--confirm", CONFIRMATION, "--max-passes", str(own.max_passes)]
    return arguments


def run(args, settings: CassandraSettings) -> int:
    """Check the options, the confirmation and the keyspace in seconds, then run the Spark job as the DAG does."""
    from james_consistency.engine.run import RunOptions
    from james_consistency.jobs.submit import submit
    from james_consistency.jobs.targets import resolve
    from james_consistency.runtime.paths import REPORTS_DIR

    refuse_foreign_options(args)
    options = RunOptions(target=MAILBOXES, keyspace=args.keyspace, mode=args.mode, target_options=chosen_options(args))
    options.validate()
    resolve(settings, options)
    keyspace = options.keyspace.lower()
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    report = args.report or str(REPORTS_DIR / f"mailboxes-{args.mode}-{stamp}.json")
    return submit("mailboxes.py", job_arguments(args, keyspace, report), settings, report, quiet=args.quiet)
