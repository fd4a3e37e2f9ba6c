"""Where a job's connector jars come from: a configured folder as it is (nothing downloaded), else the list Spark's
resolution left in the Ivy folder; the pom the checkout resolves with and the coordinate Spark resolves agree."""

import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
from james_consistency.errors import OperatorError
from james_consistency.runtime import connector_jars as module
from james_consistency.runtime.connector_jars import (
    CONNECTOR_PACKAGE,
    SPARK_PROVIDED,
    resolution_failure,
    resolved_list,
    spark_jars,
)
from james_consistency.runtime.package_data import jvm_jar
from james_consistency.runtime.paths import PROJECT_ROOT

POM = "{http://maven.apache.org/POM/4.0.0}"


def touch_jars(folder: Path, *names: str) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_bytes(b"")
    return sorted(folder / name for name in names)


def test_the_pom_and_spark_resolve_the_same_connector_without_what_spark_ships():
    pom = ElementTree.parse(PROJECT_ROOT / "jars" / "spark" / "pom.xml").getroot()
    version = pom.findtext(f"{POM}properties/{POM}connector.version")
    (dependency,) = pom.iterfind(f"{POM}dependencies/{POM}dependency")
    pinned = [dependency.findtext(f"{POM}{field}") for field in ("groupId", "artifactId", "version")]
    excluded = pom.findtext(f".//{POM}excludeArtifactIds").split(",")

    assert ":".join(pinned).replace("${connector.version}", version) == CONNECTOR_PACKAGE
    assert sorted(excluded) == sorted(coordinate.split(":")[1] for coordinate in SPARK_PROVIDED)


@pytest.mark.parametrize(
    "connector",
    ["spark-cassandra-connector_2.12-3.5.1.jar", "com.datastax.spark_spark-cassandra-connector_2.12-3.5.1.jar"],
)
def test_a_folder_of_jars_is_shipped_as_it_is_and_nothing_is_downloaded(monkeypatch, tmp_path, connector):
    folder = tmp_path / "jars"
    given = touch_jars(folder, connector, "java-driver-core-shaded-4.18.1.jar")
    touch_jars(folder, jvm_jar().name)  # a product jar left there by an older version
    monkeypatch.setenv("JAMES_SPARK_JARS_DIR", str(folder))
    monkeypatch.setenv("JAMES_SPARK_IVY_DIR", str(tmp_path / "ivy"))

    assert module.connector_jars() == given
    assert spark_jars() == [*given, jvm_jar()]
    assert not (tmp_path / "ivy").exists()


def test_a_folder_without_the_connector_is_named_in_one_line(monkeypatch, tmp_path):
    folder = tmp_path / "jars"
    touch_jars(folder, "spark-cassandra-connector-driver_2.12-3.5.1.jar")
    monkeypatch.setenv("JAMES_SPARK_JARS_DIR", str(folder))

    with pytest.raises(OperatorError) as refused:
        module.connector_jars()
    assert str(refused.value) == (
        f"JAMES_SPARK_JARS_DIR={folder} holds no Spark Cassandra Connector jar: put {CONNECTOR_PACKAGE} and its "
        "dependencies there (docs/deployment.md), or unset it to resolve them from Maven Central"
    )


def test_what_spark_resolved_once_is_shipped_again_without_resolving(monkeypatch, tmp_path):
    """No folder holds the connector: the jars Spark's resolution listed are used while they are all there."""
    ivy = tmp_path / "ivy"
    retrieved = touch_jars(
        ivy / "jars", "com.datastax.spark_spark-cassandra-connector_2.12-3.5.1.jar", "config-1.4.1.jar"
    )
    resolved_list(ivy).parent.mkdir(parents=True)
    resolved_list(ivy).write_text("".join(f"{jar}\n" for jar in retrieved))
    monkeypatch.delenv("JAMES_SPARK_JARS_DIR", raising=False)
    monkeypatch.setenv("JAMES_SPARK_IVY_DIR", str(ivy))
    monkeypatch.setattr(module, "SPARK_JARS_DIR", tmp_path / "no-local-jars")

    assert module.connector_jars() == retrieved


CENTRAL_REFUSED = """
:: problems summary ::
:::: WARNINGS
	Host repos.spark-packages.org not found. url=https://repos.spark-packages.org/c/x.pom
		:: c#x;1: not found
:::: ERRORS
	Server access error at url https://repo1.maven.org/maven2/c/x.pom (java.net.ConnectException: Connection refused)
Exception in thread "main" java.lang.RuntimeException: [unresolved dependency: c#x;1: not found]
"""


@pytest.mark.parametrize(
    "output, why",
    [
        (CENTRAL_REFUSED, "Maven Central is unreachable (java.net.ConnectException: Connection refused)"),
        (
            "\tHost repo1.maven.org not found. url=https://repo1.maven.org/maven2/x.pom\n",
            "Maven Central is unreachable (host repo1.maven.org not found)",
        ),
        (
            CENTRAL_REFUSED.replace("Server access error", "Access refused"),
            "unresolved dependency: c#x;1: not found",
        ),
        ("JAVA_HOME is not set\n\n", "JAVA_HOME is not set"),
        ("", "spark-submit printed nothing"),
    ],
)
def test_why_spark_could_not_resolve_the_connector(output, why):
    assert resolution_failure(output) == why
