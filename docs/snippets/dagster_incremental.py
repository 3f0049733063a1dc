"""Changes downstream in Dagster: a sensor requests the downstream asset on new commits; each change arrives once."""

import sys
import tempfile
from pathlib import Path

import dagster as dg
import pyarrow.parquet as pq

from lake_orchestration.dagster import HudiChanges, HudiIncrementalIOManager, hudi_new_commits_sensor
from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.compaction import run_compaction, schedule_compaction
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.write import WriteOptions, write_table

root = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
path = str(root / "trips")
out_dir = root / "trip_changes"
options = WriteOptions(
    table_name="trips", table_type=TableType.MERGE_ON_READ, record_key_fields=("uuid",), precombine_field="ts"
)
trips = generate_trips(50, seed=1)
write_table(path, trips, operation="bulk_insert", options=options)  # the table's writers run outside Dagster

# --8<-- [start:defs]
hudi_trips = dg.AssetSpec(["hudi", "trips"], description="The Hudi table, written by its own pipelines")


@dg.asset(ins={"changes": dg.AssetIn(key=["hudi", "trips"], input_manager_key="hudi_changes")})
def trip_changes(changes: HudiChanges) -> dg.MaterializeResult:
    """Appends the rows changed since the previous run to a parquet folder, one file per checkpoint."""
    if changes.num_rows:
        out_dir.mkdir(exist_ok=True)
        # named by the checkpoint: a re-run after a failure rewrites the same file, never a second copy
        pq.write_table(changes.table, out_dir / f"{changes.checkpoint}.parquet")
    return dg.MaterializeResult(metadata={"rows": changes.num_rows, "snapshot": changes.snapshot})


defs = dg.Definitions(
    assets=[hudi_trips, trip_changes],
    sensors=[hudi_new_commits_sensor(path, [trip_changes.key])],  # named trips__new_commits_sensor
    resources={"hudi_changes": HudiIncrementalIOManager(base_path=path)},
)
# --8<-- [end:defs]

# --8<-- [start:run]
# What the Dagster daemon does: evaluate the sensor, launch the runs it requests.
instance = dg.DagsterInstance.ephemeral()
sensor = defs.resolve_sensor_def("trips__new_commits_sensor")
asset_job = defs.resolve_implicit_global_asset_job_def()
cursor = None


def tick() -> int:
    global cursor
    result = sensor.evaluate_tick(dg.build_sensor_context(instance=instance, cursor=cursor, definitions=defs))
    cursor = result.cursor or cursor
    for request in result.run_requests:
        job = asset_job.get_subset(asset_selection=set(request.asset_selection))
        assert job.execute_in_process(instance=instance, tags=request.tags).success
    return len(result.run_requests)


assert tick() == 1  # the first run: a snapshot, 50 rows
write_table(path, generate_updates(trips, fraction=0.2, seed=2), operation="upsert", options=options)
assert tick() == 1  # the 10 updated rows
schedule_compaction(HudiTable(path), force=True)
run_compaction(HudiTable(path))
assert tick() == 0  # a compaction changes no row: no run
write_table(path, generate_trips(5, seed=3), operation="upsert", options=options)
assert tick() == 1  # the 5 new trips
# --8<-- [end:run]

files = sorted(out_dir.glob("*.parquet"))
print([(f.stem, pq.read_metadata(f).num_rows) for f in files], "cursor", cursor)
assert [pq.read_metadata(f).num_rows for f in files] == [50, 10, 5]
event = instance.get_latest_materialization_event(trip_changes.key)
checkpoint = event.asset_materialization.metadata["hudi/incremental_checkpoint/hudi/trips"].value
assert checkpoint == files[-1].stem  # the materialization records where the next run begins
