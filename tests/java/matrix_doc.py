"""Render the interop cells recorded by tests/java/conftest.py as docs/interop.md."""

from __future__ import annotations

from collections import defaultdict

HEADER = """# Interoperability with Java Hudi

Java Hudi itself is the oracle: every cell below is one test in `tests/java/` that runs Java Hudi
(`hudi-spark3.5-bundle_2.12` from Maven Central on PySpark 3.5, out of process) against a table that our services
or writers changed, or runs our services on a table Java wrote. The page is regenerated from a test run:

```bash
LAKE_ORCH_INTEROP_DOC=docs/interop.md ./scripts/test.sh tests/java
```

How a cell reads: **Java writes** a history (insert, upsert, delete, an upsert with new keys; metadata table off)
→ **our service** → **Java reads** (snapshot, read-optimized, incremental) and must return the expected rows, an
independent model of the writes; Java's own timeline procedures (`show_commits`, `show_compaction`,
`show_archived_commits`, `show_savepoints`, `show_rollbacks`, ...) list what we wrote; then **Java writes again and
runs its own services** on top of ours, and our reader and hudi-rs must equal Java's read.

"""


def render(cells: list[dict[str, str]]) -> str:
    by_direction: dict[str, list[dict[str, str]]] = defaultdict(list)
    for cell in cells:
        by_direction[cell.get("direction", "")].append(cell)
    out = [HEADER]
    versions = sorted({c["version"] for c in cells})
    passed = sum(c["status"] == "passed" for c in cells)
    out.append(f"Last run: {passed} of {len(cells)} cells passed (Java Hudi {', '.join(versions)}).\n")
    for direction in sorted(by_direction):
        out.append(
            f"\n## {direction}\n\n| table | service | what Java checks | result | test |\n|---|---|---|---|---|\n"
        )
        for c in sorted(by_direction[direction], key=lambda c: (c.get("table", ""), c.get("service", ""))):
            name = c["test"].split("::", 1)[-1]
            path = c["test"].split("::", 1)[0]
            out.append(
                f"| {c.get('table', '')} | {c.get('service', '')} | {c.get('checks', '')} | {c['status']} | "
                f"`{path}::{name}` |\n"
            )
    return "".join(out)
