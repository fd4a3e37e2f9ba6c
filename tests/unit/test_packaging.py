"""What the distributions declare (pyproject.toml, kit/pyproject.toml) agrees with what the tests run: every
dependency's range holds the version the lock (requirements.txt, what `make` installs) pins, the two distributions
and the changelog name one version, and the console script is the product's."""

import re
import tomllib

import pytest
from james_consistency.runtime.paths import PROJECT_ROOT
from packaging.requirements import Requirement

PRODUCT = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]
KIT = tomllib.loads((PROJECT_ROOT / "kit" / "pyproject.toml").read_text())["project"]
OWN = {"james-consistency", "james-consistency-kit"}


def locked() -> dict[str, str]:
    lines = (PROJECT_ROOT / "requirements.txt").read_text().splitlines()
    return {name.lower(): version for name, version in (line.split("==") for line in lines if "==" in line)}


def declared() -> list[Requirement]:
    extras = [requirement for group in PRODUCT["optional-dependencies"].values() for requirement in group]
    return [Requirement(text) for text in (*PRODUCT["dependencies"], *extras, *KIT["dependencies"])]


@pytest.mark.parametrize("requirement", [r for r in declared() if r.name not in OWN], ids=lambda r: r.name)
def test_every_declared_range_holds_the_locked_version(requirement):
    lock = locked()

    assert requirement.name.lower() in lock, f"{requirement.name} is not in requirements.txt: compile the lock"
    assert requirement.specifier.contains(lock[requirement.name.lower()]), (requirement, lock[requirement.name])
    assert "<" in str(requirement.specifier), "an upper bound too: the tests run nothing above it"


def test_one_version_for_both_distributions_and_the_changelog():
    # The newest released version (an "Unreleased" section may come first).
    newest = re.search(r"^## (\d\S*)", (PROJECT_ROOT / "CHANGELOG.md").read_text(), re.MULTILINE).group(1)
    own = {requirement.name: requirement for requirement in declared() if requirement.name in OWN}

    assert PRODUCT["version"] == KIT["version"] == newest
    assert str(own["james-consistency-kit"].specifier) == f"=={PRODUCT['version']}", "the kit extra"
    assert str(own["james-consistency"].specifier) == f"=={PRODUCT['version']}", "the kit's product"
    assert own["james-consistency"].extras == {"airflow", "plot"}


def test_the_console_script_is_the_products_and_both_pythons_are_allowed():
    assert PRODUCT["scripts"] == {"james-consistency": "james_consistency.cli.main:main"}
    assert "scripts" not in KIT
    for project in (PRODUCT, KIT):
        assert project["requires-python"] == ">=3.11,<3.13"


def test_the_wheel_lists_every_package_folder_and_maps_the_top_level_dags_and_suites():
    setuptools = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {
        ".".join(folder.relative_to(PROJECT_ROOT / root).parts)
        for root in ("spark", "plugins")
        for folder in (PROJECT_ROOT / root).rglob("*")
        if (folder / "__init__.py").is_file()
    }
    mapped = {"james_airflow.dags": "dags", "james_consistency.expectations": "expectations"}

    assert set(setuptools["packages"]) == folders | mapped.keys(), "a package folder missing from pyproject.toml"
    assert {name: setuptools["package-dir"][name] for name in mapped} == mapped
    assert all((PROJECT_ROOT / folder / "__init__.py").is_file() for folder in mapped.values())
