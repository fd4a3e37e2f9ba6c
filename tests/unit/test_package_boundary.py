"""The rooms of the code and what each may import: the kit imports the product, never the reverse; inside the product,
each room imports only from the rooms below it (LAYERS), so the folders show the layers and no import cycle can form.

The product (spark/, the package `james_consistency` and the spark-submit entry points) is what a Spark cluster's
executors and the Airflow deployment receive; the Airflow side (plugins/, dags/) runs where only the product is
installed. None of them may import `james_consistency_kit`, and the zip shipped to the executors holds exactly the
product package's code.
"""

import ast
import zipfile
from pathlib import Path

import pytest
from james_consistency.runtime.product_zip import build_product_zip

ROOT = Path(__file__).resolve().parents[2]
PRODUCT_PACKAGE = ROOT / "spark" / "james_consistency"
KIT = "james_consistency_kit"
# What must never import the kit: the product and the Airflow side.
KIT_FREE_FOLDERS = ("spark", "plugins", "dags")


# The product's rooms, lowest first: a module imports from its own room and the rooms of lower layers only (imports
# inside functions count too). Foundations, then Cassandra, the runtime and the run report, the gates, the engine, the
# repairs it is handed, the jobs that resolve and run them, and the command line on top.
LAYERS = (
    ("errors",),
    ("settings",),
    ("cassandra",),
    ("runtime",),
    ("report",),
    ("gates",),
    ("engine",),
    ("projections",),
    ("mailboxes", "undo"),
    ("jobs",),
    ("cli",),
)
ROOMS = {room for rooms in LAYERS for room in rooms}


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
    return [
        f"line {node.lineno}: {ast.unparse(node)}" for node, modules in _imports(path) if any(map(forbidden, modules))
    ]


def imported_modules(path: Path) -> set[str]:
    return {module for _, modules in _imports(path) for module in modules}


def _imports(path: Path):
    """(statement, the modules it may import) for each import in one file: `from a import b` may import a and a.b."""
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            yield node, [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [f"{node.module}.{alias.name}" for alias in node.names]
            yield node, [node.module, *names] if node.level == 0 else []
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) in (
            "import_module",
            "__import__",
        ):
            yield (
                node,
                [arg.value for arg in node.args[:1] if isinstance(arg, ast.Constant) and isinstance(arg.value, str)],
            )


def python_files(folder: str) -> list[Path]:
    return sorted(path for path in (ROOT / folder).rglob("*.py") if "__pycache__" not in path.parts)


@pytest.mark.parametrize("folder", KIT_FREE_FOLDERS)
def test_the_product_and_the_airflow_side_never_import_the_kit(folder):
    files = python_files(folder)
    assert files, f"no Python file under {folder}/"
    offenders = {str(path.relative_to(ROOT)): imports for path in files if (imports := kit_imports(path))}
    assert offenders == {}, f"{folder}/ must not import {KIT} (the kit imports the product, never the reverse)"


def room_of(module: str) -> str | None:
    """`james_consistency.engine.run` -> `engine`; None outside the product package or for the package itself."""
    parts = module.split(".")
    return parts[1] if parts[0] == "james_consistency" and len(parts) > 1 else None


def layer_of(room: str) -> int:
    return next(number for number, rooms in enumerate(LAYERS) if room in rooms)


def module_name(path: Path) -> str:
    parts = path.relative_to(PRODUCT_PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_every_room_of_the_product_is_in_a_layer():
    rooms = {room_of(module_name(path)) for path in python_files("spark/james_consistency")} - {None}
    layered = {room for rooms in LAYERS for room in rooms}
    assert rooms == layered, "a room of spark/james_consistency/ without a layer, or a layer without its room"


def test_each_room_imports_only_from_the_layers_below_it():
    offenders = {}
    for path in python_files("spark/james_consistency"):
        room = room_of(module_name(path))
        if room is None:
            continue

        def upward(module, room=room):
            other = room_of(module or "")
            return other is not None and other != room and other in ROOMS and layer_of(other) >= layer_of(room)

        if imports := imports_of(path, upward):
            offenders[str(path.relative_to(ROOT))] = imports
    assert offenders == {}, "a room imports from its own layer or above it (LAYERS, lowest first)"


def test_no_import_cycle_between_the_product_modules():
    modules = {module_name(path): path for path in python_files("spark/james_consistency")}
    graph = {name: (imported_modules(path) & modules.keys()) - {name} for name, path in modules.items()}
    cycle = first_cycle(graph)
    assert cycle is None, "an import cycle: " + " -> ".join(cycle or [])


def first_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as the path that closes it, or None."""
    state: dict[str, str] = {}

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = "open"
        for after in sorted(graph[node]):
            if state.get(after) == "open":
                return [*path[path.index(after) :], after]
            if after not in state and (found := visit(after, [*path, after])):
                return found
        state[node] = "done"
        return None

    return next((found for node in sorted(graph) if node not in state and (found := visit(node, [node]))), None)


def test_a_cycle_is_found():
    assert first_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert first_cycle({"a": {"b"}, "b": set()}) is None


def test_an_upward_import_is_found_in_every_form_the_boundary_tests_look_for(tmp_path):
    module = tmp_path / "upward.py"
    module.write_text(
        "import james_consistency.projections\n"
        "from james_consistency.mailboxes.policy import act\n"
        "from james_consistency import settings\n"
        "from james_consistency import gates, projections\n"
        "import importlib\n"
        "def later():\n"
        "    importlib.import_module('james_consistency.jobs.targets')\n"
    )
    above_the_engine = ("projections", "mailboxes", "undo", "jobs", "cli")

    found = imports_of(module, lambda name: room_of(name or "") in above_the_engine)

    assert [line.split(":")[0] for line in found] == ["line 1", "line 2", "line 4", "line 7"]


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
