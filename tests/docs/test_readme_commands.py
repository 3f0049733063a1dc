"""The ``lake-orch`` commands the README and the CLI reference document exist: a renamed or removed command (or
option) fails here, not in a user's first hour."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from lake_orchestration.cli.app import cli

ROOT = Path(__file__).resolve().parents[2]


def _bash_blocks(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", text, flags=re.DOTALL)


def _readme_invocations() -> list[list[str]]:
    """The argument lists of every ``lake-orch ...`` line of the README's bash blocks (continuations joined, the
    comment dropped), and of ``then: <command> PATH`` in their comments."""
    out: list[list[str]] = []
    for block in _bash_blocks((ROOT / "README.md").read_text()):
        for line in block.replace("\\\n", " ").splitlines():
            code, _, comment = line.partition("#")
            words = code.split()
            if words[:1] == ["lake-orch"]:
                out.append(words[1:])
            for then in re.findall(r"then:? ([a-z][a-z -]*?) PATH", comment):
                out.append([*then.split(), "PATH"])
    return out


def _resolve(args: list[str]) -> tuple[list[str], click.Command]:
    """The command words at the start of ``args`` and the command they name."""
    cmd: click.Command = cli
    words: list[str] = []
    for a in args:
        if not isinstance(cmd, click.Group) or a not in cmd.commands:
            break
        cmd = cmd.commands[a]
        words.append(a)
    return words, cmd


def _options(cmd: click.Command) -> set[str]:
    return {o for p in cmd.params for o in (*getattr(p, "opts", ()), *getattr(p, "secondary_opts", ()))}


INVOCATIONS = _readme_invocations()


def test_readme_documents_lake_orch_commands() -> None:
    assert len(INVOCATIONS) >= 15, INVOCATIONS  # the parse found the 'Using it' block


@pytest.mark.parametrize("args", INVOCATIONS, ids=[" ".join(a[:3]) for a in INVOCATIONS])
def test_readme_command_exists_with_its_options(args: list[str]) -> None:
    words, cmd = _resolve(args)
    assert words and not isinstance(cmd, click.Group), f"README: 'lake-orch {' '.join(args)}' names no command"
    r = CliRunner().invoke(cli, [*words, "--help"])
    assert r.exit_code == 0, r.output
    unknown = [a.split("=")[0] for a in args if a.startswith("-") and a.split("=")[0] not in _options(cmd) | {"-o"}]
    assert not unknown, f"README: 'lake-orch {' '.join(words)}' has no option(s) {unknown}"


def test_cli_reference_has_a_section_per_command() -> None:
    """docs/reference/cli.md is written by hand: each runnable command needs a '## `...`' heading naming it."""
    text = (ROOT / "docs/reference/cli.md").read_text()
    headings = [h for line in re.findall(r"^## (.*)$", text, flags=re.M) for h in re.findall(r"`([^`]+)`", line)]

    def leaves(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
        out: list[tuple[str, ...]] = []
        for name, c in group.commands.items():
            out.extend(leaves(c, (*prefix, name)) if isinstance(c, click.Group) else [(*prefix, name)])
        return out

    def documented(words: tuple[str, ...]) -> bool:
        *group, leaf = words
        for h in headings:
            first = h.split(" PATH")[0].split(" OUTPUT")[0].split(" [")[0].split()
            # a command without a path argument: its words end at the first option (`fleet run --config FILE`)
            first = first[: next((i for i, w in enumerate(first) if w.startswith("-")), len(first))]
            if first[: len(group)] == group and leaf in "".join(first[len(group) :]).split("|"):
                return True
            if list(words) == first:
                return True
        return False

    missing = [" ".join(w) for w in leaves(cli) if not documented(w)]
    assert not missing, f"docs/reference/cli.md documents no {missing}"
