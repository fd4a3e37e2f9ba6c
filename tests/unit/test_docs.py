"""The docs cannot drift from the product: every link between the README and docs/ resolves, and every command their
shell blocks show is one the tools accept (james-consistency lines by the CLI's own parser, make targets in the
Makefile, airflow sub-commands by Airflow's)."""

import re
import shlex
import subprocess
from pathlib import Path

import pytest
from james_consistency.runtime.paths import PROJECT_ROOT

PAGES = [PROJECT_ROOT / "README.md", *sorted((PROJECT_ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
SHELL_BLOCK = re.compile(r"```(?:bash|sh|shell|console)\n(.*?)```", re.S)
# Commands shown but run elsewhere: installs, other tools, shell built-ins.
NOT_OURS = ("pip", "uv", "mvn", "docker", "docker-compose", "export", ".", "source", "cd", "git", "curl", "cat", "ls")


def _slug(title: str) -> str:
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def _headings(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return {_slug(line.lstrip("#")) for line in text.splitlines() if line.startswith("#")}


def program(words: list[str]) -> str:
    """The program a command runs: `.venv/bin/james-consistency` is james-consistency, `.` is `.`."""
    return Path(words[0]).name or words[0]


def links() -> list[tuple[Path, str]]:
    found = []
    for page in PAGES:
        for target in LINK.findall(re.sub(r"```.*?```", "", page.read_text(), flags=re.S)):
            if not re.match(r"[a-z]+:", target):
                found.append((page, target))
    return found


def commands() -> list[tuple[Path, list[str]]]:
    """Each command of the pages' shell blocks as words (comments, prompts and VAR=value prefixes dropped)."""
    found = []
    for page in PAGES:
        for block in SHELL_BLOCK.findall(page.read_text()):
            for line in block.splitlines():
                line = line.split(" #")[0].strip().removeprefix("$ ")
                if not line or line.startswith("#"):
                    continue
                for command in re.split(r"\s*(?:&&|\|\||;)\s*", line.rstrip("\\").strip()):
                    words = shlex.split(command)
                    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
                        words = words[1:]
                    if words:
                        found.append((page, words))
    return found


def test_every_link_between_the_pages_resolves():
    problems = []
    for page, target in links():
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            problems.append(f"{page.name}: {target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in _headings(resolved):
            problems.append(f"{page.name}: {target}: no heading #{anchor}")
    assert problems == []


def test_the_pages_show_commands():
    programs = {program(words) for _, words in commands()}
    assert {"james-consistency", "make"} <= programs


@pytest.mark.parametrize(
    ("page", "words"),
    [item for item in commands() if program(item[1]) == "james-consistency"],
    ids=lambda value: value.name if isinstance(value, Path) else " ".join(value)[:60],
)
def test_every_james_consistency_command_shown_is_accepted_by_the_cli(page, words):
    from james_consistency.cli.main import build_parser

    try:
        build_parser().parse_args(words[1:])
    except SystemExit as refused:
        if refused.code:  # --help and --version exit 0
            pytest.fail(f"{page.name}: `{' '.join(words)}` is refused by the command line (exit {refused.code})")


def test_every_make_target_shown_is_in_the_makefile():
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    missing = [
        f"{page.name}: make {target}"
        for page, words in commands()
        if program(words) == "make"
        for target in words[1:]
        if not target.startswith("-") and not re.search(rf"^{re.escape(target)}:", makefile, re.M)
    ]
    assert missing == []


def test_every_airflow_command_shown_is_one_airflow_has():
    shown = {tuple(words[1:3]) for _, words in commands() if program(words) == "airflow"}
    refused = []
    for sub in sorted(shown):
        sub = tuple(word for word in sub if not word.startswith("-"))
        done = subprocess.run(["airflow", *sub, "--help"], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            refused.append(f"airflow {' '.join(sub)}: {done.stderr.strip().splitlines()[-1:]}")
    assert refused == []


def test_only_known_programs_are_left_unchecked():
    checked = {"james-consistency", "make", "airflow", *NOT_OURS}
    unknown = sorted({f"{page.name}: {words[0]}" for page, words in commands() if program(words) not in checked})
    assert unknown == [], "check these commands in tests/unit/test_docs.py, or list them as not ours"
