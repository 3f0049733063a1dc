"""A fleet: four tables found under a warehouse prefix, their health, and one run of their due services."""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.write import WriteOptions, write_table

scratch = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
warehouse = scratch / "warehouse"
trips = generate_trips(40, partitions=2, seed=1)
for rel, table_type, upserts in [
    ("rides/trips_mor", TableType.MERGE_ON_READ, 5),  # 6 deltacommits: past the compaction trigger (5)
    ("rides/trips_cow", TableType.COPY_ON_WRITE, 4),  # 5 commits, 2 retained: old file slices to clean
    ("sales/orders", TableType.MERGE_ON_READ, 1),
    ("sales/archive/payments", TableType.COPY_ON_WRITE, 0),
]:
    options = WriteOptions(table_name=rel.split("/")[-1], table_type=table_type, record_key_fields=("uuid",),
                           partition_fields=("city",), precombine_field="ts")
    write_table(str(warehouse / rel), trips, operation="bulk_insert", options=options)
    for i in range(upserts):
        write_table(str(warehouse / rel), generate_updates(trips, fraction=0.5, seed=i), operation="upsert",
                    options=options)

# --8<-- [start:config]
config = scratch / "fleet.yaml"
config.write_text(f"""
defaults:
  clean_options: {{hoodie.cleaner.commits.retained: 2}}
  archive_options: {{hoodie.keep.min.commits: 3, hoodie.keep.max.commits: 4}}
  policy: {{max_log_files_per_slice: 4, max_cleaner_lag_commits: 4}}
tables:
  - name: trips                       # listed: its own name and weight; not discovered again
    base_path: {warehouse}/rides/trips_mor
    policy: {{weight: 5}}
discover:
  - prefix: {warehouse}
    exclude: ["sales_archive_*"]      # globs on the discovered name or the path under the prefix
""")
# --8<-- [end:config]


def lake_orch(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "lake_orchestration.cli.app", *args]
    return subprocess.run(cmd, capture_output=True, text=True)


status = lake_orch("fleet", "status", "--config", str(config))
print(status.stdout)
assert status.returncode == 2  # a table breaches its policy
health = json.loads(lake_orch("fleet", "status", "--config", str(config), "--json").stdout)
rows = {r["name"]: r for r in health["tables"]}
assert sorted(rows) == ["rides_trips_cow", "sales_orders", "trips"]
assert rows["trips"]["breaches"] == ["max_log_files_per_slice 5 > 4", "cleaner_lag_commits 6 > 4"]

dry = lake_orch("fleet", "run", "--config", str(config), "--dry-run")
print(dry.stdout)
run = lake_orch("fleet", "run", "--config", str(config), "--services", "compaction,clean,archive")
print(run.stdout)
assert run.returncode == 0
done = [line.split()[:3] for line in run.stdout.splitlines()[2:] if line.strip() and "service run(s)" not in line]
# trips first: 6 deltacommits / trigger 5 x weight 5 = 6 > 5 commits since a clean / hoodie.clean.max.commits 1
assert [d[:2] for d in done] == [["trips", "compaction"], ["trips", "archive"],
                                 ["rides_trips_cow", "clean"], ["rides_trips_cow", "archive"]], done
assert {d[2] for d in done} == {"done"}
assert "Nothing due on any table" in lake_orch("fleet", "run", "--config", str(config)).stdout
