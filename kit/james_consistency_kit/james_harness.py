"""James itself as the writer, fault injector and oracle: runs the James harness jars (james/harness-<V>/, built by
`make setup`) one JVM per command and returns the command's JSON result.

Contract (james/harness-*/): `java -cp james-harness.jar:<classpath.txt> org.apache.james.consistency.harness.Main
<command> --host H --port P --keyspace K [options]`; stdout is one JSON document; exit 2 is bad input with one line on
stderr; credentials travel only as CASSANDRA_USERNAME / CASSANDRA_PASSWORD in the child's environment.
"""

import json
import os
import subprocess

from james_consistency.cassandra.cql import CassandraSettings
from james_consistency.errors import OperatorError
from james_consistency.runtime.paths import JARS_DIR, PROJECT_ROOT
from james_consistency.runtime.spark_env import QUICK_JIT_OPTION

VERSIONS = ("3.8.1", "3.5.0")
DEFAULT_VERSION = "3.8.1"
MAIN_CLASS = "org.apache.james.consistency.harness.Main"
# Writing, breaking or reading a test platform takes James seconds: the JVM's quick compiler only and its simplest
# collector (C2 and G1's threads took half of a seed's CPU, on two cores shared with the node and Spark). James's own
# tasks (`solve`) keep the JVM's defaults: the bench times them beside the repairs.
SHORT_RUN_JVM_OPTIONS = (QUICK_JIT_OPTION, "-XX:+UseSerialGC")


def harness_dir(version: str):
    return JARS_DIR / f"james-{version}"


def is_built(version: str) -> bool:
    folder = harness_dir(version)
    return (folder / "james-harness.jar").is_file() and (folder / "classpath.txt").is_file()


def java_command(version: str, command: str) -> list[str]:
    """The java command line of a harness command up to the main class, or an OperatorError when that harness is not
    built."""
    if version not in VERSIONS:
        raise OperatorError(f"unknown James version {version} (harnesses: {', '.join(VERSIONS)})")
    if not is_built(version):
        source = PROJECT_ROOT / "james" / f"harness-{version}"
        raise OperatorError(f"the James {version} harness is not built ({source}): run make setup")
    from james_consistency.runtime.spark_env import require_java

    folder = harness_dir(version)
    classpath = f"{folder / 'james-harness.jar'}:{(folder / 'classpath.txt').read_text().strip()}"
    options = () if command == "solve" else SHORT_RUN_JVM_OPTIONS
    return [require_java(), *options, "-cp", classpath, MAIN_CLASS]


def run(
    version: str,
    command: str,
    arguments: list[str],
    settings: CassandraSettings,
    timeout: float | None = None,
):
    """Runs one harness command against the node of `settings` and returns its parsed JSON result."""
    line = [*java_command(version, command), command, *_connection(settings), *arguments]
    return _completed(version, command, line, settings, timeout)


def run_batch(
    version: str, commands: list[tuple[str, list[str]]], settings: CassandraSettings, timeout: float | None = None
) -> list:
    """Runs harness commands (command, arguments) one after the other in one JVM against the node of `settings`, and
    returns their parsed JSON results: a platform written then broken by James costs one JVM start, not one per
    command. James's own tasks (`solve`) run alone: the bench times them."""
    if any(command == "solve" for command, _ in commands):
        raise ValueError("solve runs alone (run), with the JVM's defaults")
    lines = [[command, *_connection(settings), *arguments] for command, arguments in commands]
    return _completed(
        version, "batch", [*java_command(version, "batch"), "batch"], settings, timeout, json.dumps(lines)
    )


def _connection(settings: CassandraSettings) -> list[str]:
    return ["--host", settings.host, "--port", str(settings.port)]


def _completed(version: str, command: str, line: list[str], settings, timeout, stdin: str | None = None):
    environment = dict(os.environ)
    for name, value in (("CASSANDRA_USERNAME", settings.username), ("CASSANDRA_PASSWORD", settings.password)):
        if value:
            environment[name] = value
        else:
            environment.pop(name, None)
    completed = subprocess.run(
        line, input=stdin, capture_output=True, text=True, env=environment, timeout=timeout, check=False
    )
    if completed.returncode == 2:
        raise OperatorError(f"James {version} harness: {_last_line(completed.stderr)}")
    if completed.returncode != 0:
        raise RuntimeError(
            f"James {version} harness {command} failed (exit {completed.returncode}): {completed.stderr[-4000:]}"
        )
    try:
        return json.loads(completed.stdout)
    except json.JSONDecodeError:
        raise RuntimeError(f"James {version} harness {command} printed no JSON: {completed.stdout[-2000:]}") from None


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "bad input"
