"""A spark-submit driver imports pyspark from the installed package, not from spark-submit's zip of the same files
(compiled from source in every job); the zip of a Spark installed on its own, and py4j's, stay first."""

import os
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest
from james_consistency.runtime.installed_pyspark import prefer_installed_pyspark
from james_consistency.runtime.package_data import entry_point

SITE_PACKAGES = Path(pyspark.__file__).parents[1]
SPARK_SUBMIT_ZIPS = [
    str(SITE_PACKAGES / "pyspark" / "python" / "lib" / "pyspark.zip"),
    *map(str, sorted((SITE_PACKAGES / "pyspark" / "python" / "lib").glob("py4j-*-src.zip"))),
]


def installed_package(root: Path) -> tuple[Path, Path, Path]:
    """A site-packages folder with pyspark in it, and the two zips spark-submit puts first."""
    site = root / "site-packages"
    lib = site / "pyspark" / "python" / "lib"
    lib.mkdir(parents=True)
    (site / "pyspark" / "__init__.py").write_text("")
    for name in ("pyspark.zip", "py4j-0.10.9.7-src.zip"):
        (lib / name).write_bytes(b"")
    return site, lib / "pyspark.zip", lib / "py4j-0.10.9.7-src.zip"


def test_the_zip_of_the_installed_package_goes_behind_the_package(tmp_path):
    site, pyspark_zip, py4j_zip = installed_package(tmp_path)
    path = ["/job", str(pyspark_zip), str(py4j_zip), "/usr/lib/python3.11", str(site)]

    assert prefer_installed_pyspark(path) is True
    assert path == ["/job", str(py4j_zip), "/usr/lib/python3.11", str(site), str(pyspark_zip)]


def test_the_zip_of_a_spark_installed_on_its_own_stays_first(tmp_path):
    site, _, _ = installed_package(tmp_path / "venv")
    spark_home_zip = tmp_path / "opt" / "spark" / "python" / "lib" / "pyspark.zip"
    spark_home_zip.parent.mkdir(parents=True)
    spark_home_zip.write_bytes(b"")
    path = [str(spark_home_zip), str(site)]

    assert prefer_installed_pyspark(path) is False
    assert path == [str(spark_home_zip), str(site)]


def test_a_package_folder_that_is_not_on_the_path_keeps_its_zip_first(tmp_path):
    _, pyspark_zip, _ = installed_package(tmp_path)
    path = [str(pyspark_zip), "/usr/lib/python3.11"]

    assert prefer_installed_pyspark(path) is False
    assert path == [str(pyspark_zip), "/usr/lib/python3.11"]


@pytest.mark.parametrize("job", ["reconcile.py", "mailboxes.py", "undo.py", "housekeeping.py"])
def test_each_job_imports_pyspark_from_the_installed_package_under_spark_submits_path(job):
    # What spark-submit's PythonRunner gives the driver: its zips first on PYTHONPATH. run_name keeps main() from
    # running; the entry point's imports run as they do in a job, then the job's first import of pyspark.
    probe = (
        f"import runpy; runpy.run_path({str(entry_point(job))!r}, run_name='probe'); "
        "import pyspark; print(pyspark.__file__)"
    )
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(SPARK_SUBMIT_ZIPS)}
    imported = subprocess.run([sys.executable, "-c", probe], env=environment, capture_output=True, text=True)

    assert imported.returncode == 0, imported.stderr[-2000:]
    assert imported.stdout.strip() == str(SITE_PACKAGES / "pyspark" / "__init__.py")
