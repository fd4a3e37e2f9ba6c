"""The local kit's commands of `james-consistency` (the product's command line, james_consistency.cli, adds them when
the kit is installed): the local Cassandra node or ring and Spark cluster, James keyspaces, seeders and fault
injectors, James's own code (the harness), the live-traffic writer, the demo, the local Airflow UI and the bench."""

import argparse
import json
import os
import sys

from james_consistency.cli.main import (
    add_connection_options,
    cassandra_settings,
    main,
    non_negative,
    port,
    rate,
)
from james_consistency.errors import OperatorError

from james_consistency_kit.bench_commands import add_bench_command


def _add_replication_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--replication-factor", type=non_negative, default=1, help="replicas of a new keyspace")
    parser.add_argument(
        "--datacenter", help="NetworkTopologyStrategy in this data center (e.g. datacenter1); default SimpleStrategy"
    )


def add_kit_commands(commands) -> None:
    """The kit's sub-commands (james_consistency.cli.main.KIT_COMMANDS) on the `james-consistency` parser."""
    from james_consistency.projections import TARGETS

    node = commands.add_parser("cassandra", help="run the local Apache Cassandra 5.0 node")
    node.add_argument("action", choices=["start", "stop", "status"])
    node.add_argument("--port", type=port, help="CQL port of the local node (default: CASSANDRA_PORT or 9042)")
    node.add_argument("--auth", action="store_true", default=None, help="start with PasswordAuthenticator")
    node.add_argument("--tls", action="store_true", default=None, help="start with client TLS only (self-signed)")
    node.add_argument(
        "--nodes", type=non_negative, help="a local ring of N nodes on 127.0.0.1..N, CQL port 29242 (.local/ring)"
    )
    node.add_argument("--node", type=non_negative, help="stop: only this ring node (1..N)")
    node.set_defaults(handler=_cassandra)

    cluster = commands.add_parser("spark", help="run a local Spark standalone cluster (a master and two workers)")
    cluster.add_argument("action", choices=["start", "stop", "status"])
    cluster.set_defaults(handler=_spark_cluster)

    schema = commands.add_parser("schema", help="create the James keyspace and tables (idempotent)")
    schema.add_argument("--keyspace", required=True)
    schema.add_argument("--generation", choices=["3.9", "3.5"], default="3.9")
    _add_replication_options(schema)
    add_connection_options(schema)
    schema.set_defaults(handler=_schema)

    seed = commands.add_parser("seed", help="write a consistent James platform, as James would")
    seed.add_argument("--keyspace", required=True)
    seed.add_argument("--users", type=non_negative, required=True)
    seed.add_argument("--mailboxes-per-user", type=non_negative, required=True)
    seed.add_argument("--messages-per-mailbox", type=non_negative, required=True)
    seed.add_argument("--random-seed", type=int, default=42)
    seed.add_argument("--generation", choices=["3.9", "3.5"], help="schema of a new keyspace (default 3.9)")
    _add_replication_options(seed)
    add_connection_options(seed)
    seed.set_defaults(handler=_seed)

    fault = commands.add_parser("break", help="inject a partial-write failure of James and record it")
    fault.add_argument("--keyspace", help="keyspace to break (not needed with --kind list)")
    fault.add_argument("--kind", required=True, help="fault kind (see --kind list)")
    fault.add_argument("--rate", type=rate, default=0.01, help="share of candidate rows to break, 0..1")
    fault.add_argument("--random-seed", type=int, default=7)
    fault.add_argument("--manifest", help="JSON manifest path (default: .local/faults/<keyspace>-<kind>.json)")
    add_connection_options(fault)
    fault.set_defaults(handler=_break)

    traffic = commands.add_parser(
        "traffic", help="a James-like writer (adds, flag changes, moves, deletes, ACL updates) with partial failures"
    )
    traffic.add_argument("--keyspace", required=True)
    traffic.add_argument("--seconds", type=float, default=60.0, help="how long to write")
    traffic.add_argument("--ops-per-second", type=float, default=25.0, help="operations per second (0 = as fast)")
    traffic.add_argument("--partial-share", type=rate, default=0.1, help="share of operations stopped after the truth")
    traffic.add_argument("--log", required=True, help="JSON-lines log of every write and its intended final state")
    traffic.add_argument("--random-seed", type=int, default=11)
    add_connection_options(traffic)
    traffic.set_defaults(handler=_traffic)

    demo = commands.add_parser(
        "demo", help="the main job on the embedded default: local node, broken demo platform, consistency summary"
    )
    demo.add_argument("--keyspace", default="james_demo", help="the demo's own keyspace (dropped and re-seeded)")
    demo.add_argument(
        "--all",
        action="store_true",
        help="every DAG, not only the message repair: ACL, indexes, counters, the mailbox repair waiting for approval",
    )
    demo.set_defaults(handler=_demo)

    ui = commands.add_parser("ui", help="serve the Airflow UI locally (airflow standalone) with the DAGs configured")
    ui.add_argument("--port", type=int, default=8080, help="the UI's port on 127.0.0.1")
    ui.set_defaults(handler=_ui)

    add_bench_command(commands, TARGETS)

    _add_james_command(commands)


def _add_james_command(commands) -> None:
    """`james schema|seed|break|solve`: James's own code (the harness jars) as writer, fault injector and oracle."""
    from james_consistency_kit.james_harness import DEFAULT_VERSION, VERSIONS

    james = commands.add_parser("james", help="James's own code writes, breaks and solves (harness jars, one JVM each)")
    actions = james.add_subparsers(dest="james_command", required=True)

    def action(name: str, help_text: str, keyspace_required: bool = True) -> argparse.ArgumentParser:
        parser = actions.add_parser(name, help=help_text)
        parser.add_argument("--keyspace", required=keyspace_required)
        parser.add_argument("--james", choices=VERSIONS, default=DEFAULT_VERSION, help="James version of the harness")
        add_connection_options(parser)
        parser.set_defaults(handler=_james)
        return parser

    schema = action("schema", "the keyspace with James's own tables (its CassandraModules)")
    schema.add_argument("--replication-factor", type=non_negative, default=1)
    seed = action("seed", "a platform written through James's mailbox manager, mappers and DAOs")
    seed.add_argument("--users", type=non_negative, required=True)
    seed.add_argument("--mailboxes-per-user", type=non_negative, required=True)
    seed.add_argument("--messages-per-mailbox", type=non_negative, required=True)
    seed.add_argument("--random-seed", type=int, default=42)
    fault = action("break", "James's write paths with one statement failed (TestingSession + Scenario)", False)
    fault.add_argument("--kind", help="fault kind (--list shows them)")
    fault.add_argument("--list", action="store_true", help="print the kinds of that James version")
    fault.add_argument("--rate", type=rate, default=0.1, help="share of the operations hit, 0..1")
    fault.add_argument("--operations", type=non_negative, help="operations to run (default: one per mailbox/message)")
    fault.add_argument("--random-seed", type=int, default=42)
    fault.add_argument("--manifest", help="JSON manifest (default: .local/faults/<keyspace>-james<V>-<kind>.json)")
    solve = action("solve", "James's own repair task, run to completion; its report as JSON")
    solve.add_argument("target", choices=["messages", "mailboxes", "counters", "quotas"])
    solve.add_argument("--messages-per-second", type=non_negative, help="James's rate limit (messages; default 100)")
    solve.add_argument("--users-per-second", type=non_negative, help="James's rate limit (quotas; default 1)")


def _james(args) -> int:
    from james_consistency.runtime.paths import LOCAL_DIR

    from james_consistency_kit import james_harness

    command = args.james_command
    arguments = [] if args.keyspace is None else ["--keyspace", args.keyspace]
    if command == "schema":
        arguments += ["--replication-factor", str(args.replication_factor)]
    elif command == "seed":
        arguments += ["--users", str(args.users), "--mailboxes-per-user", str(args.mailboxes_per_user)]
        arguments += ["--messages-per-mailbox", str(args.messages_per_mailbox), "--random-seed", str(args.random_seed)]
    elif command == "break" and args.list:
        arguments = ["--list", "--keyspace", args.keyspace or "unused"]
    elif command == "break":
        if not args.kind or not args.keyspace:
            raise OperatorError("james break needs --keyspace and --kind (or --list)")
        manifest = args.manifest or str(LOCAL_DIR / "faults" / f"{args.keyspace}-james{args.james}-{args.kind}.json")
        os.makedirs(os.path.dirname(os.path.abspath(manifest)), exist_ok=True)
        arguments += ["--kind", args.kind, "--rate", str(args.rate), "--random-seed", str(args.random_seed)]
        arguments += ["--manifest", os.path.abspath(manifest)]
        if args.operations is not None:
            arguments += ["--operations", str(args.operations)]
    else:
        arguments = [args.target, *arguments]
        rates = (("--messages-per-second", args.messages_per_second), ("--users-per-second", args.users_per_second))
        for option, value in rates:
            if value is not None:
                arguments += [option, str(value)]
    result = james_harness.run(args.james, command, arguments, cassandra_settings(args))
    print(json.dumps(result, indent=2))
    return 0


def _cassandra(args) -> int:
    from james_consistency_kit.cassandra_node import LocalNode, LocalRing

    ring = LocalRing(size=args.nodes or max(3, args.node or 0))
    # The ring only when asked for: a plain start/status/stop always means the single node its settings name (a
    # running ring made `stop` leave a test's own node running and its port taken).
    if args.nodes or args.node:
        return _cassandra_ring(args, ring)
    node = LocalNode.from_env(native_port=args.port, auth=args.auth, tls=args.tls)
    if args.action == "start":
        status = node.start()
        print(f"Cassandra {status['release_version']} ready on {status['address']} (pid {status['pid']})")
        if node.tls:
            print(f"client TLS only: CASSANDRA_TLS_CA_FILE={node.ca_file} CASSANDRA_TLS_TRUSTSTORE={node.truststore}")
            print(f"  CASSANDRA_TLS_TRUSTSTORE_PASSWORD is in {node.truststore.parent / 'truststore.password'}")
        if node.auth:
            print("PasswordAuthenticator: create a role for the repairs; CASSANDRA_USERNAME/CASSANDRA_PASSWORD")
    elif args.action == "stop":
        stopped = node.stop()
        print("Cassandra stopped" if stopped else "Cassandra was not running")
    else:
        status = node.status()
        if status["running"]:
            # A node still starting, or one that stopped its transports (a full disk, a failed commit log).
            state = "ready" if status["ready"] else "running but not answering CQL"
            print(
                f"Cassandra {status['release_version'] or ''} {state} on {status['address']} "
                f"(pid {status['pid']}, home {status['home']})".replace("  ", " ")
            )
            if not status["ready"]:
                print(f"its last errors since it started:\n{node.log_errors(lines=5)}")
        else:
            print(f"Cassandra not running (home {status['home']})")
            return 3
    return 0


def _cassandra_ring(args, ring) -> int:
    if args.action == "start":
        for status in ring.start():
            print(f"Cassandra {status['release_version']} ready on {status['address']} (pid {status['pid']})")
        print(f"ring of {ring.size} nodes: CASSANDRA_HOST={ring.contact_points} CASSANDRA_PORT={ring.native_port}")
    elif args.action == "stop":
        stopped = ring.stop(args.node)
        print(f"stopped ring nodes {stopped}" if stopped else "no ring node was running")
    else:
        statuses = ring.status()
        for status in statuses:
            state = "up" if status["ready"] else "starting" if status["running"] else "down"
            print(f"node {status['node']} {status['address']} {state} (pid {status['pid']}, home {status['home']})")
        return 0 if any(status["running"] for status in statuses) else 3
    return 0


def _spark_cluster(args) -> int:
    from james_consistency_kit import spark_cluster

    if args.action == "start":
        status = spark_cluster.start()
        print(f"Spark master {status['master_url']} with {status['alive_workers']} workers (SPARK_MASTER to use it)")
    elif args.action == "stop":
        stopped = spark_cluster.stop()
        print(f"stopped {', '.join(stopped)}" if stopped else "the Spark cluster was not running")
    else:
        status = spark_cluster.status()
        for daemon in status["daemons"]:
            state = f"running (pid {daemon['pid']})" if daemon["pid"] else "stopped"
            print(f"{daemon['name']:<8} {state}, UI {daemon['ui']}")
        print(f"{status['master_url']}: {status['alive_workers']} alive workers")
        return 0 if status["alive_workers"] else 3
    return 0


def _schema(args) -> int:
    from james_consistency.cassandra.cql import close, connect
    from james_consistency.cassandra.schema import create_schema

    session = connect(cassandra_settings(args))
    try:
        created = create_schema(
            session, args.keyspace, args.generation, args.replication_factor, datacenter=args.datacenter
        )
    finally:
        close(session)
    print(f"keyspace {args.keyspace.lower()}: James {args.generation} schema, {len(created)} tables")
    return 0


def _seed(args) -> int:
    from james_consistency_kit.seed import seed_platform

    summary = seed_platform(
        cassandra_settings(args),
        keyspace=args.keyspace,
        users=args.users,
        mailboxes_per_user=args.mailboxes_per_user,
        messages_per_mailbox=args.messages_per_mailbox,
        random_seed=args.random_seed,
        generation=args.generation,
        replication_factor=args.replication_factor,
        datacenter=args.datacenter,
    )
    print(json.dumps(summary, indent=2, default=str))
    return 0


def _break(args) -> int:
    from james_consistency_kit.faults import KINDS, inject

    if args.kind == "list":
        for kind, damage in KINDS.items():
            print(f"{kind:<26} {damage.description}")
        return 0
    if not args.keyspace:
        raise OperatorError("--keyspace is required to break something (or use --kind list)")

    manifest = inject(
        cassandra_settings(args),
        keyspace=args.keyspace,
        kind=args.kind,
        rate=args.rate,
        random_seed=args.random_seed,
        manifest_path=args.manifest,
    )
    print(json.dumps({key: value for key, value in manifest.items() if key != "rows"}, indent=2))
    return 0


def _demo(args) -> int:
    from james_consistency_kit.demo import run_demo

    return run_demo(args.keyspace, every_dag=args.all)


def _ui(args) -> int:
    from james_consistency_kit.local_airflow import serve_ui

    return serve_ui(args.port)


def _traffic(args) -> int:
    from james_consistency.cassandra.schema import validate_keyspace_name

    from james_consistency_kit.traffic import TrafficOptions, run_writer

    if args.seconds <= 0 or args.ops_per_second < 0:
        raise OperatorError("--seconds must be above 0 and --ops-per-second 0 or more")
    options = TrafficOptions(
        keyspace=validate_keyspace_name(args.keyspace),
        log_path=args.log,
        partial_share=args.partial_share,
        ops_per_second=args.ops_per_second,
        seconds=args.seconds,
        seed=args.random_seed,
    )
    counts = run_writer(cassandra_settings(args), options)
    print(json.dumps({"log": args.log, **counts}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
