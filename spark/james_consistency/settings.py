"""The deployment's settings: one catalogue of every environment variable the project reads under its own names
(JAMES_*, CASSANDRA_*, SPARK_*), with its type, its default, what it does and who reads it; `setting(name)` reads one,
typed, through `parse_setting`, the one parser of each type.

A variable is in the catalogue when our code reads it to decide something. Not in it:
- what we only set for a child process: PYSPARK_PYTHON, SPARK_HOME, SPARK_LOCAL_IP, GX_ANALYTICS_ENABLED, the local
  Spark daemons' SPARK_* (kit/james_consistency_kit/spark_cluster.py), AIRFLOW__* and AIRFLOW_CONN_* handed to a
  job or a local Airflow;
- other tools' variables we honour as those tools do: JAVA_HOME and JAVA (the JDK's), AIRFLOW_HOME, OTEL_EXPORTER_*
  (OpenTelemetry's), and Airflow's own `[metrics]` configuration, AIRFLOW__METRICS__* (report.metrics reads
  it as Airflow passes it to the job: Airflow's settings, documented by Airflow);
- what docker-compose.yaml gives the images for themselves (CASSANDRA_DC, SPARK_WORKER_MEMORY, ...).

A secret (a password) has no default and its value is never shown: not by the table, not by an error.

The DAGs, the alert channels, the jobs, the CLI, the local kit and the tests read their settings through `setting`;
the documentation's settings table is `render_table()` (`james-consistency settings` prints it), one table per group.
A setting of the DAGs can also be given as the Airflow Variable of the same name through the environment
(AIRFLOW_VAR_<NAME>): DAG files parse without touching the metadata database. No Airflow import here: the jobs ship
this module to Spark.
"""

import os
import re
from dataclasses import dataclass

from james_consistency.errors import OperatorError

# Largest share of a projection's rows a plan may delete or rewrite unless told otherwise (JAMES_MAX_DESTRUCTIVE_SHARE,
# the trigger forms, `--max-destructive-share`).
DEFAULT_MAX_DESTRUCTIVE_SHARE = 0.05
# The rate a night's scan never goes below in the adaptive mode (JAMES_RATE_FLOOR_ROWS_PER_SECOND, `--rate-floor`).
DEFAULT_RATE_FLOOR_ROWS_PER_SECOND = 1000.0

TYPES = ("str", "int", "float", "bool", "cron", "list")
TRUE_WORDS, FALSE_WORDS = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
# Five cron fields (minute hour day month weekday), or one of cron's @ shorthands.
EXPECTED = {
    "int": "an integer",
    "float": "a number",
    "bool": f"one of {', '.join(TRUE_WORDS + FALSE_WORDS)}",
    "cron": "five cron fields (minute hour day month weekday), e.g. '30 2 * * *'",
}
CRON_PATTERN = re.compile(r"^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|([\w*/,?#-]+\s+){4}[\w*/,?#-]+)$")


@dataclass(frozen=True)
class Setting:
    name: str
    type: str
    default: object  # the typed value used when the variable is unset; None: see default_text
    description: str
    used_by: str
    # What "unset" means when the default is not a fixed value (a path under the local folder, a feature off).
    default_text: str | None = None
    # Also read as AIRFLOW_VAR_<name> (an Airflow Variable given through the environment).
    airflow_variable: bool = False
    # A password: no default, its value never shown.
    secret: bool = False

    def __post_init__(self):
        if self.type not in TYPES:
            raise ValueError(f"{self.name}: unknown type {self.type!r}, one of {', '.join(TYPES)}")
        if self.secret and (self.type != "str" or self.default is not None):
            raise ValueError(f"{self.name}: a secret is a str without a default")


@dataclass(frozen=True)
class Group:
    """Settings read by the same part of the project: one table of the documentation."""

    title: str
    about: str
    settings: tuple[Setting, ...]


_DAGS = "DAGs (parse time)"
_ALERTS = "alerts (when one is sent)"
_TESTS = "tests"

_CONNECTION = (
    Setting(
        "CASSANDRA_HOST",
        "str",
        "127.0.0.1",
        "Cassandra's contact points, comma-separated (one node down is no reason to fail); `--host` overrides it.",
        "jobs, CLI",
    ),
    Setting(
        "CASSANDRA_PORT",
        "int",
        9042,
        "The CQL port of the contact points (and the local node's); `--port` overrides it.",
        "jobs, CLI, local node",
    ),
    Setting(
        "CASSANDRA_USERNAME",
        "str",
        None,
        "The role the jobs log in as (PasswordAuthenticator).",
        "jobs, CLI",
        default_text="unset: no login",
    ),
    Setting(
        "CASSANDRA_PASSWORD",
        "str",
        None,
        "That role's password: set inside the Spark driver, never on a command line, a `--conf` or a log line.",
        "jobs, CLI",
        default_text="unset",
        secret=True,
    ),
    Setting(
        "CASSANDRA_LOCAL_DC",
        "str",
        None,
        "The data center the driver and the connector treat as local.",
        "jobs, CLI",
        default_text="unset: the driver's and the connector's own choice",
    ),
    Setting(
        "CASSANDRA_TLS_CA_FILE",
        "str",
        None,
        "The CA certificate (PEM) the Python driver trusts: set, the driver connects over TLS.",
        "jobs, CLI",
        default_text="unset: no client TLS",
    ),
    Setting(
        "CASSANDRA_TLS_TRUSTSTORE",
        "str",
        None,
        "The same trust as a PKCS12 truststore, for the Spark connector: set, the connector connects over TLS.",
        "jobs, CLI",
        default_text="unset: no client TLS",
    ),
    Setting(
        "CASSANDRA_TLS_TRUSTSTORE_PASSWORD",
        "str",
        None,
        "The truststore's password: like CASSANDRA_PASSWORD, by environment only.",
        "jobs, CLI",
        default_text="unset",
        secret=True,
    ),
)
# What the James deployment is configured with, so that the repairs do as its own code does.
_JAMES = (
    Setting(
        "JAMES_HANDLE_RECENT",
        "bool",
        True,
        "James's `-Djames.mailbox.handleRecent` (jvm.properties, James master only; 3.9.x always handles Recent). "
        "0: James neither reads nor writes mailboxRecents and ignores messages' flagRecent, so the `recent` target "
        "is NOT_APPLICABLE (nothing checked or written) and `messages` does not compare flagRecent.",
        "jobs, CLI",
        airflow_variable=True,
    ),
    Setting(
        "JAMES_MESSAGE_WRITE_STRONG_CONSISTENCY",
        "bool",
        True,
        "James's `message.write.strong.consistency.unsafe` (cassandra.properties): 1, James writes imapUidTable with "
        "lightweight transactions and the re-checks re-read it at JAMES_LWT_SERIAL_CONSISTENCY; 0, at the regular "
        "level (LOCAL_QUORUM). A run's `--truth-consistency` wins.",
        "jobs, CLI",
        airflow_variable=True,
    ),
    Setting(
        "JAMES_LWT_SERIAL_CONSISTENCY",
        "str",
        "SERIAL",
        "The level of James's `LWT` driver profile (cassandra-driver.conf, `profiles.LWT.basic.request.consistency`): "
        "SERIAL or LOCAL_SERIAL.",
        "jobs, CLI",
        airflow_variable=True,
    ),
)
_SPARK = (
    Setting(
        "SPARK_MASTER",
        "str",
        "local[*]",
        "The Spark master of the CLI's jobs and sessions (`spark://host:7077`: the product zip is shipped to the "
        "executors); Airflow's jobs take the `spark_default` connection's.",
        "CLI",
    ),
    Setting(
        "SPARK_DRIVER_MEMORY",
        "str",
        "2g",
        "The Spark driver's memory (spark-submit's `--driver-memory`).",
        "CLI",
    ),
    Setting(
        "SPARK_EXECUTOR_MEMORY",
        "str",
        "1g",
        "Each executor's memory on a cluster master.",
        "CLI, DAG tasks",
    ),
    Setting(
        "SPARK_PY_FILES",
        "str",
        None,
        "The product zip a cluster's executors import (shipped with the job's files).",
        "CLI, DAG tasks",
        default_text="a zip of the installed package, built at submit time into `<local dir>/dist/`",
    ),
    Setting(
        "SPARK_EXECUTOR_PYTHON",
        "str",
        None,
        "The executors' Python on a cluster master (spark.pyspark.python).",
        "CLI, DAG tasks",
        default_text="`<local dir>/worker-venv/bin/python` when there is one, else `python3`",
    ),
    Setting(
        "SPARK_SHUFFLE_PARTITIONS",
        "int",
        8,
        "spark.sql.shuffle.partitions of every job.",
        "CLI, DAG tasks",
    ),
    Setting(
        "SPARK_LOG_LEVEL",
        "str",
        "WARN",
        "The Spark driver's log level (ERROR, WARN, INFO, DEBUG...).",
        "jobs",
    ),
    Setting(
        "JAMES_SPARK_FULL_JIT",
        "bool",
        False,
        "1: give the Spark driver, and the executors of the kit's standalone cluster, their full JIT back (a long "
        "run on a big keyspace).",
        "CLI, DAG tasks, `spark start`",
    ),
    Setting(
        "JAMES_SPARK_JARS_DIR",
        "str",
        None,
        "A folder holding the Spark Cassandra Connector's jars and their dependencies, for a site without Maven "
        "Central: every job ships these, nothing is downloaded.",
        "CLI, DAG tasks",
        default_text="`<local dir>/jars/spark` when it holds the connector (a checkout, the Airflow image); else "
        "Spark resolves the connector from Maven Central once, into JAMES_SPARK_IVY_DIR",
    ),
    Setting(
        "JAMES_SPARK_IVY_DIR",
        "str",
        None,
        "Spark's Ivy folder (spark.jars.ivy) when it resolves the connector: its cache and the jars the jobs ship.",
        "CLI, DAG tasks",
        default_text="`<local dir>/ivy`",
    ),
)
_DAG_SETTINGS = (
    Setting(
        "JAMES_KEYSPACE",
        "str",
        "james_demo",
        "The keyspace scheduled runs repair (the trigger forms' default); counters_recompute waits for this "
        "keyspace's `messages_consistent` asset.",
        _DAGS,
        airflow_variable=True,
    ),
    Setting(
        "JAMES_REPAIR_TIMEZONE",
        "str",
        "Europe/Paris",
        "Timezone of every repair DAG's cron.",
        _DAGS,
        airflow_variable=True,
    ),
    Setting(
        "JAMES_MESSAGE_REPAIR_CRON",
        "cron",
        "30 2 * * *",
        "When message_consistency runs.",
        _DAGS,
        airflow_variable=True,
    ),
    Setting(
        "JAMES_ACL_REPAIR_CRON",
        "cron",
        "0 3 * * *",
        "When acl_consistency runs.",
        _DAGS,
        airflow_variable=True,
    ),
    Setting(
        "JAMES_INDEX_REBUILD_CRON",
        "cron",
        "30 4 * * *",
        "When index_rebuild runs.",
        _DAGS,
        airflow_variable=True,
    ),
    Setting(
        "JAMES_ATTACHMENT_CHECK_CRON",
        "cron",
        "0 5 * * 0",
        "When attachment_integrity runs (weekly).",
        _DAGS,
        airflow_variable=True,
    ),
    Setting(
        "JAMES_HOUSEKEEPING_CRON",
        "cron",
        "0 6 * * *",
        "When housekeeping runs: it removes the before-images of runs older than JAMES_UNDO_RETENTION_DAYS.",
        _DAGS,
        airflow_variable=True,
    ),
    Setting(
        "JAMES_REPAIR_WINDOW_MINUTES",
        "float",
        180.0,
        "The off-peak window: a DAG run's scan stops at the first token-range boundary this long after the run was "
        "due (the next run goes on), and an alert goes out when the run is still going then; 0: no window.",
        _DAGS,
        airflow_variable=True,
    ),
    Setting(
        "JAMES_TOKEN_RANGES",
        "int",
        0,
        "Token ranges per table of a DAG run's scan (journalled, resumable); 0: from Cassandra's size estimates.",
        "DAG tasks",
        airflow_variable=True,
    ),
    Setting(
        "JAMES_FULL_VERIFY_WEEKDAY",
        "str",
        "sun",
        "The day (mon..sun) a DAG run's verify scans everything again instead of re-checking the check's candidates "
        "and sample; `never` for never (the trigger form's full_verify asks for one at any time).",
        "DAG tasks",
        airflow_variable=True,
    ),
    Setting(
        "JAMES_WORK_ROOT",
        "str",
        None,
        "Where DAG runs keep their work folders (the kept scan, candidates, outcomes) and the token ranges' kept rows: "
        "a path, or a Hadoop URL (file://, hdfs://, s3a://) the driver and every executor reach.",
        "DAG tasks",
        default_text="`<local dir>/reports/airflow/<dag>/<run>/work`",
        airflow_variable=True,
    ),
    Setting(
        "JAMES_REPAIR_RETRIES",
        "int",
        2,
        "Retries of a Spark job that exited 5 (node unreachable or lost); any other failure is not retried.",
        _DAGS,
        airflow_variable=True,
    ),
    Setting(
        "JAMES_REPAIR_RETRY_DELAY_SECONDS",
        "float",
        300.0,
        "Delay before the first retry, doubled at each one (at most an hour).",
        _DAGS,
        airflow_variable=True,
    ),
    Setting(
        "JAMES_MAX_DESTRUCTIVE_SHARE",
        "float",
        DEFAULT_MAX_DESTRUCTIVE_SHARE,
        "Largest share of a projection's rows a plan may delete or rewrite (the trigger forms' default, what "
        "scheduled runs use).",
        _DAGS,
        airflow_variable=True,
    ),
    Setting(
        "JAMES_MAILBOX_APPROVERS",
        "list",
        ("admin",),
        "Airflow user ids allowed to approve the offline mailbox repair and the undo of a repair (comma-separated).",
        _DAGS + ", local Airflow",
        airflow_variable=True,
    ),
    Setting(
        "JAMES_MAILBOX_APPROVAL_TIMEOUT_MINUTES",
        "float",
        120.0,
        "No answer to the approval of the mailbox repair (or of an undo) within this time means Reject.",
        _DAGS,
        airflow_variable=True,
    ),
)
_ALERT_SETTINGS = (
    Setting(
        "JAMES_ALERT_LOG",
        "str",
        None,
        "The JSON-lines alert log, always written.",
        _ALERTS,
        default_text="`<local dir>/alerts/alerts.jsonl`",
    ),
    Setting(
        "JAMES_ALERT_EMAILS",
        "list",
        (),
        "Alert mail recipients (comma or semicolon separated; also an Airflow Variable); none: no mail.",
        _ALERTS,
        airflow_variable=True,
    ),
    Setting(
        "JAMES_ALERT_SMTP_CONN_ID",
        "str",
        "smtp_default",
        "The Airflow SMTP connection alert mail goes through (also an Airflow Variable).",
        _ALERTS,
        airflow_variable=True,
    ),
    Setting(
        "JAMES_ALERT_FROM",
        "str",
        "james-consistency@localhost",
        "Sender of alert mail when the SMTP connection has no `from_email`.",
        _ALERTS,
    ),
    Setting(
        "JAMES_ALERT_WEBHOOK_URL",
        "str",
        None,
        "A Slack-compatible chat webhook for alerts (its path is a token: never logged).",
        _ALERTS,
        default_text="unset: the connection of JAMES_ALERT_WEBHOOK_CONN_ID, if any",
    ),
    Setting(
        "JAMES_ALERT_WEBHOOK_CONN_ID",
        "str",
        "james_alert_webhook",
        "The Airflow http connection of the chat webhook, when JAMES_ALERT_WEBHOOK_URL is unset (also an Airflow "
        "Variable).",
        _ALERTS,
        airflow_variable=True,
    ),
    Setting(
        "JAMES_DATA_DOCS_URL",
        "str",
        None,
        "Where the Great Expectations Data Docs folder `local_site` is served; alerts link there.",
        _ALERTS,
        default_text="unset: alerts link the local files",
    ),
)
_LOAD = (
    Setting(
        "JAMES_SCAN_ROWS_PER_SECOND",
        "float",
        0.0,
        "Rows a second a run's scan may read across the whole cluster (both tables together; each Spark task reading "
        "at once gets its share); `--scan-rows-per-second` and the trigger forms override it. 0: no fixed limit, "
        "since the right figure depends on the ring (`bench model` gives the rate a night needs to fit its window); "
        "scheduled nights adapt to the ring's latency anyway (JAMES_ADAPTIVE_RATE).",
        "jobs, CLI, DAG tasks",
        airflow_variable=True,
    ),
    Setting(
        "JAMES_ADAPTIVE_RATE",
        "bool",
        True,
        "Scheduled nights adapt their scan's rate between batches of token ranges: lower when a canary read of "
        "James's keyspace is slower than JAMES_LATENCY_TARGET_MS, higher again when it is not. Manual triggers and "
        "the command line adapt only when asked (`--adaptive`, the trigger form).",
        "DAG tasks",
        airflow_variable=True,
    ),
    Setting(
        "JAMES_LATENCY_TARGET_MS",
        "float",
        0.0,
        "The canary read's latency (its p99 over a batch of ranges, in milliseconds) the adaptive mode keeps under; "
        "0: derived when the night starts, the canary's p99 before the scan plus 20 ms (or twice it, if more). "
        "A ring on which nobody but the night uses James's keyspace is read at full speed whatever the canary says.",
        "jobs, CLI, DAG tasks",
        airflow_variable=True,
    ),
    Setting(
        "JAMES_RATE_FLOOR_ROWS_PER_SECOND",
        "float",
        DEFAULT_RATE_FLOOR_ROWS_PER_SECOND,
        "The adaptive mode never reads slower than this (rows a second across the cluster), so that a night always "
        "progresses; at the default a 1M-message keyspace (2M rows) is still read in about 35 minutes.",
        "jobs, CLI, DAG tasks",
        airflow_variable=True,
    ),
)
_LOCAL_STATE = (
    Setting(
        "JAMES_CONSISTENCY_LOCAL_DIR",
        "str",
        None,
        "The local state: connector jars, node data, Airflow home, reports, alerts, GX results, the product zip.",
        "jobs, CLI, DAGs",
        default_text="`.local` in a checkout; installed: `~/.local/share/james-consistency` (XDG_DATA_HOME)",
    ),
    Setting(
        "JAMES_GX_ROOT",
        "str",
        None,
        "The Great Expectations file context: validation results and Data Docs.",
        "jobs",
        default_text="`<local dir>/gx`",
    ),
    Setting(
        "JAMES_GX_RESULTS_KEPT",
        "int",
        30,
        "Validation results kept per suite (the newest).",
        "jobs",
    ),
    Setting(
        "JAMES_UNDO_RETENTION_DAYS",
        "float",
        14.0,
        "How long a repair's before-images are kept (in Cassandra and in its work folder), i.e. how long it can be "
        "undone; the nightly housekeeping removes older ones.",
        "jobs, DAGs",
        airflow_variable=True,
    ),
)
_LOCAL_KIT = (
    Setting(
        "JAMES_CASSANDRA_HOME",
        "str",
        None,
        "Data and configuration of the local Cassandra node.",
        "local node",
        default_text="`<local dir>/cassandra`",
    ),
    Setting(
        "JAMES_CASSANDRA_STORAGE_PORT",
        "int",
        7000,
        "The local node's storage port.",
        "local node",
    ),
    Setting(
        "JAMES_CASSANDRA_JMX_PORT",
        "int",
        7199,
        "The local node's JMX port.",
        "local node",
    ),
    Setting(
        "JAMES_CASSANDRA_HEAP",
        "str",
        "2G",
        "The JVM heap of a Cassandra node: the local node, docker-compose.yaml's nodes, the local ring's nodes "
        "(640M unless set).",
        "local node, ring, docker-compose.yaml",
    ),
    Setting(
        "JAMES_CASSANDRA_AUTH",
        "bool",
        False,
        "1: the local node starts with PasswordAuthenticator (as `cassandra start --auth`).",
        "local node",
    ),
    Setting(
        "JAMES_CASSANDRA_TLS",
        "bool",
        False,
        "1: the local node accepts client TLS only (as `cassandra start --tls`).",
        "local node",
    ),
)
_TEST_SUITE = (
    Setting(
        "JAMES_TEST_CASSANDRA_PORT",
        "int",
        19042,
        "CQL port of the test session's Cassandra node (a pytest-xdist worker N > 0 adds 100 x N to the node's ports).",
        _TESTS,
    ),
    Setting(
        "JAMES_TEST_CASSANDRA_STORAGE_PORT",
        "int",
        17000,
        "Storage port of the test session's node.",
        _TESTS,
    ),
    Setting(
        "JAMES_TEST_CASSANDRA_JMX_PORT",
        "int",
        17199,
        "JMX port of the test session's node.",
        _TESTS,
    ),
    Setting(
        "JAMES_TEST_WORKERS",
        "int",
        2,
        "pytest-xdist workers of `make test` and of the end-to-end stories, each with a test node and an Airflow "
        "home of its own; 0: one process.",
        _TESTS,
    ),
    Setting(
        "JAMES_TEST_KEEP_NODE",
        "bool",
        False,
        "1: the test nodes a session started stay up for the next session (which reuses them).",
        _TESTS,
    ),
    Setting(
        "JAMES_DOCS_SCREENSHOTS",
        "bool",
        False,
        "1: the end-to-end story of the Consistency view saves its screenshot to docs/consistency-view.png.",
        _TESTS,
    ),
    Setting(
        "JAMES_SECURE_CASSANDRA_PORT",
        "int",
        29042,
        "CQL port of the node with authentication and client TLS (tests/integration/test_security.py).",
        _TESTS,
    ),
    Setting(
        "JAMES_FAULT_CASSANDRA_PORT",
        "int",
        28042,
        "CQL port of the node the node-fault tests stop and restart (tests/integration/test_node_faults.py).",
        _TESTS,
    ),
)

GROUPS: tuple[Group, ...] = (
    Group(
        "Cassandra connection",
        "Read by the jobs and the CLI. In Airflow the operators set them in the job's environment from the "
        "`cassandra_default` connection (login, password, extra `local_dc`, `tls_ca_file`, `tls_truststore`, "
        "`tls_truststore_password`).",
        _CONNECTION,
    ),
    Group("Spark", "How the CLI and the DAG tasks start the Spark jobs.", _SPARK),
    Group(
        "James's configuration",
        "How the James deployment is configured, where a repair must do as James's own code does (see "
        "[Cassandra: consistency, rates, replication](#cassandra-consistency-rates-replication)); read by the jobs, "
        "so in Airflow set them in the workers' environment.",
        _JAMES,
    ),
    Group(
        "DAGs",
        "Read when the DAG files are parsed or their tasks run; each can also be given as the Airflow Variable of "
        "the same name (`AIRFLOW_VAR_<NAME>`).",
        _DAG_SETTINGS,
    ),
    Group("Alerts", "Read when an alert is sent, never at DAG parse time.", _ALERT_SETTINGS),
    Group(
        "Load on the ring",
        "How hard a run's scan may read the ring James serves mail from, and how it yields to James's users (see "
        "[Cassandra: consistency, rates, replication](#cassandra-consistency-rates-replication)).",
        _LOAD,
    ),
    Group("Local state", "Where the jobs, the CLI and the DAGs keep what they write.", _LOCAL_STATE),
    Group(
        "Local kit",
        "The local Cassandra node and ring (`james-consistency cassandra`, `ring`) and docker-compose.yaml's nodes.",
        _LOCAL_KIT,
    ),
    Group(
        "Test suite",
        "The Cassandra nodes pytest starts for itself (tests/conftest.py, and the tests needing a node of their own).",
        _TEST_SUITE,
    ),
)

SETTINGS: tuple[Setting, ...] = tuple(entry for group in GROUPS for entry in group.settings)
CATALOGUE: dict[str, Setting] = {entry.name: entry for entry in SETTINGS}


def _entry(name: str) -> Setting:
    try:
        return CATALOGUE[name]
    except KeyError:
        raise KeyError(f"{name} is not in the settings catalogue (james_consistency.settings.SETTINGS)") from None


def _raw(entry: Setting) -> str | None:
    """The variable's text in the environment; an empty one counts as unset."""
    value = os.environ.get(entry.name)
    if not value and entry.airflow_variable:
        value = os.environ.get(f"AIRFLOW_VAR_{entry.name}")
    return value if value and value.strip() else None


def configured(name: str) -> bool:
    """True when the environment sets `name` (or, for a DAG setting, AIRFLOW_VAR_<name>)."""
    return _raw(_entry(name)) is not None


def parse_setting(name: str, text: str):
    """`text` as the type of setting `name`; an OperatorError naming the setting and the value when it does not
    parse. A secret is taken as it is: its spaces may be part of it."""
    entry = _entry(name)
    if entry.secret:
        return text
    text = text.strip()
    try:
        if entry.type == "int":
            return int(text)
        if entry.type == "float":
            return float(text)
        if entry.type == "bool":
            if text.lower() not in TRUE_WORDS + FALSE_WORDS:
                raise ValueError(text)
            return text.lower() in TRUE_WORDS
        if entry.type == "list":
            return tuple(item.strip() for item in re.split(r"[,;]", text) if item.strip())
        if entry.type == "cron" and not CRON_PATTERN.match(text):
            raise ValueError(text)
    except ValueError:
        raise OperatorError(f"setting {name}={text!r} is not valid: expected {EXPECTED[entry.type]}") from None
    return text


def setting(name: str):
    """The value of setting `name`: from the environment, parsed to its type, else the catalogue's default."""
    entry = _entry(name)
    raw = _raw(entry)
    return entry.default if raw is None else parse_setting(name, raw)


def default(name: str):
    """The catalogue's default of setting `name`, whatever the environment says."""
    return _entry(name).default


def default_shown(entry: Setting) -> str:
    """The default as one would write it in the environment."""
    if entry.default is None:
        return entry.default_text or "unset"
    if entry.type == "bool":
        return "`1`" if entry.default else "`0`"
    if entry.type == "list":
        return f"`{','.join(entry.default)}`" if entry.default else "none"
    if entry.type == "float":
        return f"`{entry.default:g}`"
    return f"`{entry.default}`"


def render_table() -> str:
    """The catalogue as the documentation's markdown tables, one per group, each under its title and what it is
    about. A secret's row says so and shows no value."""
    sections = []
    for group in GROUPS:
        lines = [f"**{group.title}.** {group.about}", "", "| Setting | Type | Default | Read by | What it does |"]
        lines.append("|---|---|---|---|---|")
        for entry in group.settings:
            name = f"`{entry.name}`" + (" (or `AIRFLOW_VAR_…`)" if entry.airflow_variable else "")
            kind = f"{entry.type}, secret" if entry.secret else entry.type
            lines.append(f"| {name} | {kind} | {default_shown(entry)} | {entry.used_by} | {entry.description} |")
        sections.append("\n".join(lines) + "\n")
    return "\n".join(sections)
