"""Every `lake-orch` command pays the CLI's imports: pandas (~0.2 s) is imported only where a merge builds its key
lookup, never at start-up (docs/performance.md, CLI start-up)."""

from __future__ import annotations

import subprocess
import sys


def test_importing_the_cli_does_not_import_pandas() -> None:
    code = (
        "import sys, lake_orchestration.cli.app; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pandas')[:3])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]", f"importing the CLI imported pandas modules: {out}"
