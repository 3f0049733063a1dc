"""The compaction asset: the sensor adds a partition per pending plan; each partition's run executes that plan."""

import sys
import tempfile
from pathlib import Path

import dagster as dg

from lake_orchestration.dagster import HudiTableConfig, build_hudi_definitions
from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.write import WriteOptions, write_table

path = str(Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()) / "trips")
options = WriteOptions(
    table_name="trips", record_key_fields=("uuid",), partition_fields=("city",), precombine_field="ts"
)
trips = generate_trips(300, seed=1)
write_table(path, trips, operation="bulk_insert", options=options)

# --8<-- [start:defs]
cfg = HudiTableConfig(
    name="trips",
    base_path=path,
    engine="local",  # in-process here; the default "spark" uses the pyspark resource
    compaction_options={"hoodie.compact.inline.max.delta.commits": "2"},
    compaction_seq="FIFO",
    max_plans_per_tick=5,
)
defs = build_hudi_definitions(tables=[cfg])
# --8<-- [end:defs]

with dg.instance_for_test() as instance:
    # --8<-- [start:schedule]
    schedule_job = defs.resolve_job_def("trips__schedule_compaction")  # what trips__schedule_compaction_schedule runs
    for n in range(2):
        write_table(
            path,
            generate_updates(trips, fraction=0.2, seed=n, ts_offset=(n + 1) * 10**7),
            operation="upsert",
            options=options,
        )
    assert schedule_job.execute_in_process(instance=instance).success  # 3 deltacommits >= 2: a plan
    # --8<-- [end:schedule]
    # --8<-- [start:sensor]
    sensor = defs.resolve_sensor_def("trips__pending_compaction_sensor")
    tick = sensor(dg.build_sensor_context(instance=instance, definitions=defs))
    print([r.run_key for r in tick.run_requests])  # one run request per new plan, run key = instant
    for add in tick.dynamic_partitions_requests:  # the daemon applies these before launching the runs
        instance.add_dynamic_partitions(add.partitions_def_name, list(add.partition_keys))
    # --8<-- [end:sensor]
    # --8<-- [start:backfill]
    compaction = defs.resolve_job_def("trips__compaction")
    for key in instance.get_dynamic_partitions("trips__compaction_instants"):  # a backfill: one run per partition
        result = compaction.execute_in_process(instance=instance, partition_key=key)
        (mat,) = result.asset_materializations_for_node("hudi__trips__compaction")
        print(key, {k: mat.metadata[k].value for k in ("operations", "rows_written", "seconds")})
    # --8<-- [end:backfill]

assert not HudiTable(path).timeline.pending_compactions()
