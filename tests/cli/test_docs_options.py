"""Every `ladder` command and `--option` that README.md and docs/*.md name exists in the CLI.

Read from the Markdown: each command line in code (`ladder probe --student ... --k 8`) must resolve
to a command whose options hold every option it names; every other `--option` in code must be an
option of some command, but on the pages about other programs (the benchmarks, the sandbox), in a
bench/ script's command line and for the few options of other tools the docs name."""

from __future__ import annotations

import re

import pytest
import typer.main
from typer.core import TyperCommand, TyperGroup

from oracleladder.cli import app
from tests.helpers import REPO

ROOT = REPO
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# pages about other programs' options: the bench/ scripts, bubblewrap and unshare
OTHER_PROGRAMS = {"benchmarks.md", "sandbox.md"}
# options of other programs the other pages mention: vLLM's, uv's, pytest-xdist's and inspect_ai's (`inspect eval --model`)
FOREIGN = {"--served-model-name", "--resolution", "--dist", "--model"}
BENCH_LINE = re.compile(r"\bbench/\w+\.py\b")  # a bench/ script's command line, with that script's options

FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.DOTALL)
SPAN = re.compile(r"`([^`]+)`")
COMMAND_LINE = re.compile(r"(?:^|(?<=[\s/(]))ladder(?=\s)(.*)", re.DOTALL)
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
PLACEHOLDER = re.compile(r"[A-Z_]+")


def _code(text: str) -> list[str]:
    """The code of a page: each line of its fenced blocks (comments cut), and each inline span."""
    code = [line.split(" #")[0] for block in FENCE.findall(text) for line in block.splitlines()]
    return code + [span.replace("\\|", "|") for span in SPAN.findall(FENCE.sub("", text))]


def _options(command: TyperCommand | TyperGroup) -> set[str]:
    return {"--help"} | {name for p in command.params for name in (*p.opts, *p.secondary_opts) if name.startswith("--")}


CLI = typer.main.get_command(app)
EVERY_OPTION = set().union(*(_options(c) for c in (
    CLI, *CLI.commands.values(), *(s for c in CLI.commands.values() if isinstance(c, TyperGroup)
                                   for s in c.commands.values()))))


def _resolve(words: list[str]) -> list[TyperCommand | TyperGroup]:
    """The commands a command line names (`audit format|judge` names two); none for a placeholder."""
    words = [w for w in words if not w.startswith("-")][:2]  # the group's own options (--debug) aside
    if not words or PLACEHOLDER.fullmatch(words[0]):
        return []
    found = []
    for name in words[0].split("|"):
        assert name in CLI.commands, f"`ladder {name}`: no such command"
        command = CLI.commands[name]
        if isinstance(command, TyperGroup):
            subs = words[1].split("|") if len(words) > 1 and not PLACEHOLDER.fullmatch(words[1]) else []
            for sub in subs:
                assert sub in command.commands, f"`ladder {name} {sub}`: no such command"
            found += [command.commands[s] for s in subs] or [command]
        else:
            found.append(command)
    return found


def _named() -> list[tuple[str, str]]:
    return [(page.name, code) for page in PAGES for code in _code(page.read_text())]


@pytest.mark.parametrize("page, code", [(p, c) for p, c in _named() if COMMAND_LINE.search(c)])
def test_every_command_line_names_a_command_and_its_options(page: str, code: str) -> None:
    rest = COMMAND_LINE.search(code).group(1)
    commands = _resolve([w.strip("[]") for w in rest.split()])
    for option in OPTION.findall(rest):
        owners = commands or [None]
        assert option in _options(CLI) or all(option in (_options(c) if c else EVERY_OPTION) for c in owners), \
            f"{page}: `{code.strip()}` names {option}, which `ladder {' / '.join(c.name for c in commands)}` lacks"


def test_every_option_the_docs_name_exists() -> None:
    unknown = {(page, option) for page, code in _named() if page not in OTHER_PROGRAMS and not BENCH_LINE.search(code)
               for option in OPTION.findall(code) if option not in EVERY_OPTION | FOREIGN}
    assert not unknown


def test_the_check_reads_the_docs() -> None:
    """The parse finds the commands it is meant to check (a parse that found nothing would pass)."""
    lines = [c for _, c in _named() if COMMAND_LINE.search(c)]
    named = {w for c in lines for w in COMMAND_LINE.search(c).group(1).split()[:1]}
    assert {"import", "compile", "probe", "report", "view", "demo"} <= named
    with pytest.raises(AssertionError):
        _resolve(["no-such-command"])
