"""Drive lake-orch from a script: every inspection command prints JSON with --json."""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.write import WriteOptions, write_table

scratch = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
path = str(scratch / "trips")
options = WriteOptions(table_name="trips", record_key_fields=("uuid",), partition_fields=("city",),
                       precombine_field="ts")
trips = generate_trips(60, partitions=2, seed=1)
write_table(path, trips, operation="bulk_insert", options=options)
write_table(path, generate_updates(trips, fraction=0.5, seed=2), operation="upsert", options=options)


def lake_orch(*args: str) -> object:  # same as running `lake-orch ARGS --json`
    cmd = [sys.executable, "-m", "lake_orchestration.cli.app", *args, "--json"]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


table = lake_orch("table", "show", path)
print(table["type"], table["merge_semantics"], table["instants"], "instants")
timeline = lake_orch("timeline", "show", path)
print([(i["instant"], i["action"], i["state"]) for i in timeline])
slices = lake_orch("fsview", "show", path, "--all-slices")
print([(s["partition"], s["base_file"], len(s["log_files"])) for s in slices])
read = lake_orch("read", path, "--output", str(scratch / "snapshot.parquet"))
print(read)
assert read["rows"] == 60 and read["log_records"] == 30 and read["corrupt_blocks"] == 0
