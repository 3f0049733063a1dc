"""Code location: the tables of the config file, else the demo table (``lake_orchestration.dagster.location``).

The config file is ``$LAKE_ORCHESTRATION_CONFIG``, else ``./lake_orchestration.yaml`` if present (top level
``tables:``). Without one, the demo table is built under ``$LAKE_ORCH_DEMO_DIR`` (default ``./demo-tables``).
"""

from lake_orchestration.dagster.location import load_code_location
from lake_orchestration.demo.definitions import demo_location

defs = load_code_location(fallback=demo_location)
