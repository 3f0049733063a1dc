"""The rollback job: roll back one pending write (or every stale one) from Dagster, with a dry run."""

import sys
import tempfile
from pathlib import Path

from lake_orchestration.dagster import HudiTableConfig, build_hudi_definitions
from lake_orchestration.datagen import generate_trips
from lake_orchestration.hudi.model.instant import Action, Instant, State
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.write import WriteOptions, write_table

path = str(Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()) / "trips")
write_table(
    path,
    generate_trips(50, seed=1),
    operation="bulk_insert",
    options=WriteOptions(table_name="trips", record_key_fields=("uuid",)),
)
table = HudiTable(path)
failed = table.create_requested(Instant(table.new_instant_time(), Action.DELTA_COMMIT, State.REQUESTED))

defs = build_hudi_definitions(tables=[HudiTableConfig(name="trips", base_path=path, engine="local")])
job = defs.resolve_job_def("trips__rollback")
# --8<-- [start:run]
for dry_run in (True, False):
    run_config = {"ops": {"trips__rollback_op": {"config": {"instant_time": str(failed.time), "dry_run": dry_run}}}}
    assert job.execute_in_process(run_config=run_config).success
# --8<-- [end:run]
assert HudiTable(path).timeline.get(str(failed.time)) is None
print("rolled back", failed.time)
