"""The product as a cluster's executors import it: the Python files of the installed package james_consistency,
zipped when a job is submitted to a cluster master, from wherever the package is installed (a wheel in a virtualenv or
an image, or the checkout). The zip's name carries a digest of what it holds: a job never ships the zip of other
code, and an unchanged install builds it once (under `<local dir>/dist/`)."""

import hashlib
import os
import zipfile
from pathlib import Path

from james_consistency.runtime.package_data import package_path
from james_consistency.runtime.paths import LOCAL_DIR


def python_files() -> list[Path]:
    """Every .py of the installed package, as the executors import it (no bytecode: their Python compiles it)."""
    package = package_path()
    return sorted(path for path in package.rglob("*.py") if "__pycache__" not in path.relative_to(package).parts)


def product_zip() -> Path:
    """The zip of the installed package's code, built if this content has none yet."""
    package = package_path()
    digest = hashlib.sha256()
    for path in python_files():
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    target = LOCAL_DIR / "dist" / f"james_consistency-{digest.hexdigest()[:16]}.zip"
    return target if target.is_file() else build_product_zip(target)


def build_product_zip(target: Path) -> Path:
    """Zip the package's Python files under `james_consistency/` into `target`; written aside, then renamed (jobs
    submitted at once may build the same zip)."""
    package = package_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in python_files():
            archive.write(path, (Path("james_consistency") / path.relative_to(package)).as_posix())
    os.replace(partial, target)
    return target
