"""Instant transitions requested -> inflight -> completed: one timeline file per state, never overwritten."""

import sys
import tempfile
from pathlib import Path

from lake_orchestration.datagen import generate_trips
from lake_orchestration.errors import InvalidInstantStateError
from lake_orchestration.hudi.model.commit_metadata import CommitMetadata
from lake_orchestration.hudi.model.instant import Action, Instant, State
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.write import WriteOptions, write_table

path = str(Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()) / "trips")
write_table(path, generate_trips(10), operation="bulk_insert",
            options=WriteOptions(table_name="trips", record_key_fields=("uuid",), precombine_field="ts"))

table = HudiTable(path)
ts = table.new_instant_time()  # after every instant on the timeline
requested = table.create_requested(Instant(ts, Action.DELTA_COMMIT, State.REQUESTED))
inflight = table.transition_to_inflight(requested, CommitMetadata(operation_type="UPSERT").to_bytes())
print(requested.file_name, "->", inflight.file_name)
try:
    table.create_requested(requested)  # the file exists: create-if-absent refuses
except InvalidInstantStateError as err:
    print("refused:", err)
assert table.timeline.get(ts) == inflight  # the timeline keeps the latest state

done = table.transition_to_completed(inflight, CommitMetadata(operation_type="UPSERT").to_bytes())
print("->", done.file_name)
names = sorted(f.name for f in table.storage.list_dir(table.hoodie_dir) if f.name.startswith(ts))
assert names == [f"{ts}.deltacommit", f"{ts}.deltacommit.inflight", f"{ts}.deltacommit.requested"]
