"""The deployment's settings: one catalogue of every JAMES_* environment variable the project reads (its type, its
default, what it does, who reads it), and `setting(name)` to read one, typed.

The DAGs, the alert channels, the jobs and the local kit read their settings through `setting`; the README's settings
table is `render_table()` (`james-consistency settings` prints it). A setting of the DAGs can also be given as the
Airflow Variable of the same name through the environment (AIRFLOW_VAR_<NAME>): DAG files parse without touching the
metadata database. No Airflow import here: the jobs ship this module to Spark.
"""

import os
import re
from dataclasses import dataclass

from james_consistency.errors import OperatorError

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

    def __post_init__(self):
        if self.type not in TYPES:
            raise ValueError(f"{self.name}: unknown type {self.type!r}, one of {', '.join(TYPES)}")


_DAGS = "DAGs (parse time)"
_ALERTS = "alerts (when one is sent)"

SETTINGS: tuple[Setting, ...] = (
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
        0.05,
        "Largest share of a projection's rows a plan may delete or rewrite (the trigger forms' default, what "
        "scheduled runs use).",
        _DAGS,
        airflow_variable=True,
    ),
    Setting(
        "JAMES_MAILBOX_APPROVERS",
        "list",
        ("admin",),
        "Airflow user ids allowed to approve the offline mailbox repair (comma-separated).",
        _DAGS + ", local Airflow",
        airflow_variable=True,
    ),
    Setting(
        "JAMES_MAILBOX_APPROVAL_TIMEOUT_MINUTES",
        "float",
        120.0,
        "No answer to the mailbox repair's approval within this time means Reject.",
        _DAGS,
        airflow_variable=True,
    ),
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
    Setting(
        "JAMES_CONSISTENCY_LOCAL_DIR",
        "str",
        None,
        "The local, git-ignored state: jars, node data, Airflow home, reports, alerts, GX results.",
        "jobs, CLI, DAGs",
        default_text="`.local` in the project",
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
        "JAMES_SPARK_FULL_JIT",
        "bool",
        False,
        "1: give the Spark driver its full JIT back (a long local[*] run on a big keyspace).",
        "jobs",
    ),
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
    parse."""
    entry = _entry(name)
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
    """The catalogue as the README's markdown table."""
    lines = ["| Setting | Type | Default | Read by | What it does |", "|---|---|---|---|---|"]
    for entry in SETTINGS:
        name = f"`{entry.name}`" + (" (or `AIRFLOW_VAR_…`)" if entry.airflow_variable else "")
        lines.append(f"| {name} | {entry.type} | {default_shown(entry)} | {entry.used_by} | {entry.description} |")
    return "\n".join(lines) + "\n"
