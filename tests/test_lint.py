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


SERVICES = ROOT / "lake_orchestration" / "hudi" / "services"
#: What ``hudi/services/rollback/`` may import from the other services: only the services' shared attempt module.
ROLLBACK_MAY_IMPORT = {"rollback", "attempt"}


def _imported_modules(path: Path, package: str) -> list[tuple[int, str]]:
    """``(line, module)`` of every import in ``path`` (function-level ones too; relative ones resolved against
    ``package``, the dotted package the file is in). ``from a import b`` counts as ``a.b`` (``b`` may be a module)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            out += [(node.lineno, f"{base}.{a.name}") for a in node.names]
    return out


def _rollback_imports_of_services(root: Path, package: str) -> list[str]:
    """``file:line -> module`` for each import from ``root`` (the rollback package) of another service package."""
    prefix = "lake_orchestration.hudi.services."
    bad = []
    for p in sorted(root.rglob("*.py")):
        for line, mod in _imported_modules(p, package):
            if mod.startswith("lake_orchestration.paimon.services") or (
                mod.startswith(prefix) and mod[len(prefix) :].split(".")[0] not in ROLLBACK_MAY_IMPORT
            ):
                bad.append(f"{p.name}:{line} -> {mod}")
    return bad


def test_rollback_package_imports_no_other_service() -> None:
    """``rollback/`` owns every rollback and the services depend on it one way only (issue 24): it imports no
    compaction, log compaction, clean, archive, bootstrap or savepoint module (only the shared ``attempt``)."""
    bad = _rollback_imports_of_services(SERVICES / "rollback", "lake_orchestration.hudi.services.rollback")
    assert not bad, f"hudi/services/rollback/ imports another service (services depend on rollback/, not back): {bad}"


def test_only_the_rollback_package_has_rollback_modules() -> None:
    """A module named ``rollback`` is a rollback and lives in ``hudi/services/rollback/``; a service's recovery of a
    crashed run that is not a rollback is named for what it is (``recovery``, ``delete``, ``orphans``)."""
    pkg = ROOT / "lake_orchestration"
    stray = sorted(str(p.relative_to(ROOT)) for p in pkg.rglob("rollback.py"))
    assert not stray, f"modules named rollback.py outside hudi/services/rollback/: {stray}"


def test_rollback_import_scan_finds_service_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "rollback"
    pkg.mkdir()
    (pkg / "ok.py").write_text(
        "from lake_orchestration.hudi.services.rollback.config import RollbackConfig\n"
        "from lake_orchestration.hudi.services.attempt import InstantAttempt\n"
        "from . import planner\n"
    )
    (pkg / "bad.py").write_text(
        "from lake_orchestration.hudi.services.compaction import rollback\n"
        "def f():\n"
        "    from ..clean.config import CleanConfig\n"
        "    import lake_orchestration.hudi.services.log_compaction.executor\n"
    )
    found = _rollback_imports_of_services(pkg, "lake_orchestration.hudi.services.rollback")
    assert found == [
        "bad.py:1 -> lake_orchestration.hudi.services.compaction.rollback",
        "bad.py:3 -> lake_orchestration.hudi.services.clean.config.CleanConfig",
        "bad.py:4 -> lake_orchestration.hudi.services.log_compaction.executor",
    ], found
