"""A table on S3, end to end against a local S3 server (moto, 127.0.0.1): the standard AWS environment, storage
options in Python, the CLI, a Dagster config. Needs the test extra (moto[server]); without it the snippet says so
and exits (it never talks to a remote store)."""

import json
import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    from moto.server import ThreadedMotoServer
except ImportError:  # pragma: no cover - the test extra is not installed
    print("skipped: moto[server] is not installed (pip install 'moto[server]')")
    sys.exit(0)

import pyarrow.fs as pafs
import pyarrow.parquet as pq

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.write import WriteOptions, write_table

work = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
work.mkdir(parents=True, exist_ok=True)
logging.getLogger("werkzeug").setLevel(logging.ERROR)  # the server's access log
server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
server.start()
host, port = server.get_host_and_port()
endpoint = f"http://{host}:{port}"
# no ~/.aws files, no instance metadata: only what this snippet sets
os.environ.update(
    AWS_EC2_METADATA_DISABLED="true", AWS_CONFIG_FILE="/dev/null", AWS_SHARED_CREDENTIALS_FILE="/dev/null"
)
pafs.S3FileSystem(
    endpoint_override=endpoint, region="us-east-1", access_key="k", secret_key="s", allow_bucket_creation=True
).create_dir("lake")

# --8<-- [start:env]
os.environ.update(
    AWS_ENDPOINT_URL=endpoint,  # an S3-compatible store; leave unset for AWS S3
    AWS_REGION="us-east-1",
    AWS_ACCESS_KEY_ID="my-access-key",
    AWS_SECRET_ACCESS_KEY="my-secret-key",
)
opts = WriteOptions(table_name="trips", record_key_fields=("uuid",), partition_fields=("city",), precombine_field="ts")
rows = generate_trips(200, seed=1)
write_table("s3://lake/trips", rows, operation="bulk_insert", options=opts)  # no storage options needed
table = HudiTable("s3a://lake/trips")  # s3a:// (Java Hudi's form) is the same table
print(table.config.name, [str(i.time) for i in table.timeline])
# --8<-- [end:env]
assert table.storage.atomic_create  # timeline files are created with If-None-Match: *

# --8<-- [start:options]
# explicit options win over the environment (pyarrow's names; conditional_put is this project's)
table = HudiTable("s3://lake/trips", storage_options={"endpoint_override": endpoint, "region": "us-east-1"})
# --8<-- [end:options]
assert len(table.timeline) == 1

pq.write_table(generate_updates(rows, fraction=0.2, seed=2), work / "updates.parquet")
secrets = work / "s3.yaml"
secrets.write_text("access_key: my-access-key\nsecret_key: my-secret-key\n")


def lake_orch(*args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    p = subprocess.run(
        [sys.executable, "-m", "lake_orchestration.cli.app", *args], env=env, capture_output=True, text=True
    )
    assert p.returncode == 0, p.stderr
    assert "my-secret-key" not in p.stdout + p.stderr
    return p.stdout


# the CLI: the same environment, or options; secrets from a file (here without AWS_ACCESS_KEY_ID/SECRET in the env)
so = ["--storage-option", f"endpoint_override={endpoint}", "--storage-options-file", str(secrets)]
print(lake_orch("write", "s3://lake/trips", "--input", str(work / "updates.parquet"), *so))
print(lake_orch("compaction", "schedule", "s3://lake/trips", "--force", *so))
print(lake_orch("compaction", "run", "s3://lake/trips", "--engine", "local", *so))
timeline = json.loads(lake_orch("timeline", "show", "s3://lake/trips", "--json", *so))
assert [r["action"] for r in timeline] == ["deltacommit", "deltacommit", "commit"], timeline

config = work / "lake_orchestration.yaml"
# --8<-- [start:dagster]
config.write_text(f"""\
tables:
  - name: trips
    base_path: s3://lake/trips
    engine: local
    storage:
      provider: s3
      endpoint_override: {endpoint}        # e.g. http://minio:9000; omit for AWS S3
      region: us-east-1
      access_key_env: AWS_ACCESS_KEY_ID    # NAMES of the variables holding the keys
      secret_key_env: AWS_SECRET_ACCESS_KEY
""")
# --8<-- [end:dagster]
from lake_orchestration.dagster.location import load_code_location  # noqa: E402

defs = load_code_location({"LAKE_ORCHESTRATION_CONFIG": str(config)})
result = defs.resolve_job_def("trips__schedule_compaction").execute_in_process()
assert result.success
print("dagster schedule-compaction run:", "success" if result.success else "failed")
server.stop()
