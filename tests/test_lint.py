"""Static contracts: the layer rules (import-linter) and ruff on the package."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str) -> str:
    exe = Path(sys.executable).parent / name
    return str(exe) if exe.exists() else (shutil.which(name) or name)


def test_import_layers_contract_kept() -> None:
    proc = subprocess.run([_tool("lint-imports")], cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


def test_ruff_package_clean() -> None:
    proc = subprocess.run(
        [_tool("ruff"), "check", "lake_orchestration", "definitions", "benchmarks"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (module, class, function) or attribute docstrings: every
    string that is an expression statement on its own."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
    }


def _hoodie_literals(path: Path) -> list[str]:
    """``line: literal`` of each string literal in ``path`` that starts with ``hoodie.`` (an f-string by its first
    part), docstrings excepted."""
    tree = ast.parse(path.read_text(), filename=str(path))
    docs = _docstrings(tree)
    parts = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            first = node.values[0] if node.values else None
            text = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else ""
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) in docs or id(node) in parts:
                continue
            text = node.value
        else:
            continue
        if text.startswith("hoodie."):
            found.append(f"{node.lineno}: {text[:60]!r}")
    return found


def test_hoodie_keys_spelled_only_in_the_registry() -> None:
    """Every ``hoodie.*`` string lives in ``config/keys.py`` (STYLE.md §2): code refers to ``HoodieKey`` members
    (or the file-name constants there), so a key's default, doc and aliases cannot drift from its uses."""
    registry = ROOT / "lake_orchestration" / "config" / "keys.py"
    offenders = {
        str(p.relative_to(ROOT)): hits
        for p in sorted((ROOT / "lake_orchestration").rglob("*.py"))
        if p != registry and (hits := _hoodie_literals(p))
    }
    assert not offenders, f"raw 'hoodie.' literals outside config/keys.py (use HoodieKey.<MEMBER>.key): {offenders}"


def test_hoodie_literal_scan_skips_docstrings_and_finds_fstrings(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text(
        '"""Reads hoodie.table.type."""\n'
        "X = 1\n"
        '"""Attribute doc: hoodie.cleaner.policy."""\n'
        "def f(k):\n"
        '    """hoodie.keep.min.commits."""\n'
        '    a = "hoodie.table.name"\n'
        '    b = f"hoodie.{k}"\n'
        '    c = f"Invalid {k}: hoodie.x"\n'
        "    return a, b, c  # hoodie.comment\n"
    )
    assert _hoodie_literals(src) == ["6: 'hoodie.table.name'", "7: 'hoodie.'"]
