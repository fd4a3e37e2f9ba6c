"""The build backend of james-consistency (pyproject.toml): setuptools', refusing to build a wheel without the
product's JVM side, so no wheel ever ships without it.

The jar is compiled from spark/james_consistency/jvm/*.java against Spark's and the connector's jars, which a build
environment does not have: scripts/setup.sh (or the image's jars stage) compiles it first, next to its sources.
"""

import shutil
from pathlib import Path

from setuptools import build_meta
from setuptools.build_meta import *  # noqa: F403 - every other hook is setuptools' own

JVM_FOLDER = Path(__file__).resolve().parents[1] / "spark" / "james_consistency" / "jvm"
JVM_JAR = JVM_FOLDER / "james-consistency-jvm.jar"
# setuptools copies the packages here and never removes what it copied before: a module moved or deleted since the
# last build would ship again.
BUILD_LIB = Path(__file__).resolve().parents[1] / "build" / "lib"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    stale = [source.name for source in JVM_FOLDER.glob("*.java") if not JVM_JAR.is_file() or newer(source, JVM_JAR)]
    if stale:
        raise SystemExit(
            f"{JVM_JAR} is missing or older than {', '.join(sorted(stale))}: "
            "run scripts/setup.sh (it compiles the JVM side) before building the wheel"
        )
    shutil.rmtree(BUILD_LIB, ignore_errors=True)
    return build_meta.build_wheel(wheel_directory, config_settings, metadata_directory)


def newer(path: Path, than: Path) -> bool:
    return path.stat().st_mtime > than.stat().st_mtime
