"""The README's main job on the embedded default: a local node, a small broken James platform, the message
projection repair through Airflow (a dry run, then check, repair and verify). With `every_dag`, the whole tour: the
platform broken in every family, every repair DAG, the counters scheduled by the message repair's asset, and the
offline mailbox repair waiting for a human.

The demo keyspace (`james_demo` by default) belongs to the demo: it is dropped and seeded again on every run, so
the summary is the same each time.
"""

import os
import time
from contextlib import contextmanager
from datetime import datetime
from urllib.parse import quote

from james_consistency.cassandra.cql import CassandraSettings
from james_consistency.cassandra.schema import validate_keyspace_name
from james_consistency.errors import OperatorError
from james_consistency.report.run_report import read_report, summary_line
from james_consistency.runtime.paths import LOCAL_DIR, REPORTS_DIR

from james_consistency_kit.cassandra_node import LocalNode

PASSWORDS_FILE = LOCAL_DIR / "airflow" / "passwords.json"

# The demo platform is written and broken by James 3.8.1's own code (the James harness): one failure of each family
# James's write paths leave, on a share of the operations: (kind, share, operations; None: one per message or mailbox).
# A message-level break runs its operation on every message unless told how many: the deletions stop at 100 messages
# (30 of them left in messageIdTable), so that the platform keeps its other 900.
JAMES_VERSION = "3.8.1"
# What the message repair fixes: the main job breaks only these (each break is a James JVM of its own).
MESSAGE_JAMES_FAULTS = (
    ("messageIdTable-insert", 0.03, None),
    ("delete-messageIdTable-kept", 0.3, 100),
    ("flags-imapUidTable-only", 0.02, None),
)
MESSAGE_PROJECT_FAULTS = (("projection-outdated", 0.01), ("projection-wrong-uid", 0.005))
JAMES_FAULTS = (
    *MESSAGE_JAMES_FAULTS,
    ("mailbox-row-missing", 0.1, None),
    ("UserMailboxACL", 0.2, None),
    ("aclv2", 0.1, None),
    ("counter-increment", 0.03, None),
)
# What James's current write paths cannot leave (rows left by older versions' bugs, lost writes): the project's
# own injector adds them.
PROJECT_FAULTS = (
    ("projection-outdated", 0.01),
    ("projection-wrong-uid", 0.005),
    ("deleted-missing", 0.1),
    ("unseen-missing", 0.05),
)


def run_demo(
    keyspace: str = "james_demo",
    users: int = 5,
    mailboxes_per_user: int = 4,
    messages_per_mailbox: int = 50,
    every_dag: bool = False,
):
    from james_consistency_kit import james_harness
    from james_consistency_kit.faults import inject
    from james_consistency_kit.seed import drop_keyspace

    keyspace = validate_keyspace_name(keyspace)
    node = LocalNode.from_env()
    status = node.start()
    print(f"1. Cassandra {status['release_version']} ready on {status['address']} (data in {status['home']})")

    settings = CassandraSettings.from_env(host="127.0.0.1", port=node.native_port)
    drop_keyspace(settings, keyspace)
    on_keyspace = ["--keyspace", keyspace]
    sizes = ["--users", str(users), "--mailboxes-per-user", str(mailboxes_per_user)]
    seeded = james_harness.run(
        JAMES_VERSION,
        "seed",
        [*on_keyspace, *sizes, "--messages-per-mailbox", str(messages_per_mailbox), "--random-seed", "42"],
        settings,
    )
    print(
        f"2. James {JAMES_VERSION}'s own code seeded keyspace {keyspace}: {seeded['users']} users, "
        f"{seeded['mailboxes']} mailboxes, {seeded['messages']} messages"
    )

    manifests = LOCAL_DIR / "manifests"
    manifests.mkdir(parents=True, exist_ok=True)
    print(f"3. James's write paths failed by its own fault injection (TestingSession), manifests in {manifests}:")
    for kind, rate, operations in JAMES_FAULTS if every_dag else MESSAGE_JAMES_FAULTS:
        manifest = manifests / f"{keyspace}-james-{kind}.json"
        options = ["--kind", kind, "--rate", str(rate), "--random-seed", "7", "--manifest", str(manifest)]
        if operations:
            options += ["--operations", str(operations)]
        broken = james_harness.run(JAMES_VERSION, "break", [*on_keyspace, *options], settings)
        print(f"   {kind:<26} {len(broken['inconsistencies']):>4} inconsistencies")
    print("   and what James's current code cannot leave, by the project's injector:")
    for kind, rate in PROJECT_FAULTS if every_dag else MESSAGE_PROJECT_FAULTS:
        manifest = inject(settings, keyspace=keyspace, kind=kind, rate=rate, random_seed=7, manifest_path=None)
        print(f"   {kind:<26} {manifest['count']:>4} rows  (manifest {manifest['path']})")

    if every_dag:
        return run_through_airflow(keyspace, node.native_port)
    return run_message_repair_through_airflow(keyspace, node.native_port)


# What the demo runs through Airflow, in this order: a dry run first, then each repair DAG once; counters_recompute
# is not triggered: the message repair's asset schedules it, as it does every night.
REPAIR_DAGS = ("message_consistency", "acl_consistency", "index_rebuild")
SCHEDULED_BY_ASSET = "counters_recompute"
OFFLINE_REPAIR = "mailbox_offline_repair"
# The demo breaks far more rows than a real night finds (10 % of some indexes, every user's quota), above the 5 %
# safety threshold an operator would keep: its Airflow lets a plan rewrite a whole projection, for the runs it
# triggers and for the counters run the asset schedules (which takes the form's defaults). The dry run shows the plan.
DEMO_MAX_DESTRUCTIVE_SHARE = "1"
DEMO_RUN = {"recheck_delay_seconds": 0}


@contextmanager
def _demo_airflow(keyspace: str, cassandra_port: int, port: int | None, dag_ids: tuple[str, ...], paused_after):
    """Airflow standalone for the demo, the given DAGs unpaused (their runs left unfinished by an earlier session
    marked failed); `paused_after` are paused again when the block ends."""
    from james_consistency_kit.local_airflow import airflow_standalone, local_logins

    logins = local_logins(PASSWORDS_FILE)
    log = LOCAL_DIR / "airflow" / "demo-standalone.log"
    print(f"4. Airflow (scheduler, dag-processor, triggerer, api-server; LocalExecutor) starting, log {log}")
    environment = {
        "AIRFLOW_CONN_CASSANDRA_DEFAULT": f"cassandra://127.0.0.1:{cassandra_port}",
        "JAMES_KEYSPACE": keyspace,  # the keyspace whose message repair schedules counters_recompute
        "JAMES_MAX_DESTRUCTIVE_SHARE": DEMO_MAX_DESTRUCTIVE_SHARE,
    }
    with airflow_standalone(log, logins, PASSWORDS_FILE, port=port, **environment) as api:
        for dag_id in dag_ids:
            api.wait_for_dag(dag_id)
            if ended := api.end_unfinished_runs(dag_id):
                print(f"   {dag_id}: {ended} unfinished run(s) of an earlier session marked failed")
            api.set_paused(dag_id, False)
        try:
            yield api
        finally:
            for dag_id in paused_after:
                api.set_paused(dag_id, True)


def run_through_airflow(keyspace: str, cassandra_port: int, port: int | None = None) -> int:
    every = (*REPAIR_DAGS, SCHEDULED_BY_ASSET, OFFLINE_REPAIR)
    with _demo_airflow(keyspace, cassandra_port, port, every, paused_after=(*REPAIR_DAGS, SCHEDULED_BY_ASSET)) as api:
        earlier_counters_runs = {run["dag_run_id"] for run in api.runs(SCHEDULED_BY_ASSET)}
        print("5. a dry run of the message repair (writes nothing):")
        _run_and_show(api, "message_consistency", {"keyspace": keyspace, "dry_run": True})
        print("6. the repairs, one run of each DAG (their Spark jobs one at a time in the cassandra_heavy pool):")
        failed = 0
        for dag_id in REPAIR_DAGS:
            failed += _run_and_show(api, dag_id, {"keyspace": keyspace, **DEMO_RUN}) != "success"
        print(
            f"   {SCHEDULED_BY_ASSET}: scheduled by the message repair's asset james://{keyspace}/messages_consistent"
        )
        counters_run = _asset_triggered_run(api, SCHEDULED_BY_ASSET, earlier_counters_runs)
        if counters_run is None:
            print("   (no asset-triggered run appeared: the message repair did not end well)")
            failed += 1
        else:
            failed += _show_run(api, SCHEDULED_BY_ASSET, counters_run) != "success"
        print("7. the offline mailbox repair: diagnosis, then it waits for a human")
        run_id = api.trigger(OFFLINE_REPAIR, {"keyspace": keyspace})
        waiting = _wait_for_approval(api, OFFLINE_REPAIR, run_id)
        _print_reports(OFFLINE_REPAIR, run_id)
        if waiting:
            print(f"   waiting for approval: {api.base}/dags/{OFFLINE_REPAIR}/runs/{quote(run_id, safe='')}")
            print("   nobody answers here; `make ui` serves the UI where the approver gives (or refuses) it")
        else:
            print(f"   {OFFLINE_REPAIR}: {api.run_state(OFFLINE_REPAIR, run_id)} without asking (nothing to do)")
    print(f"8. Airflow stopped. Reports: {REPORTS_DIR / 'airflow'}; logins for `make ui`: {PASSWORDS_FILE}")
    return 1 if failed else 0


def run_message_repair_through_airflow(keyspace: str, cassandra_port: int, port: int | None = None) -> int:
    """The main job: a dry run of message_consistency, then one run (check, repair, verify), through Airflow."""
    dag_id = "message_consistency"
    with _demo_airflow(keyspace, cassandra_port, port, (dag_id,), paused_after=(dag_id,)) as api:
        print("5. a dry run of the message repair (writes nothing):")
        _run_and_show(api, dag_id, {"keyspace": keyspace, "dry_run": True})
        print("6. the message repair: check, repair from the check's candidates, verify")
        state = _run_and_show(api, dag_id, {"keyspace": keyspace, **DEMO_RUN})
    print(f"7. Airflow stopped. Reports: {REPORTS_DIR / 'airflow'}; logins for `make ui`: {PASSWORDS_FILE}")
    print("   `make demo` runs every DAG: ACL, indexes, counters, and the mailbox repair waiting for approval")
    return 0 if state == "success" else 1


def _run_and_show(api, dag_id: str, conf: dict) -> str:
    return _show_run(api, dag_id, api.trigger(dag_id, conf))


def _show_run(api, dag_id: str, run_id: str) -> str:
    state = api.wait_for_run(dag_id, run_id)
    tasks = api.task_states(dag_id, run_id)
    failed = sorted(task for task, task_state in tasks.items() if task_state == "failed")
    run = api.run(dag_id, run_id)
    took = ""
    if run.get("start_date") and run.get("end_date"):
        seconds = (datetime.fromisoformat(run["end_date"]) - datetime.fromisoformat(run["start_date"])).total_seconds()
        took = f" in {seconds:.0f}s"
    print(f"   {dag_id} {run_id}: {state.upper()}{took}")
    if failed:
        print(f"     failed tasks: {', '.join(failed)} (task logs under {os.environ.get('AIRFLOW_HOME')}/logs)")
    _print_reports(dag_id, run_id)
    return state


def _print_reports(dag_id: str, run_id: str) -> None:
    from james_airflow.runs import report_files

    for path in report_files(dag_id, run_id):
        print(f"     {path.stem:<24} {summary_line(read_report(path))}")


def _asset_triggered_run(api, dag_id: str, earlier: set[str], seconds: float = 180) -> str | None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        for run in api.runs(dag_id):
            if run.get("run_type") == "asset_triggered" and run["dag_run_id"] not in earlier:
                return run["dag_run_id"]
        time.sleep(3)
    return None


def _wait_for_approval(api, dag_id: str, run_id: str, seconds: float = 900) -> bool:
    """True once the approval task awaits input; False if the run ended without asking."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        if "awaiting_input" in api.task_states(dag_id, run_id).values():
            return True
        if api.run_state(dag_id, run_id) in ("success", "failed"):
            return False
        time.sleep(3)
    raise OperatorError(f"{dag_id} neither asked for approval nor ended within {seconds:.0f}s")
