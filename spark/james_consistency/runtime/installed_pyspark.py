"""The spark-submit driver's pyspark, imported from the installed package rather than from spark-submit's zip.

spark-submit puts `$SPARK_HOME/python/lib/pyspark.zip` first on the driver's `sys.path`. When SPARK_HOME is pip's
pyspark package (the embedded default, and Airflow's spark-submit from the same virtualenv), that zip holds the same
modules as the package beside it, but without bytecode: Python compiles every pyspark module it imports from source,
in each job (about 1 CPU-s a job, a tenth of a small job's driver). The zip of a Spark installed on its own (a
SPARK_HOME that is not the package) stays first, as does py4j's zip: pip's py4j may be another version.

No pyspark import here: this must run before the job's first one.
"""

import sys
from pathlib import Path

PYSPARK_ZIP = ("pyspark", "python", "lib", "pyspark.zip")


def prefer_installed_pyspark(path: list[str] | None = None) -> bool:
    """Move the zip of the installed pyspark package behind that package's folder on `path` (sys.path); True if it
    moved."""
    path = sys.path if path is None else path
    folders = {Path(entry).resolve() for entry in path if entry and not entry.endswith(".zip")}
    for entry in path:
        zip_path = Path(entry)
        if zip_path.parts[-len(PYSPARK_ZIP) :] != PYSPARK_ZIP:
            continue
        site_packages = zip_path.parents[3]
        if site_packages.resolve() in folders and (site_packages / "pyspark" / "__init__.py").is_file():
            path.remove(entry)
            path.append(entry)
            return True
    return False
