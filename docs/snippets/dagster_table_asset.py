"""The table asset: `hudi/<table>` records the table's health when materialized."""

import sys
import tempfile
from pathlib import Path

import dagster as dg

from lake_orchestration.dagster import HudiTableConfig, build_hudi_definitions
from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.health import table_health
from lake_orchestration.hudi.write import WriteOptions, write_table

path = str(Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()) / "trips")
options = WriteOptions(table_name="trips", record_key_fields=("uuid",), precombine_field="ts")
trips = generate_trips(50, seed=1)
write_table(path, trips, operation="bulk_insert", options=options)
write_table(path, generate_updates(trips, fraction=0.2, seed=2), operation="upsert", options=options)

health = table_health(HudiTable(path))  # a typed TableHealth: file groups, log files per slice, pending instants
print(health.to_json_obj())

defs = build_hudi_definitions(tables=[HudiTableConfig(name="trips", base_path=path)])
table_asset = defs.resolve_assets_def(dg.AssetKey(["hudi", "trips"]))
result = dg.materialize([table_asset])  # materializing records the health as typed metadata (ints, timestamps)
assert result.success
(event,) = result.get_asset_materialization_events()
metadata = event.materialization.metadata
print(event.asset_key.to_user_string(), {k: v.value for k, v in metadata.items()})
assert event.asset_key == dg.AssetKey(["hudi", "trips"]) and metadata["log_files"].value == health.log_files == 1
assert isinstance(metadata["log_files"], dg.IntMetadataValue)
assert isinstance(metadata["latest_commit_time"], dg.TimestampMetadataValue)
