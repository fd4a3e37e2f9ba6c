"""The settings catalogue: typed values, clear errors, secrets never shown, every setting the source reads in it and
read through it, the documentation's table."""

import ast
import io
import re
import tokenize
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from james_consistency.cassandra.cql import CassandraSettings
from james_consistency.errors import OperatorError
from james_consistency.runtime.paths import PROJECT_ROOT
from james_consistency.runtime.spark_env import driver_java_options
from james_consistency.settings import CATALOGUE, SETTINGS, configured, parse_setting, render_table, setting
from james_consistency_kit.cassandra_node import LocalNode
from james_consistency_kit.cli import main

SOURCE_FOLDERS = ("plugins", "spark", "kit")
# The tests read settings of their own (the test nodes' ports): read through the catalogue too.
READING_FOLDERS = (*SOURCE_FOLDERS, "tests")
NAME = re.compile(r"JAMES_[A-Z0-9_]+")
OUR_NAME = re.compile(r"(JAMES|CASSANDRA|SPARK)_[A-Z0-9_]+")
CATALOGUE_READERS = ("setting", "configured", "parse_setting", "default")
THIS_FILE = Path(__file__).resolve()
MARKERS = ("<!-- settings:start -->\n", "<!-- settings:end -->")


def python_sources(folders=SOURCE_FOLDERS):
    for folder in folders:
        yield from sorted(path for path in (PROJECT_ROOT / folder).rglob("*.py") if "__pycache__" not in path.parts)


def names_in_strings(path) -> set[str]:
    """The JAMES_* names a Python file holds as a whole string: "JAMES_KEYSPACE", not a constant JAMES_VERSION."""
    with path.open("rb") as source:
        strings = [token.string for token in tokenize.tokenize(source.readline) if token.type == tokenize.STRING]
    return {text[1:-1] for text in strings if NAME.fullmatch(text[1:-1])}


def _literal(node) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _is_environ(node) -> bool:
    """`os.environ`, or `environ` imported from os."""
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )


def direct_reads(source: str) -> list[str]:
    """Each read of a JAMES_*, CASSANDRA_* or SPARK_* variable that bypasses the catalogue, as `line N: NAME`:
    `os.environ.get(NAME)`, `os.getenv(NAME)`, `os.environ[NAME]` read, `NAME in os.environ`. Setting a variable for
    a child process (`os.environ[NAME] = ...`, `setdefault`, `monkeypatch.setenv`) is no read."""
    found = []
    for node in ast.walk(ast.parse(source)):
        name = None
        if isinstance(node, ast.Call) and node.args:
            function = node.func
            is_get = isinstance(function, ast.Attribute) and function.attr == "get" and _is_environ(function.value)
            is_getenv = getattr(function, "attr", getattr(function, "id", None)) == "getenv"
            name = _literal(node.args[0]) if is_get or is_getenv else None
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and _is_environ(node.value):
            name = _literal(node.slice)
        elif isinstance(node, ast.Compare) and any(_is_environ(each) for each in node.comparators):
            name = _literal(node.left)
        if name and OUR_NAME.fullmatch(name):
            found.append(f"line {node.lineno}: {name}")
    return found


def catalogue_reads(source: str) -> set[str]:
    """The names a file reads through the catalogue: `setting("NAME")`, `configured("NAME")`, ..."""
    return {
        name
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and getattr(node.func, "attr", getattr(node.func, "id", None)) in CATALOGUE_READERS
        and node.args
        and (name := _literal(node.args[0]))
        and OUR_NAME.fullmatch(name)
    }


def deployment_files_names() -> set[str]:
    """The JAMES_* variables docker-compose.yaml and the images set."""
    found = set()
    for path in [PROJECT_ROOT / "docker-compose.yaml", *sorted((PROJECT_ROOT / "docker").glob("*"))]:
        if path.is_file():
            found |= set(NAME.findall(path.read_text()))
    return found


def test_values_are_parsed_to_their_type(monkeypatch):
    monkeypatch.setenv("JAMES_REPAIR_RETRIES", "4")
    monkeypatch.setenv("JAMES_MAX_DESTRUCTIVE_SHARE", "0.2")
    monkeypatch.setenv("JAMES_CASSANDRA_AUTH", "true")
    monkeypatch.setenv("JAMES_SPARK_FULL_JIT", "0")
    monkeypatch.setenv("JAMES_ALERT_EMAILS", " ops@example.org; dba@example.org,, ")
    monkeypatch.setenv("JAMES_MESSAGE_REPAIR_CRON", "15 3 * * 6")
    monkeypatch.setenv("JAMES_KEYSPACE", "james_prod")

    assert setting("JAMES_REPAIR_RETRIES") == 4
    assert setting("JAMES_MAX_DESTRUCTIVE_SHARE") == 0.2
    assert setting("JAMES_CASSANDRA_AUTH") is True
    assert setting("JAMES_SPARK_FULL_JIT") is False
    assert setting("JAMES_ALERT_EMAILS") == ("ops@example.org", "dba@example.org")
    assert setting("JAMES_MESSAGE_REPAIR_CRON") == "15 3 * * 6"
    assert setting("JAMES_KEYSPACE") == "james_prod"


def test_unset_or_empty_means_the_catalogue_default(monkeypatch):
    monkeypatch.delenv("JAMES_REPAIR_RETRIES", raising=False)
    monkeypatch.delenv("AIRFLOW_VAR_JAMES_REPAIR_RETRIES", raising=False)
    monkeypatch.setenv("JAMES_MAILBOX_APPROVERS", "")
    monkeypatch.delenv("AIRFLOW_VAR_JAMES_MAILBOX_APPROVERS", raising=False)

    assert setting("JAMES_REPAIR_RETRIES") == 2 and not configured("JAMES_REPAIR_RETRIES")
    assert setting("JAMES_MAILBOX_APPROVERS") == ("admin",) and not configured("JAMES_MAILBOX_APPROVERS")


def test_dag_settings_are_also_read_as_airflow_variables_from_the_environment(monkeypatch):
    monkeypatch.delenv("JAMES_REPAIR_TIMEZONE", raising=False)
    monkeypatch.setenv("AIRFLOW_VAR_JAMES_REPAIR_TIMEZONE", "UTC")
    monkeypatch.delenv("JAMES_GX_RESULTS_KEPT", raising=False)
    monkeypatch.setenv("AIRFLOW_VAR_JAMES_GX_RESULTS_KEPT", "7")  # not a DAG setting: the Variable is not read

    assert setting("JAMES_REPAIR_TIMEZONE") == "UTC" and configured("JAMES_REPAIR_TIMEZONE")
    assert setting("JAMES_GX_RESULTS_KEPT") == 30


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("JAMES_REPAIR_RETRIES", "two", "an integer"),
        ("JAMES_REPAIR_WINDOW_MINUTES", "3h", "a number"),
        ("JAMES_CASSANDRA_TLS", "maybe", "one of 1, true"),
        ("JAMES_ACL_REPAIR_CRON", "at three", "five cron fields"),
    ],
)
def test_a_bad_value_names_the_setting_and_the_value(monkeypatch, name, value, expected):
    monkeypatch.setenv(name, value)
    with pytest.raises(OperatorError) as error:
        setting(name)
    assert f"{name}={value!r}" in str(error.value) and expected in str(error.value)


def test_a_name_outside_the_catalogue_is_refused():
    with pytest.raises(KeyError, match="JAMES_NO_SUCH_SETTING"):
        setting("JAMES_NO_SUCH_SETTING")


def test_every_default_is_a_value_of_its_type():
    for entry in SETTINGS:
        if entry.default is None:
            assert entry.default_text, entry.name
            continue
        text = (
            ",".join(entry.default)
            if entry.type == "list"
            else str(int(entry.default) if entry.type == "bool" else entry.default)
        )
        assert parse_setting(entry.name, text) == entry.default, entry.name


def test_every_james_variable_of_the_source_is_in_the_catalogue_and_every_row_is_read():
    in_source = set().union(*(names_in_strings(path) for path in python_sources()))
    deployed = deployment_files_names()
    read = {path: catalogue_reads(path.read_text()) for path in python_sources(READING_FOLDERS)}
    # This file reads a name outside the catalogue on purpose.
    read_by_the_source = set().union(*(names for path, names in read.items() if path != THIS_FILE))

    assert sorted((in_source | deployed | read_by_the_source) - set(CATALOGUE)) == [], "add a catalogue row"
    assert sorted(set(CATALOGUE) - set().union(*read.values()) - in_source) == [], "a catalogue row no code reads"
    assert len(CATALOGUE) == len(SETTINGS), "a setting listed twice"


@pytest.mark.parametrize(
    "source",
    [
        'import os\nhost = os.environ.get("CASSANDRA_HOST", "127.0.0.1")',
        'import os\nmaster = os.getenv("SPARK_MASTER")',
        'import os\nport = int(os.environ["JAMES_TEST_CASSANDRA_PORT"])',
        'from os import environ\ntls = environ.get(\n    "JAMES_CASSANDRA_TLS"\n) == "1"',
        'import os\nif "SPARK_PY_FILES" in os.environ:\n    pass',
    ],
)
def test_the_source_scan_finds_a_direct_read_however_it_is_written(source):
    assert len(direct_reads(source)) == 1


def test_the_source_scan_leaves_what_is_only_set_for_a_child_process():
    source = (
        "import os\n"
        'os.environ["JAMES_REPAIR_WINDOW_MINUTES"] = "0"\n'
        'os.environ.setdefault("SPARK_HOME", "/opt/spark")\n'
        'child = {"CASSANDRA_PASSWORD": password}\n'
        'statsd = os.environ.get("AIRFLOW__METRICS__STATSD_ON")\n'
    )
    assert direct_reads(source) == []


def test_every_setting_is_read_through_the_catalogue():
    direct = {
        str(path.relative_to(PROJECT_ROOT)): reads
        for path in python_sources(READING_FOLDERS)
        if path.name != "settings.py" and (reads := direct_reads(path.read_text()))
    }
    assert direct == {}, "read it with james_consistency.settings.setting (and add its row)"


def test_a_boolean_reads_the_same_everywhere(monkeypatch):
    monkeypatch.setenv("JAMES_CASSANDRA_TLS", "true")
    monkeypatch.setenv("JAMES_CASSANDRA_AUTH", "yes")
    monkeypatch.setenv("JAMES_SPARK_FULL_JIT", "on")

    node = LocalNode.from_env()
    assert (node.tls, node.auth) == (True, True)
    assert "TieredStopAtLevel" not in driver_java_options(quick_jit=True)


def test_a_secret_is_taken_as_given_and_shown_nowhere(monkeypatch):
    monkeypatch.setenv("CASSANDRA_USERNAME", "james")
    monkeypatch.setenv("CASSANDRA_PASSWORD", " s3cret pass ")
    monkeypatch.setenv("CASSANDRA_TLS_TRUSTSTORE_PASSWORD", "trust-s3cret")

    settings = CassandraSettings.from_env()
    assert (settings.password, settings.tls_truststore_password) == (" s3cret pass ", "trust-s3cret")
    for shown in (repr(settings), render_table()):
        assert "s3cret" not in shown
    assert "| `CASSANDRA_PASSWORD` | str, secret | unset |" in render_table()


def test_a_jobs_environment_reads_back_as_the_same_settings(monkeypatch):
    given = CassandraSettings(
        host="cassandra-1,cassandra-2",
        port=9142,
        username="james",
        password="s3cret",
        local_dc="dc1",
        tls_ca_file="/tls/ca.pem",
        tls_truststore="/tls/truststore.p12",
        tls_truststore_password="trust",
    )
    for name in CATALOGUE:
        if name.startswith("CASSANDRA_"):
            monkeypatch.delenv(name, raising=False)
    for name, value in given.environment().items():
        monkeypatch.setenv(name, value)

    assert CassandraSettings.from_env() == given


def test_the_deployment_page_table_is_the_rendered_catalogue():
    pages = [PROJECT_ROOT / "README.md", *sorted((PROJECT_ROOT / "docs").rglob("*.md"))]
    holding = [page for page in pages if page.is_file() and MARKERS[0] in page.read_text()]
    deployment = PROJECT_ROOT / "docs" / "deployment.md"
    assert holding == [deployment], f"docs/deployment.md alone holds the settings table between {MARKERS}: {holding}"
    table = holding[0].read_text().split(MARKERS[0], 1)[1].split(MARKERS[1], 1)[0]
    assert table == render_table()


def test_the_settings_command_prints_the_table():
    printed = io.StringIO()
    with redirect_stdout(printed):
        code = main(["settings"])
    assert code == 0 and printed.getvalue() == render_table()
