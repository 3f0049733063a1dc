"""Read a Paimon primary-key table: snapshots, live files by bucket and level, and what compaction would pick.

Runs against the Java-written golden tables in ../shared/fixtures/paimon-tables (beside the checkout).
"""

import os
import sys
import tarfile
import tempfile
from pathlib import Path

from lake_orchestration.paimon.services.compaction import pick_unit
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

# --8<-- [start:read]
table = PaimonTable.open(str(dest / "default.db" / "test_pk_full_text_golden"))
options = table.options()  # typed view over the schema's options
print("num-levels:", options.num_levels, "trigger:", options.num_sorted_runs_compaction_trigger)

for snapshot_id in range(table.earliest_snapshot_id() or 1, (table.latest_snapshot_id() or 0) + 1):
    snapshot = table.snapshot(snapshot_id)
    delta = [(e.kind.name, e.file.file_name[:13], e.file.level) for e in table.delta_entries(snapshot)]
    print(snapshot.id, snapshot.commit_kind.value, snapshot.total_record_count, delta)

    for bucket in table.buckets(snapshot):  # live files per (partition, bucket), by LSM level
        runs = [(run.level, [f.file_name[:13] for f in run.run.files]) for run in bucket.levels.level_sorted_runs()]
        unit = pick_unit(bucket.levels, options)  # what Java's universal compaction would compact next
        print("   runs:", runs, "next compaction:", unit and (len(unit.files), "files -> level", unit.output_level))
# --8<-- [end:read]
