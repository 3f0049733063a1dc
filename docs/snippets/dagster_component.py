"""The YAML component: a dg project whose defs folder declares the tables in a defs.yaml."""

import sys
import tempfile
import textwrap
import warnings
from pathlib import Path

import dagster as dg

from lake_orchestration.dagster import HudiTableConfig, build_hudi_definitions

root = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()) / "lake_project"
# --8<-- [start:project]
# lake_project/
#   pyproject.toml                       [tool.dg] project, root_module = "lake_project"
#   src/lake_project/definitions.py      @dg.definitions -> dg.load_from_defs_folder(...)
#   src/lake_project/defs/hudi/defs.yaml the component below
DEFS_YAML = """\
type: lake_orchestration.dagster.HudiTablesComponent
attributes:
  spark_config:
    spark.master: "local[*]"
  tables:
    - name: trips
      base_path: /data/lake/trips
      compaction_options:
        hoodie.compact.inline.max.delta.commits: 5
    - name: orders
      base_path: s3://my-bucket/lake/orders
      storage:
        provider: s3
        region: eu-west-1
        access_key_env: AWS_ACCESS_KEY_ID        # names of environment variables, never the secrets
        secret_key_env: AWS_SECRET_ACCESS_KEY
      clean_options:
        hoodie.cleaner.commits.retained: 10
"""
# --8<-- [end:project]
(root / "src" / "lake_project" / "defs" / "hudi").mkdir(parents=True, exist_ok=True)
(root / "pyproject.toml").write_text(
    textwrap.dedent("""\
    [project]
    name = "lake_project"
    version = "0.1.0"

    [tool.dg]
    directory_type = "project"

    [tool.dg.project]
    root_module = "lake_project"
    """)
)
(root / "src" / "lake_project" / "__init__.py").write_text("")
(root / "src" / "lake_project" / "defs" / "hudi" / "defs.yaml").write_text(DEFS_YAML)

sys.path.insert(0, str(root / "src"))
# Dagster's notices about its own beta/preview loader internals
warnings.filterwarnings("ignore", category=dg.BetaWarning)
warnings.filterwarnings("ignore", category=dg.PreviewWarning)
# --8<-- [start:load]
# src/lake_project/definitions.py
defs = dg.load_from_defs_folder(path_within_project=root)
# --8<-- [end:load]

keys = sorted(a.key.to_user_string() for a in defs.resolve_all_asset_specs())
print(keys)
assert keys == ["hudi/orders", "hudi/orders/compaction", "hudi/trips", "hudi/trips/compaction"]

# the same tables through the factory give the same objects
factory = build_hudi_definitions(
    tables=[
        HudiTableConfig(
            name="trips",
            base_path="/data/lake/trips",
            compaction_options={"hoodie.compact.inline.max.delta.commits": "5"},
        ),
        HudiTableConfig(
            name="orders",
            base_path="s3://my-bucket/lake/orders",
            storage={
                "provider": "s3",
                "region": "eu-west-1",
                "access_key_env": "AWS_ACCESS_KEY_ID",
                "secret_key_env": "AWS_SECRET_ACCESS_KEY",
            },
            clean_options={"hoodie.cleaner.commits.retained": "10"},
        ),
    ],
    spark_config={"spark.master": "local[*]"},
)
assert sorted(j.name for j in factory.jobs) == sorted(j.name for j in defs.jobs)
assert sorted(s.name for s in factory.sensors) == sorted(s.name for s in defs.sensors)
print(sorted(j.name for j in defs.jobs))
