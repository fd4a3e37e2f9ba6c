"""The settings catalogue: typed values, clear errors, every JAMES_* variable of the source in it, the README table."""

import io
import re
import tokenize
from contextlib import redirect_stdout

import pytest
from james_consistency.errors import OperatorError
from james_consistency.paths import PROJECT_ROOT
from james_consistency.settings import CATALOGUE, SETTINGS, configured, parse_setting, render_table, setting
from james_consistency_kit.cli import main

SOURCE_FOLDERS = ("dags", "plugins", "spark", "kit")
NAME = re.compile(r"JAMES_[A-Z0-9_]+")
ENVIRONMENT_READ = re.compile(r"(environ(\.get)?\s*[(\[]|getenv\s*\()\s*[\"']JAMES_")
# Owned by another change, listed in the catalogue: they still read their variables themselves.
READ_DIRECTLY = {"kit/james_consistency_kit/cassandra_node.py", "spark/james_consistency/spark_env.py"}


def python_sources():
    for folder in SOURCE_FOLDERS:
        yield from sorted((PROJECT_ROOT / folder).rglob("*.py"))


def names_in_strings(path) -> set[str]:
    """The JAMES_* names a Python file holds as a whole string: "JAMES_KEYSPACE", not a constant JAMES_VERSION."""
    with path.open("rb") as source:
        strings = [token.string for token in tokenize.tokenize(source.readline) if token.type == tokenize.STRING]
    return {text[1:-1] for text in strings if NAME.fullmatch(text[1:-1])}


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

    assert sorted((in_source | deployed) - set(CATALOGUE)) == [], "add a row to james_consistency.settings.SETTINGS"
    assert sorted(set(CATALOGUE) - in_source) == [], "a catalogue row no code reads"
    assert len(CATALOGUE) == len(SETTINGS), "a setting listed twice"


def test_james_variables_are_read_through_the_catalogue():
    direct = [
        str(path.relative_to(PROJECT_ROOT))
        for path in python_sources()
        if path.name != "settings.py" and ENVIRONMENT_READ.search(path.read_text())
    ]
    assert sorted(set(direct) - READ_DIRECTLY) == []


def test_the_readme_table_is_the_rendered_catalogue():
    readme = (PROJECT_ROOT / "README.md").read_text()
    table = readme.split("<!-- settings:start -->\n", 1)[1].split("<!-- settings:end -->", 1)[0]
    assert table == render_table()


def test_the_settings_command_prints_the_table():
    printed = io.StringIO()
    with redirect_stdout(printed):
        code = main(["settings"])
    assert code == 0 and printed.getvalue() == render_table()
