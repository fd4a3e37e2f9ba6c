"""The rooms of the code and what each may import: the kit imports the product, never the reverse; the engine is
handed its repair and never imports the rooms above it (the projections, the mailbox repair, the target registry,
the job entry points, the metrics).

The product (spark/, the package `james_consistency` and the spark-submit entry points) is what a Spark cluster's
executors and the Airflow deployment receive; the Airflow side (plugins/, dags/) runs where only the product is
installed. None of them may import `james_consistency_kit`, and the zip shipped to the executors holds exactly the
product package's code.
"""

import ast
import zipfile
from pathlib import Path

import pytest
from james_consistency.product_zip import build_product_zip

ROOT = Path(__file__).resolve().parents[2]
PRODUCT_PACKAGE = ROOT / "spark" / "james_consistency"
KIT = "james_consistency_kit"
# What must never import the kit: the product and the Airflow side.
KIT_FREE_FOLDERS = ("spark", "plugins")


# What the engine (spark/james_consistency/engine) must never import: it is handed its repair.
ABOVE_THE_ENGINE = (
    "james_consistency.projections",
    "james_consistency.mailboxes",
    "james_consistency.targets",
    "james_consistency.jobs",
    "james_consistency.metrics",
    "james_airflow",
    KIT,
)


def _within(module: str | None, packages: tuple[str, ...]) -> bool:
    return module is not None and any(module == package or module.startswith(f"{package}.") for package in packages)


def _is_kit(module: str | None) -> bool:
    return _within(module, (KIT,))


def kit_imports(path: Path) -> list[str]:
    """Each import of the kit in one file (see `imports_of`)."""
    return imports_of(path, _is_kit)


def imports_of(path: Path, forbidden) -> list[str]:
    """Each import in one file of a module `forbidden` says yes to, as `line N: <statement>`: import statements,
    and import_module or __import__ called with a literal module name."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [f"{node.module}.{alias.name}" for alias in node.names]
            modules = [node.module, *names] if node.level == 0 else []
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) in (
            "import_module",
            "__import__",
        ):
            modules = [
                arg.value for arg in node.args[:1] if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
            ]
        else:
            continue
        if any(forbidden(module) for module in modules):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def python_files(folder: str) -> list[Path]:
    return sorted(path for path in (ROOT / folder).rglob("*.py") if "__pycache__" not in path.parts)


@pytest.mark.parametrize("folder", KIT_FREE_FOLDERS)
def test_the_product_and_the_airflow_side_never_import_the_kit(folder):
    files = python_files(folder)
    assert files, f"no Python file under {folder}/"
    offenders = {str(path.relative_to(ROOT)): imports for path in files if (imports := kit_imports(path))}
    assert offenders == {}, f"{folder}/ must not import {KIT} (the kit imports the product, never the reverse)"


def test_the_engine_never_imports_the_rooms_above_it():
    files = python_files("spark/james_consistency/engine")
    assert files, "no Python file under spark/james_consistency/engine/"
    offenders = {
        str(path.relative_to(ROOT)): imports
        for path in files
        if (imports := imports_of(path, lambda module: _within(module, ABOVE_THE_ENGINE)))
    }
    assert offenders == {}, "the engine is handed its repair: it imports none of " + ", ".join(ABOVE_THE_ENGINE)


def test_an_upward_import_is_found_in_every_form_the_boundary_tests_look_for(tmp_path):
    module = tmp_path / "upward.py"
    module.write_text(
        "import james_consistency.projections\n"
        "from james_consistency.mailboxes.policy import act\n"
        "from james_consistency import settings\n"
        "from james_consistency import gates, projections\n"
        "import importlib\n"
        "importlib.import_module('james_consistency.metrics')\n"
    )

    found = imports_of(module, lambda name: _within(name, ABOVE_THE_ENGINE))

    assert [line.split(":")[0] for line in found] == ["line 1", "line 2", "line 4", "line 6"]


def test_the_product_zip_holds_exactly_the_product_package(tmp_path):
    archive = build_product_zip(tmp_path / "james_consistency.zip")

    with zipfile.ZipFile(archive) as opened:
        shipped = set(opened.namelist())
        shipped_code = {opened.read(name) for name in shipped}
    product = {
        f"james_consistency/{path.relative_to(PRODUCT_PACKAGE).as_posix()}"
        for path in python_files("spark/james_consistency")
    }
    kit_code = {path.read_bytes() for path in python_files("kit/james_consistency_kit") if path.name != "__init__.py"}

    assert "james_consistency/__init__.py" in product and "james_consistency/engine/run.py" in product
    assert sorted(shipped - product) == [], "the zip ships files that are not the product package's code"
    assert sorted(product - shipped) == [], "the zip misses files of the product package"
    assert [name for name in shipped if KIT in name] == [] and shipped_code & kit_code == set(), "no kit module"
