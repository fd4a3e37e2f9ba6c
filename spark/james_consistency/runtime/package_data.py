"""The files the product ships beside its code, found through importlib.resources wherever the package is installed
(a wheel in a virtualenv or an image, or the checkout's editable install), never beside a checkout:

    jobs/entry_points/  the spark-submit entry points (reconcile.py, mailboxes.py, undo.py, housekeeping.py, ...)
    expectations/   the Great Expectations suites, as reviewable JSON (the checkout's top-level expectations/, mapped
                    into the package as james_consistency.expectations)
    conf/           Spark's log configuration (log4j2.properties)
    jvm/            the JVM side (*.java) and its jar, compiled by scripts/setup.sh or the image build

`require_package_data()` names what a broken install lacks when a job is about to start (the CLI before spark-submit,
a DAG's Spark task when its DAG file is parsed), rather than a traceback inside the job.
"""

import csv
from functools import cache
from importlib import metadata, resources
from pathlib import Path, PurePosixPath

from james_consistency.errors import OperatorError

DISTRIBUTION = "james-consistency"
JVM_JAR_NAME = "james-consistency-jvm.jar"
ENTRY_POINTS = ("reconcile.py", "mailboxes.py", "undo.py", "housekeeping.py", "class_archive_warm_up.py")
# Folders of package data (not Python) whose every file an installed wheel's RECORD lists.
DATA_FOLDERS = ("expectations", "conf", "jvm")


def package_path(*parts: str) -> Path:
    """A file or folder of the installed package james_consistency (pip installs it as a folder, never zipped)."""
    return Path(str(resources.files("james_consistency").joinpath(*parts)))


def entry_point(name: str) -> Path:
    """The spark-submit entry point `name` (reconcile.py, mailboxes.py...), after checking the install holds every
    file a job needs."""
    require_package_data()
    return package_path("jobs", "entry_points", name)


def suites_folder() -> Path:
    """The suites' folder: inside the installed package, or the checkout's expectations/ in an editable install."""
    return Path(str(resources.files("james_consistency.expectations")))


def suite_path(name: str) -> Path:
    return suites_folder() / f"{name}.json"


def log4j_config() -> Path:
    return package_path("conf", "log4j2.properties")


def jvm_jar() -> Path:
    return package_path("jvm", JVM_JAR_NAME)


def missing_package_data() -> list[str]:
    """What a job needs and the install lacks, as paths inside the package: the entry points, the log configuration,
    the JVM jar and at least one suite, and in an installed wheel every data file its RECORD lists."""
    entry_points = [f"jobs/entry_points/{name}" for name in ENTRY_POINTS]
    required = [*entry_points, "conf/log4j2.properties", f"jvm/{JVM_JAR_NAME}"]
    missing = [name for name in required if not package_path(name).is_file()]
    if not any(suites_folder().glob("*.json")):
        missing.append("expectations/*.json")
    return sorted({*missing, *_missing_from_record()})


def _missing_from_record() -> list[str]:
    """The data files of the james_consistency package its installed wheel's RECORD (in the folder the package was
    imported from) lists and the disk lacks. An editable install has no RECORD there: the checkout holds the files."""
    site = package_path().parent
    installed = metadata.distributions(name=DISTRIBUTION, path=[str(site)])
    # RECORD itself: Distribution.files leaves out the files that are gone (Python 3.12).
    record = next((distribution.read_text("RECORD") or "" for distribution in installed), "")
    listed = [PurePosixPath(row[0]) for row in csv.reader(record.splitlines()) if row]
    return [
        "/".join(path.parts[1:])
        for path in listed
        if path.parts[:1] == ("james_consistency",)
        and path.parts[1:2] in {(folder,) for folder in DATA_FOLDERS}
        and not (site / path).is_file()
    ]


@cache
def require_package_data() -> None:
    """Raise an OperatorError naming every missing file (checked once a process)."""
    missing = missing_package_data()
    if missing:
        raise OperatorError(
            f"this james-consistency install is incomplete: {', '.join(missing)} missing from {package_path()} "
            f"({_remedy()})"
        )


def _remedy() -> str:
    if (package_path().parents[1] / "scripts" / "setup.sh").is_file():
        return "in a checkout, scripts/setup.sh builds the JVM jar"
    return f"reinstall it: pip install --force-reinstall {DISTRIBUTION}"
