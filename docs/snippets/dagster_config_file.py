"""The code location's config file: tables (with storage options) and the Spark configuration."""

import sys
import tempfile
from pathlib import Path

from lake_orchestration.dagster import HudiConfigError, load_config_file
from lake_orchestration.dagster.location import load_code_location
from lake_orchestration.datagen import generate_trips
from lake_orchestration.hudi.write import WriteOptions, write_table

work = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
trips = work / "trips"
write_table(
    str(trips),
    generate_trips(100, seed=1),
    operation="bulk_insert",
    options=WriteOptions(table_name="trips", record_key_fields=("uuid",), partition_fields=("city",)),
)

config = work / "lake_orchestration.yaml"
# --8<-- [start:config]
config.write_text(f"""\
spark_config:                         # over the embedded default spark.master=local[*]
  spark.executor.memory: 2g
tables:
  - name: trips                       # local table: no storage needed
    base_path: {trips}
    compaction_options:
      hoodie.compact.inline.max.delta.commits: 3
  - name: orders                      # S3 (or MinIO with endpoint_override + scheme: http)
    base_path: s3://my-bucket/lake/orders
    storage:
      provider: s3
      region: eu-west-1
      access_key_env: AWS_ACCESS_KEY_ID        # the NAME of the variable that holds the key
      secret_key_env: AWS_SECRET_ACCESS_KEY
  - name: events                      # GCS: Google's default credentials (GOOGLE_APPLICATION_CREDENTIALS)
    base_path: gs://my-bucket/lake/events
    storage: {{provider: gcs, project_id: my-project}}
  - name: clicks                      # HDFS with a Kerberos ticket cache
    base_path: hdfs://namenode:8020/lake/clicks
    storage: {{provider: hdfs, user: hudi, kerb_ticket: /tmp/krb5cc_1000}}
    clean_options: {{hoodie.cleaner.policy: KEEP_LATEST_COMMITS, hoodie.cleaner.commits.retained: 10}}
    archive_options: {{hoodie.keep.min.commits: 20, hoodie.keep.max.commits: 30}}
""")
# --8<-- [end:config]

# --8<-- [start:location]
# what `dagster dev -w workspace.yaml` does with LAKE_ORCHESTRATION_CONFIG=<file>
defs = load_code_location({"LAKE_ORCHESTRATION_CONFIG": str(config)})
# --8<-- [end:location]
tables = sorted(k.path[1] for k in (a.key for a in defs.resolve_all_asset_specs()) if len(k.path) == 2)
print(tables)
assert tables == ["clicks", "events", "orders", "trips"]
print(load_config_file(config).tables[1].storage)

# --8<-- [start:error]
config.write_text("tables:\n  - name: trips\n    base_path: /data/trips\n    storage: {provider: s3}\n")
try:
    load_config_file(config)
except HudiConfigError as err:
    print(err)  # <file>: tables[0] ('trips'): entry: storage.provider 's3' does not match base_path ...
    # --8<-- [end:error]
    assert str(err).startswith(f"{config}: tables[0] ('trips')")
