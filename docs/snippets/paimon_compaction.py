"""Compact a Paimon primary-key table: plan -> execute -> commit, then read the COMPACT snapshot back.

Runs on a copy of a Java-written golden table (../shared/fixtures/paimon-tables, beside the checkout), taken back to
snapshot 5 so that its buckets have something to compact.
"""

import os
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

from lake_orchestration.paimon.services.compaction import (
    commit_compaction,
    execute_compaction,
    plan_compaction,
    run_compaction,
)
from lake_orchestration.paimon.table import PaimonTable

repo = Path(__file__).resolve().parents[2]
shared = Path(os.environ.get("LAKE_ORCH_SHARED", repo.parent / "shared"))
archive = shared / "fixtures" / "paimon-tables" / "pk_global_index_golden.tar.gz"
if not archive.is_file():
    print(f"no golden Paimon tables at {archive}: nothing to show")
    sys.exit(0)
dest = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
with tarfile.open(archive) as tar:
    tar.extractall(dest, filter="data")
path = dest / "default.db" / "test_pk_full_text_golden"
for later in (6, 7, 8):  # back to snapshot 5: three sorted runs in bucket 0
    (path / "snapshot" / f"snapshot-{later}").unlink()
(path / "snapshot" / "LATEST").write_text("5")
pristine = dest / "pristine"
shutil.copytree(path, pristine)

# --8<-- [start:steps]
table = PaimonTable.open(str(path))

plan = plan_compaction(table)  # per bucket: the files to compact and the output level (full=True: all runs)
for unit in plan.buckets:
    print("bucket", unit.bucket, [(f.file_name[:13], f.level) for f in unit.files], "-> level", unit.output_level)

execution = execute_compaction(plan, storage=table.storage)  # writes data files only (engine=None: in process)
for result in execution.results:
    print("upgraded", result.upgraded, "rewritten", result.rewritten, "new files", list(result.written))

commit = commit_compaction(table, execution)  # snapshot-6, commitKind COMPACT
assert commit is not None
print(commit.to_json_obj())
for entry in table.delta_entries(commit.snapshot):
    print("  ", entry.kind.name, entry.file.file_name[:13], "level", entry.file.level, entry.file.file_source.name)
# --8<-- [end:steps]

# --8<-- [start:service]
table = PaimonTable.open(str(pristine))
result = run_compaction(table, full=True)  # plan, execute, commit; re-plans after a commit conflict
print(result.to_json_obj()["commit"], "re-plans:", result.replans)
# --8<-- [end:service]
