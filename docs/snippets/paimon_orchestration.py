"""Orchestrate Paimon compaction: the CLI's commands as calls, then a Dagster table config with ``format: paimon``.

Runs on a copy of a Java-written golden table (../shared/fixtures/paimon-tables, beside the checkout), taken back to
snapshot 5 so that its bucket has something to compact.
"""

import json
import os
import sys
import tarfile
import tempfile
from pathlib import Path

from click.testing import CliRunner

repo = Path(__file__).resolve().parents[2]
shared = Path(os.environ.get("LAKE_ORCH_SHARED", repo.parent / "shared"))
archive = shared / "fixtures" / "paimon-tables" / "pk_global_index_golden.tar.gz"
if not archive.is_file():
    print(f"no golden Paimon tables at {archive}: nothing to show")
    sys.exit(0)
dest = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
with tarfile.open(archive) as tar:
    tar.extractall(dest, filter="data")
path = str(dest / "default.db" / "test_pk_full_text_golden")
for later in (6, 7, 8):  # back to snapshot 5: three sorted runs in bucket 0
    (Path(path) / "snapshot" / f"snapshot-{later}").unlink()
(Path(path) / "snapshot" / "LATEST").write_text("5")

from lake_orchestration.cli.app import cli  # noqa: E402  (what `lake-orch` runs)

runner = CliRunner()
# `lake-orch paimon compaction show PATH --json`
shown = json.loads(runner.invoke(cli, ["paimon", "compaction", "show", path, "--json"]).stdout)
print("sorted runs per bucket:", [(b["bucket"], b["sorted_runs"]) for b in shown["buckets"]])
# `lake-orch paimon compaction schedule PATH` prints the plan and writes nothing
print(runner.invoke(cli, ["paimon", "compaction", "schedule", path]).stdout)

# --8<-- [start:dagster]
import dagster as dg  # noqa: E402

from lake_orchestration.dagster import HudiTableConfig, build_hudi_definitions  # noqa: E402

orders = HudiTableConfig(name="orders", base_path=path, format="paimon", engine="local", schedule_cron="0 * * * *")
defs = build_hudi_definitions(tables=[orders])

table_asset = defs.resolve_assets_def(dg.AssetKey(["paimon", "orders"]))
compaction = defs.resolve_assets_def(dg.AssetKey(["paimon", "orders", "compaction"]))
with dg.instance_for_test() as instance:
    result = dg.materialize([table_asset, compaction], instance=instance)
    assert result.success
    (health,) = result.asset_materializations_for_node("paimon__orders")
    print("max sorted runs before:", health.metadata["max_sorted_runs"].value)
    (compacted,) = result.asset_materializations_for_node("paimon__orders__compaction")
    print("COMPACT snapshot:", compacted.metadata["compact_snapshot_id"].value)
    checks = dg.materialize([table_asset, *defs.asset_checks], instance=instance, selection=[table_asset.key])
    for evaluation in checks.get_asset_check_evaluations():
        print(evaluation.check_name, "passed" if evaluation.passed else "failed")
print([job.name for job in defs.jobs], [s.name for s in defs.schedules], [s.name for s in defs.sensors])
# --8<-- [end:dagster]
