"""docs/interop.md is the interop matrix as the last full run of tests/java produced it: it must list exactly the
cells (tests marked ``interop``) the suite has, so a new or renamed cell cannot be missing from the page."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DOC = REPO_ROOT / "docs" / "interop.md"


def test_interop_doc_lists_every_cell() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--collect-only",
            "-q",
            "-m",
            "interop",
            "tests/java",
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, f"collecting tests/java failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    cells = {line.strip() for line in proc.stdout.splitlines() if "::" in line}
    assert cells, "no interop cells collected from tests/java"
    documented = set(re.findall(r"`(tests/java/[^`]+::[^`]+)`", DOC.read_text()))
    regenerate = "regenerate it: LAKE_ORCH_INTEROP_DOC=docs/interop.md ./scripts/test.sh tests/java"
    assert not cells - documented, f"cells missing from {DOC}: {sorted(cells - documented)}; {regenerate}"
    assert not documented - cells, f"cells in {DOC} that the suite no longer has: {sorted(documented - cells)}"
    assert "| failed |" not in DOC.read_text(), f"{DOC} records failed cells; {regenerate}"
