"""docs/reference/cli.md (written by hand) against the CLI's real command tree (click's, what ``--help`` prints), in
both directions, so the page cannot drift from the CLI again:

* every command a section heading names exists, and every leaf command has a section;
* every option a section names in its heading or its option table exists on the section's commands, with the same
  choices (``--engine [spark|local]``); every other ``--option`` quoted anywhere on the page exists on some command;
* every option of every command is documented in its section (the options every table command shares —
  ``--storage-option``, ``--storage-options-file``, ``--option-passthrough`` — once, in the page's preamble);
* every ``lake-orch ...`` line of the page's and the README's bash blocks names a command with those options.

Seconds: it reads two Markdown files and walks the click tree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import click
import pytest

from lake_orchestration.cli.app import cli

ROOT = Path(__file__).resolve().parents[2]
CLI_MD = ROOT / "docs" / "reference" / "cli.md"
README = ROOT / "README.md"

SHARED = {"--storage-option", "--storage-options-file", "--option-passthrough", "--help"}
"""Options documented once for every command, in the page's preamble (they must be documented there)."""

OPTION = re.compile(r"(?<![\w-])(--?[a-zA-Z][\w-]*)")


def leaf_commands(group: click.Group = cli, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], click.Command]:
    out: dict[tuple[str, ...], click.Command] = {}
    for name, c in group.commands.items():
        if isinstance(c, click.Group):
            out.update(leaf_commands(c, (*prefix, name)))
        else:
            out[(*prefix, name)] = c
    return out


LEAVES = leaf_commands()


def options_of(cmd: click.Command) -> dict[str, click.Parameter]:
    return {
        o: p for p in cmd.params for o in (*getattr(p, "opts", ()), *getattr(p, "secondary_opts", ())) if o[0] == "-"
    }


def global_options() -> set[str]:
    return {*options_of(cli), "--help"}


@dataclass
class Section:
    heading: str
    body: str
    commands: list[tuple[str, ...]] = field(default_factory=list)
    heading_spans: list[str] = field(default_factory=list)


def _expand(words: list[str]) -> list[tuple[str, ...]]:
    """``savepoint create|delete|show`` -> the three command paths (``|`` alternatives expanded, word by word)."""
    paths: list[tuple[str, ...]] = [()]
    for w in words:
        paths = [(*p, alt) for p in paths for alt in w.split("|")]
    return paths


def _commands_of_span(span: str) -> list[tuple[str, ...]]:
    """The command paths a heading span (``compaction run PATH [OPTIONS]``) names: its leading lower-case words."""
    words: list[str] = []
    for w in span.split():
        if not re.fullmatch(r"[a-z][a-z-]*(\|[a-z][a-z-]*)*", w):
            break
        words.append(w)
    return _expand(words)


def sections() -> tuple[str, list[Section]]:
    """The preamble (before the first ``## ``) and one :class:`Section` per ``## `` heading."""
    text = CLI_MD.read_text()
    parts = re.split(r"^## (.*)$", text, flags=re.M)
    preamble, rest = parts[0], parts[1:]
    out = []
    for heading, body in zip(rest[::2], rest[1::2], strict=True):
        spans = re.findall(r"`([^`]+)`", heading)
        out.append(
            Section(
                heading=heading,
                body=body,
                commands=[c for s in spans for c in _commands_of_span(s)],
                heading_spans=spans,
            )
        )
    return preamble, out


PREAMBLE, SECTIONS = sections()


def _code_spans(text: str) -> list[str]:
    """Inline code spans and fenced code blocks' lines of ``text``."""
    fenced = re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S)
    inline = re.findall(r"`([^`]+)`", re.sub(r"```[a-z]*\n.*?```", "", text, flags=re.S))
    return [span.replace("\\|", "|") for span in (*inline, *fenced)]


def _table_option_cells(body: str) -> list[str]:
    """The first cells of the tables' rows: an option (``| `--seq [FIFO\\|LIFO]` |``, ``| `-o`, `--output FILE` |``)
    or a command with its options (``| `paimon compaction run PATH [--full]` |``)."""
    cells = re.findall(r"^\| (`[^|]*?(?:\\\|[^|]*?)*`) \|", body, flags=re.M)
    return [span.replace("\\|", "|") for cell in cells for span in re.findall(r"`([^`]+)`", cell)]


def _documented_choices(text: str) -> list[tuple[str, list[str]]]:
    """``--engine [spark|local]`` / ``--engine spark|local`` / ``--seq FIFO|LIFO`` -> (option, values)."""
    found = re.findall(r"(--[a-z][\w-]*)[\s=]\[?([A-Za-z_]+(?:\|[A-Za-z_]+)+)\]?", text)
    return [(opt, values.split("|")) for opt, values in found]


def _section_commands(section: Section) -> list[tuple[str, ...]]:
    return [c for c in section.commands if c in LEAVES]


def test_every_heading_names_real_commands_and_every_command_has_a_section() -> None:
    unknown = [(s.heading, c) for s in SECTIONS for c in s.commands if c not in LEAVES]
    assert not unknown, f"docs/reference/cli.md: headings name commands the CLI does not have: {unknown}"
    covered = {c for s in SECTIONS for c in s.commands}
    missing = [" ".join(c) for c in LEAVES if c not in covered]
    assert not missing, f"docs/reference/cli.md has no '## `...`' section for {missing}"


@pytest.mark.parametrize("section", [s for s in SECTIONS if s.commands], ids=lambda s: " / ".join(s.heading_spans))
def test_section_options_exist_on_its_commands_with_their_choices(section: Section) -> None:
    cmds = [LEAVES[c] for c in _section_commands(section)]
    known = {o: p for cmd in cmds for o, p in options_of(cmd).items()} | {o: None for o in global_options()}
    claimed = [o for span in section.heading_spans for o in OPTION.findall(span)]
    claimed += [o for cell in _table_option_cells(section.body) for o in OPTION.findall(cell)]
    wrong = sorted({o for o in claimed if o not in known})
    assert not wrong, (
        f"docs/reference/cli.md section {section.heading!r}: {wrong} are not options of "
        f"{[' '.join(c) for c in section.commands]} (they have {sorted(known)})"
    )
    for opt, values in _documented_choices(" ".join(_code_spans(section.heading + section.body))):
        param = known.get(opt)
        if not isinstance(param, click.Option) or not isinstance(param.type, click.Choice):
            continue
        real = [str(c) for c in param.type.choices]
        fold = (lambda v: v.lower()) if not param.type.case_sensitive else (lambda v: v)
        assert sorted(map(fold, values)) == sorted(map(fold, real)), (
            f"docs/reference/cli.md section {section.heading!r}: {opt} documented as {'|'.join(values)}, "
            f"the CLI takes {'|'.join(real)}" + (" (case-insensitive)" if not param.type.case_sensitive else "")
        )


@pytest.mark.parametrize("path", sorted(LEAVES), ids=" ".join)
def test_every_option_of_a_command_is_documented_in_its_section(path: tuple[str, ...]) -> None:
    mine = [s for s in SECTIONS if path in s.commands]
    assert mine, f"docs/reference/cli.md has no section for {' '.join(path)}"
    text = " ".join(s.heading + s.body for s in mine)
    quoted = {o for span in _code_spans(text) for o in OPTION.findall(span)}
    undocumented = sorted(o for o in options_of(LEAVES[path]) if o not in quoted and o not in SHARED and o != "-o")
    assert not undocumented, (
        f"docs/reference/cli.md: 'lake-orch {' '.join(path)}' has options its section never names: {undocumented}"
    )


def test_shared_options_are_documented_in_the_preamble() -> None:
    quoted = {o for span in _code_spans(PREAMBLE) for o in OPTION.findall(span)}
    assert SHARED - {"--help"} <= quoted, f"docs/reference/cli.md's preamble does not name {SHARED - quoted}"
    assert global_options() <= quoted, f"docs/reference/cli.md's preamble does not name {global_options() - quoted}"


def test_every_option_quoted_on_the_page_exists_on_some_command() -> None:
    every = {o for cmd in LEAVES.values() for o in options_of(cmd)} | global_options()
    quoted = {o for span in _code_spans(CLI_MD.read_text()) for o in OPTION.findall(span) if o.startswith("--")}
    # quoted shell lines may hold other tools' flags; only lines that run lake-orch are checked by the next test
    quoted = {o for o in quoted if not o.startswith(("--conf", "--packages"))}
    unknown = sorted(quoted - every)
    assert not unknown, f"docs/reference/cli.md quotes options no lake-orch command has: {unknown}"


def _invocations(text: str) -> list[list[str]]:
    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            words = line.partition("#")[0].split()
            if words[:1] == ["lake-orch"]:
                out.append(words[1:])
    return out


INVOCATIONS = [("cli.md", a) for a in _invocations(CLI_MD.read_text())] + [
    ("README.md", a) for a in _invocations(README.read_text())
]


@pytest.mark.parametrize("where,args", INVOCATIONS, ids=[f"{w}: {' '.join(a[:3])}" for w, a in INVOCATIONS])
def test_quoted_lake_orch_lines_name_a_command_with_those_options(where: str, args: list[str]) -> None:
    words = tuple(a for a in args if not a.startswith("-"))
    path = next((p for n in range(len(words), 0, -1) if (p := words[:n]) in LEAVES), None)
    assert path is not None, f"{where}: 'lake-orch {' '.join(args)}' names no command"
    opts = options_of(LEAVES[path]) | {o: None for o in global_options()}
    unknown = [a.split("=")[0] for a in args if a.startswith("-") and a.split("=")[0] not in opts]
    assert not unknown, f"{where}: 'lake-orch {' '.join(path)}' has no option(s) {unknown}"
