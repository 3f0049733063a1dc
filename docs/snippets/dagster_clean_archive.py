"""The clean and archive jobs: dry runs by default, then for real; the snapshot does not change."""

import sys
import tempfile
from pathlib import Path

from lake_orchestration.dagster import HudiTableConfig, build_hudi_definitions
from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.compaction import CompactionConfig, run_compaction
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.snapshot import read_snapshot_table
from lake_orchestration.hudi.write import WriteOptions, write_table

path = str(Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()) / "trips")
options = WriteOptions(table_name="trips", table_type=TableType.MERGE_ON_READ, record_key_fields=("uuid",),
                       partition_fields=("city",), precombine_field="ts")
trips = generate_trips(500, partitions=2, seed=1)
write_table(path, trips, operation="bulk_insert", options=options)
for n in range(8):
    write_table(path, generate_updates(trips, fraction=0.1, seed=n), operation="upsert", options=options)
    if n % 2:
        run_compaction(HudiTable(path), schedule=True, config=CompactionConfig(max_delta_commits=1))
rows = read_snapshot_table(HudiTable(path)).num_rows

# --8<-- [start:jobs]
table = HudiTableConfig(
    name="trips",
    base_path=path,
    engine="local",
    clean_options={"hoodie.cleaner.commits.retained": 2},
    archive_options={"hoodie.keep.min.commits": 3, "hoodie.keep.max.commits": 5, "hoodie.archive.merge.enable": True},
    clean_cron="0 * * * *",   # the schedules (stopped until you turn them on)
    archive_cron="30 * * * *",
)
defs = build_hudi_definitions(tables=[table])
clean, archive = defs.resolve_job_def("trips__clean"), defs.resolve_job_def("trips__archive")

assert clean.execute_in_process().success      # dry run: logs what it would delete, changes nothing
for job in (clean, archive):                    # for real: run config dry_run=false (or clean_dry_run=False)
    op = "trips__clean_plan_op" if job is clean else "trips__archive_op"
    assert job.execute_in_process(run_config={"ops": {op: {"config": {"dry_run": False}}}}).success
# --8<-- [end:jobs]

t = HudiTable(path)
assert read_snapshot_table(t).num_rows == rows
assert len(t.timeline.completed_commits()) <= 5
print("active commits after archive:", len(t.timeline.completed_commits()))
