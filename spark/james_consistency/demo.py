"""The README's main job on the embedded default: a local node, a small broken James platform, a consistency summary.

The demo keyspace (`james_demo` by default) belongs to the demo: it is dropped and seeded again on every run, so
the summary is the same each time.
"""

import json
import subprocess
from pathlib import Path

from james_consistency.cassandra_node import LocalNode
from james_consistency.cql import CassandraSettings, close, connect
from james_consistency.paths import REPORTS_DIR
from james_consistency.schema import validate_keyspace_name
from james_consistency.spark_env import JOBS_DIR, spark_submit_command

# One partial-write failure of each family the repairs handle, on a small share of the rows.
DEMO_FAULTS = (
    ("projection-missing", 0.02),
    ("projection-stale-flags", 0.02),
    ("projection-outdated", 0.01),
    ("projection-orphan", 0.01),
    ("projection-wrong-uid", 0.005),
    ("acl-user-missing", 0.1),
    ("mailbox-path-orphan", 0.05),
    ("deleted-missing", 0.1),
    ("unseen-stale", 0.1),
    ("counters-wrong", 0.1),
)


def run_demo(keyspace: str = "james_demo", users: int = 5, mailboxes_per_user: int = 4, messages_per_mailbox: int = 50):
    from james_consistency.faults import inject
    from james_consistency.seed import seed_platform

    keyspace = validate_keyspace_name(keyspace)
    node = LocalNode.from_env()
    status = node.start()
    print(f"1. Cassandra {status['release_version']} ready on {status['address']} (data in {status['home']})")

    settings = CassandraSettings.from_env(host="127.0.0.1", port=node.native_port)
    session = connect(settings)
    try:
        session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)
    finally:
        close(session)
    seeded = seed_platform(
        settings,
        keyspace=keyspace,
        users=users,
        mailboxes_per_user=mailboxes_per_user,
        messages_per_mailbox=messages_per_mailbox,
        random_seed=42,
    )
    print(
        f"2. seeded keyspace {keyspace}: {seeded['users']} users, {seeded['mailboxes']} mailboxes, "
        f"{seeded['messages']} messages (James {seeded['generation']} schema)"
    )

    print("3. injected James's partial-write failures:")
    for kind, rate in DEMO_FAULTS:
        manifest = inject(settings, keyspace=keyspace, kind=kind, rate=rate, random_seed=7, manifest_path=None)
        print(f"   {kind:<24} {manifest['count']:>4} rows  (manifest {manifest['path']})")

    print("4. consistency check (dry run, Spark job through spark-submit):")
    for target in ("messages",):
        report_path = REPORTS_DIR / f"demo-{target}-check.json"
        command = spark_submit_command(
            JOBS_DIR / "reconcile.py",
            ["--target", target, "--keyspace", keyspace, "--mode", "check", "--report", str(report_path)],
            settings,
        )
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode not in (0, 4) or not Path(report_path).exists():
            print(result.stdout[-2000:], result.stderr[-4000:])
            raise SystemExit(f"the {target} check failed (exit {result.returncode})")
        report = json.loads(Path(report_path).read_text())
        found = ", ".join(f"{kind} {count}" for kind, count in report["inconsistencies"].items())
        print(f"   {target:<10} {report['status']}: {found} (report {report_path})")
    return 0
