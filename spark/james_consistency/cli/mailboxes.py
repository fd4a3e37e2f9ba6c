"""`james-consistency check|repair|verify mailboxes`: the options of the mailbox repair and its spark-submit run.

The repair refuses to start, before any Spark JVM, without `--i-know-what-i-am-doing ALL-SERVICES-ARE-OFFLINE`.
"""

import argparse
from datetime import UTC, datetime

from james_consistency.cassandra.cql import CassandraSettings
from james_consistency.mailboxes import CONFIRMATION
from james_consistency.mailboxes.policy import ORPHAN_PATH_POLICIES, RECREATE_WHEN_REFERENCED


def add_options(parser: argparse.ArgumentParser, mode: str) -> None:
    """The mailbox repair's own options (ignored by the other targets)."""
    if mode != "repair":
        return
    group = parser.add_argument_group("mailboxes (offline repair)")
    group.add_argument(
        "--i-know-what-i-am-doing",
        dest="offline_confirmation",
        metavar=CONFIRMATION,
        help=f"required to repair mailboxes: type {CONFIRMATION} once SMTP, IMAP and JMAP are stopped",
    )
    group.add_argument(
        "--merge",
        action="store_true",
        help="merge a mailbox id claiming a registered path into the registered one (messages and ACL)",
    )
    group.add_argument(
        "--orphan-paths",
        choices=ORPHAN_PATH_POLICIES,
        default=RECREATE_WHEN_REFERENCED,
        help="an orphan path: re-create its mailbox when messages reference it (default), or always delete it",
    )
    group.add_argument("--max-passes", type=int, default=5, help="repeat while a pass fixes something, at most N")


def job_arguments(args, keyspace: str, report: str) -> list[str]:
    arguments = ["--keyspace", keyspace, "--mode", args.mode, "--report", report]
    if args.no_gates:
        arguments.append("--no-gates")
    if args.mode == "repair":
        arguments += ["--confirm", CONFIRMATION, "--orphan-paths", args.orphan_paths]
        arguments += ["--max-passes", str(args.max_passes)]
        if args.merge:
            arguments.append("--merge")
    return arguments


def run(args, settings: CassandraSettings) -> int:
    """Check the confirmation and the keyspace in seconds, then run the Spark job as the DAG does."""
    from james_consistency.engine.run import RunOptions
    from james_consistency.jobs.submit import submit
    from james_consistency.jobs.targets import resolve
    from james_consistency.runtime.paths import REPORTS_DIR

    options = RunOptions(
        target="mailboxes",
        keyspace=args.keyspace,
        mode=args.mode,
        confirmation=getattr(args, "offline_confirmation", None),
        merge=getattr(args, "merge", False),
        orphan_paths=getattr(args, "orphan_paths", RECREATE_WHEN_REFERENCED),
    )
    options.validate()
    resolve(settings, options)
    keyspace = options.keyspace.lower()
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    report = args.report or str(REPORTS_DIR / f"mailboxes-{args.mode}-{stamp}.json")
    return submit("mailboxes.py", job_arguments(args, keyspace, report), settings, report)
