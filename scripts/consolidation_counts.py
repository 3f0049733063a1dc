"""The "Done when" counts of issue 24 (one claim-and-commit protocol, one rollback package, one engine seam, the
same verbs) on the current tree. Run from anywhere: ``python scripts/consolidation_counts.py [CHECKOUT]``.

Each figure is printed with the rule it counts and the sites found, so a reviewer can check it by eye:

1. attempt-token sites: source lines writing an attempt token (``f"...{uuid.uuid4().hex}\\n"``), the issue's grep;
2. completed-instant writes outside the commit path: calls of ``transition_to_completed`` (the one method that
   writes a completed instant file) outside ``hudi/table/commit.py`` (``complete_instant``, the ambiguous-write
   rule) and its definition; the metadata table's own instants (written inside the data table's commit path, by
   ``hudi/metadata``) are listed apart;
3. ``engine is None`` outside ``engines/``;
4. imports from ``hudi/services/rollback/`` of ``hudi/services/compaction`` (the wrong direction; the right one,
   compaction importing rollback, is counted too);
5. ``instant: str`` in service signatures: parameters of functions in ``hudi/services`` and ``paimon/services``
   whose name holds ``instant`` annotated exactly ``str`` (``InstantTime | str`` is the typed input), and, apart,
   dataclass fields so annotated (results print the instant as text).
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1])
PKG = ROOT / "lake_orchestration"


def rel(p: Path) -> str:
    return str(p.relative_to(ROOT))


def sources(under: Path) -> list[Path]:
    return sorted(p for p in under.rglob("*.py") if "__pycache__" not in p.parts)


def grep(pattern: str, files: list[Path]) -> list[str]:
    rx = re.compile(pattern)
    return [f"{rel(p)}:{i}" for p in files for i, line in enumerate(p.read_text().splitlines(), 1) if rx.search(line)]


def show(title: str, sites: list[str], limit: int = 40) -> None:
    print(f"{title}: {len(sites)}")
    for s in sites[:limit]:
        print(f"    {s}")
    if len(sites) > limit:
        print(f"    ... {len(sites) - limit} more")


def main() -> None:
    files = sources(PKG)
    show("1. attempt-token sites (uuid.uuid4().hex}\\n)", grep(r"uuid\.uuid4\(\)\.hex\}\\n", files))

    writes = grep(r"\.transition_to_completed\(", files)
    data = [
        s
        for s in writes
        if not s.startswith(("lake_orchestration/hudi/table/commit.py", "lake_orchestration/hudi/metadata/"))
    ]
    mdt = [s for s in writes if s.startswith("lake_orchestration/hudi/metadata/")]
    via = grep(r"(?<!def )\bcomplete_instant\(", files)
    show("2. completed-instant writes of a data table outside the commit path", data)
    show("   (metadata table's own instants, written inside the data table's commit path)", mdt)
    show("   (calls of complete_instant, the one commit path)", via)

    show(
        "3. 'engine is None' outside engines/",
        [s for s in grep(r"\bengine is None\b", files) if not s.startswith("lake_orchestration/engines/")],
    )

    rb = sources(PKG / "hudi" / "services" / "rollback")
    comp = sources(PKG / "hudi" / "services" / "compaction")
    show(
        "4. imports rollback/ -> compaction/ (the wrong direction)",
        grep(r"hudi\.services\.compaction|from \.\.compaction", rb),
    )
    show(
        "   (imports compaction/ -> rollback/, the right one)",
        grep(r"hudi\.services\.rollback|from \.\.rollback", comp),
    )

    params: list[str] = []
    fields: list[str] = []
    for p in sources(PKG / "hudi" / "services") + sources(PKG / "paimon" / "services"):
        tree = ast.parse(p.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                a = node.args
                for arg in a.posonlyargs + a.args + a.kwonlyargs:
                    if "instant" in arg.arg and arg.annotation is not None and ast.unparse(arg.annotation) == "str":
                        params.append(f"{rel(p)}:{arg.lineno} {node.name}({arg.arg}: str)")
            elif isinstance(node, ast.ClassDef):
                for st in node.body:
                    if (
                        isinstance(st, ast.AnnAssign)
                        and isinstance(st.target, ast.Name)
                        and "instant" in st.target.id
                        and ast.unparse(st.annotation) == "str"
                    ):
                        fields.append(f"{rel(p)}:{st.lineno} {node.name}.{st.target.id}: str")
    show("5. 'instant: str' parameters in service signatures (hudi/services, paimon/services)", params)
    show("   (fields annotated 'instant...: str' in the services' classes: results, plans)", fields)
    literal = grep(r"\binstant: str\b", sources(PKG / "hudi" / "services") + sources(PKG / "paimon" / "services"))
    print(f"   (the issue's literal count, 'instant: str' anywhere in the services: {len(literal)})")


if __name__ == "__main__":
    main()
