"""Commit-time vs event-time ordering: a late-arriving update with a smaller ordering value."""

import sys
import tempfile
from pathlib import Path

import pyarrow as pa

from lake_orchestration.config.keys import PAYLOAD_DEFAULT, PAYLOAD_OVERWRITE_WITH_LATEST
from lake_orchestration.datagen import generate_trips
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.snapshot import read_snapshot_table
from lake_orchestration.hudi.write import WriteOptions, write_table

scratch = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
trips = generate_trips(3, seed=1)
late = trips.slice(0, 1)
late = late.set_column(late.schema.get_field_index("ts"), "ts", pa.array([late["ts"][0].as_py() - 1]))
late = late.set_column(late.schema.get_field_index("fare"), "fare", pa.array([999.0]))
drop = trips.slice(1, 1).append_column("_hoodie_is_deleted", pa.array([True]))

for payload in (PAYLOAD_OVERWRITE_WITH_LATEST, PAYLOAD_DEFAULT):
    path = str(scratch / payload.rsplit(".", 1)[-1])
    options = WriteOptions(table_name="trips", record_key_fields=("uuid",), precombine_field="ts",
                           payload_class=payload)
    write_table(path, trips, operation="bulk_insert", options=options)
    write_table(path, late, operation="upsert", options=options)  # log record, smaller ts
    write_table(path, drop, operation="upsert", options=options)  # _hoodie_is_deleted=true -> delete
    table = HudiTable(path)
    rows = read_snapshot_table(table)
    fare = dict(zip(rows["uuid"].to_pylist(), rows["fare"].to_pylist(), strict=True))[late["uuid"][0].as_py()]
    print(table.config.merge_semantics.value, "rows:", rows.num_rows, "fare of the late key:", fare)
    assert rows.num_rows == 2
    # Commit-time ordering: the log record wins over the base file. Event-time: the greater ts wins.
    assert (fare == 999.0) == (payload == PAYLOAD_OVERWRITE_WITH_LATEST)
