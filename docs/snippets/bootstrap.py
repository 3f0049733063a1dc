"""Bootstrap an existing parquet dataset into a Hudi table: the per-partition plan, a regex-mixed bootstrap
(METADATA_ONLY skeletons + a FULL_RECORD bulk insert), the snapshot read, an upsert, and a rollback after a crash."""

import hashlib
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from lake_orchestration.hudi.services.bootstrap import (
    BootstrapConfig,
    bootstrap,
    execute_metadata_only,
    plan_bootstrap,
    rollback_bootstrap,
)
from lake_orchestration.hudi.services.bootstrap.service import bootstrap_table_properties
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.snapshot import read_snapshot_table
from lake_orchestration.hudi.write import WriteOptions, write_table

root = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
source = root / "events_parquet"  # an existing dataset: hive-style folders, several files each
for day in ("2024-01-01", "2024-01-02", "2024-01-03"):
    (source / f"dt={day}").mkdir(parents=True)
    for n in range(2):
        ids = [f"{day}-{n}-{i}" for i in range(5)]
        pq.write_table(
            pa.table({"id": ids, "ts": [1, 2, 3, 4, 5], "amount": [1.5] * 5, "dt": [day] * 5}),
            source / f"dt={day}" / f"part-{n}.parquet",
        )
digest = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in source.rglob("*.parquet")}

# --8<-- [start:bootstrap]
config = BootstrapConfig.from_options(
    {
        "hoodie.bootstrap.base.path": str(source),
        "hoodie.table.name": "events",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "dt",
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        # the latest day is rewritten (FULL_RECORD), the older ones only get skeletons (METADATA_ONLY)
        "hoodie.bootstrap.mode.selector": "BootstrapRegexModeSelector",
        "hoodie.bootstrap.mode.selector.regex": "dt=2024-01-03",
        "hoodie.bootstrap.mode.selector.regex.mode": "FULL_RECORD",
    }
)
table_path = str(root / "events")
plan = bootstrap(table_path, config, dry_run=True).plan  # writes nothing
for p in plan.partitions:
    print(p.partition_path, p.mode.value, len(p.files), "files")
result = bootstrap(table_path, config)
print(
    result.metadata_only_instant,
    result.skeleton_files,
    "skeletons;",
    result.full_record_instant,
    result.full_record_rows,
    "rows rewritten",
)
# --8<-- [end:bootstrap]
assert (result.metadata_only_instant, result.full_record_instant) == ("00000000000001", "00000000000002")

# --8<-- [start:read]
table = HudiTable(table_path)
rows = read_snapshot_table(table)  # skeleton meta columns stitched with the source files' columns
assert rows.num_rows == 30 and rows.column_names[5:] == ["id", "ts", "amount", "dt"]
update = pa.table({"id": ["2024-01-01-0-0"], "ts": [9], "amount": [99.0], "dt": ["2024-01-01"]})
write_table(table_path, update, operation="upsert", options=WriteOptions())
after = read_snapshot_table(HudiTable(table_path)).to_pandas().set_index("id")
assert after.loc["2024-01-01-0-0", "amount"] == 99.0 and len(after) == 30
# --8<-- [end:read]
assert digest == {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in source.rglob("*.parquet")}

# --8<-- [start:rollback]
# A bootstrap killed after writing skeletons leaves 00000000000001 pending (readers ignore it): roll it back like a
# failed write, then bootstrap again.
crashed = str(root / "crashed")
half_plan = plan_bootstrap(crashed, config)
half = HudiTable.create(crashed, bootstrap_table_properties(half_plan, config))
execute_metadata_only(half, half_plan, config)  # ... and the process dies before the commit
rolled_back = rollback_bootstrap(half)  # the <R>.rollback instants
assert len(rolled_back) == 1 and not list(Path(crashed).rglob("*.parquet"))
bootstrap(crashed, config)
# --8<-- [end:rollback]
