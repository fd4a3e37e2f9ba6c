"""The command line belongs to the installed package: its own commands need nothing more, `--version` names the
installed version, and the local kit's commands, when the kit is not installed, each say in one line which extra
brings them."""

import argparse
import sys
from importlib import metadata

import pytest
from james_consistency.cli import main as cli


def run(capsys, *arguments: str) -> tuple[int, str, str]:
    try:
        code = cli.main(list(arguments))
    except SystemExit as exit_:
        code = exit_.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def without_the_kit(monkeypatch):
    """An install of james-consistency without its `kit` extra: no distribution adds commands."""
    monkeypatch.setattr(cli, "command_sets", lambda: [])


def test_version_is_the_installed_distributions(capsys):
    code, out, _ = run(capsys, "--version")

    assert code == 0
    assert out.strip() == f"james-consistency {metadata.version('james-consistency')}"


@pytest.mark.parametrize("command", [["demo"], ["cassandra", "start", "--port", "9042"], ["bench", "--help"]])
def test_a_kit_command_without_the_kit_names_the_extra_in_one_line(capsys, without_the_kit, command):
    code, out, err = run(capsys, *command)

    assert code == 2 and out == ""
    assert err.splitlines() == [
        f"james-consistency: error: {command[0]} is a command of the local kit, which this install lacks: "
        "pip install 'james-consistency[kit]'"
    ]


def test_the_products_commands_work_without_the_kit(capsys, without_the_kit, tmp_path):
    assert run(capsys, "settings")[0] == 0
    code, out, _ = run(capsys, "history", "--reports", str(tmp_path))
    assert code == 0 and out.strip() == f"no runs in {tmp_path}"
    code, out, _ = run(capsys, "--help")
    shown = " ".join(out.split())
    assert code == 0 and "demo (local kit, not installed)" in shown
    assert "The local kit's commands need the kit: pip install 'james-consistency[kit]'" in shown


def test_the_kit_adds_the_commands_the_product_names_for_it():
    (kit,) = cli.command_sets()
    commands = argparse.ArgumentParser().add_subparsers()

    kit.load()(commands)

    assert kit.value == "james_consistency_kit.cli:add_kit_commands"
    assert tuple(commands.choices) == cli.KIT_COMMANDS


def test_a_plot_without_matplotlib_names_the_extra(capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)

    code, _, err = run(capsys, "history", "--reports", str(tmp_path), "--plot", str(tmp_path / "history.png"))

    assert code == 2
    assert err.splitlines() == [
        "james-consistency: error: --plot draws with matplotlib: pip install 'james-consistency[plot]'"
    ]
