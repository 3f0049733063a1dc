"""What the code location (``definitions/``) serves: the tables of a config file, or a fallback (the demo table).

Where the config file comes from, first match wins:

1. ``$LAKE_ORCHESTRATION_CONFIG`` (a path; the file must exist);
2. ``$LAKE_ORCH_TABLES_YAML`` (deprecated alias, also accepts the old format: a bare list of tables);
3. ``./lake_orchestration.yaml`` in the code location's working directory, if present;
4. none: the ``fallback`` definitions; ``definitions/`` passes the demo's
   (:func:`lake_orchestration.demo.definitions.demo_location`: the table ``demo_trips`` under
   ``$LAKE_ORCH_DEMO_DIR``, default ``./demo-tables``, created if absent, with the demo ingest asset, job and
   schedule).

The file's tables get the fleet model (shared jobs, one sensor per service kind: :mod:`lake_orchestration.dagster.
fleet`) with ``fleet: true``, or with ``fleet: auto`` (the default) from 20 tables on; else the per-table model.
"""

import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path

import dagster as dg

from lake_orchestration.dagster.config import (
    CONFIG_ENV_VAR,
    DEFAULT_CONFIG_FILE,
    DEPRECATED_CONFIG_ENV_VAR,
    HudiConfigError,
    HudiTablesFile,
    load_config_file,
)
from lake_orchestration.dagster.definitions import build_hudi_definitions

_log = logging.getLogger(__name__)


def config_file_path(environ: Mapping[str, str] | None = None, *, cwd: Path | None = None) -> tuple[Path, str] | None:
    """The config file the code location reads and where its path came from, or None (the demo)."""
    env = os.environ if environ is None else environ
    if env.get(CONFIG_ENV_VAR):
        return Path(env[CONFIG_ENV_VAR]), CONFIG_ENV_VAR
    if env.get(DEPRECATED_CONFIG_ENV_VAR):
        return Path(env[DEPRECATED_CONFIG_ENV_VAR]), DEPRECATED_CONFIG_ENV_VAR
    default = (cwd or Path.cwd()) / DEFAULT_CONFIG_FILE
    if default.is_file():
        return default, "default location"
    return None


def definitions_of(cfg: HudiTablesFile, path: Path | None = None) -> dg.Definitions:
    """The definitions of a loaded config file: the fleet model (:func:`~lake_orchestration.dagster.fleet.
    build_fleet_definitions`) when ``fleet: true``, or ``auto`` with at least ``FLEET_AUTO_MIN_TABLES`` tables; else
    the per-table model (:func:`~lake_orchestration.dagster.definitions.build_hudi_definitions`). Given the file's
    ``path``, the fleet model searches its ``discover:`` prefixes again (``rediscover_interval_minutes``)."""
    from lake_orchestration.dagster.fleet import FleetDiscovery, build_fleet_definitions, use_fleet_model

    if use_fleet_model(cfg.fleet, len(cfg.tables)):
        return build_fleet_definitions(
            tables=cfg.tables,
            spark_config=cfg.spark_config,
            budget_per_tick=cfg.fleet_budget_per_tick,
            discovery=FleetDiscovery.from_file(path) if path is not None else None,
        )
    return build_hudi_definitions(tables=cfg.tables, spark_config=cfg.spark_config)


def load_code_location(
    environ: Mapping[str, str] | None = None,
    *,
    cwd: Path | None = None,
    fallback: Callable[[Mapping[str, str]], dg.Definitions] | None = None,
) -> dg.Definitions:
    """The code location's definitions (see the module docstring).

    Args:
        environ: the environment (default ``os.environ``).
        cwd: where ``./lake_orchestration.yaml`` is looked for (default: the working directory).
        fallback: the definitions when no config file is found, given ``environ`` (``definitions/`` passes the
            demo's).

    Raises:
        HudiConfigError: the config file is missing, not YAML, or an entry is invalid; the message names the file,
            the entry and what was expected. Or: no config file is found and there is no ``fallback``.
    """
    env = os.environ if environ is None else environ
    found = config_file_path(env, cwd=cwd)
    if found is not None:
        path, source = found
        if source == DEPRECATED_CONFIG_ENV_VAR:
            _log.warning("%s is deprecated: set %s=%s instead", DEPRECATED_CONFIG_ENV_VAR, CONFIG_ENV_VAR, path)
        cfg = load_config_file(path, allow_list=source == DEPRECATED_CONFIG_ENV_VAR)
        return definitions_of(cfg, path)
    if fallback is None:
        raise HudiConfigError(
            "code location",
            f"no config file: expected ${CONFIG_ENV_VAR} to name one, or {DEFAULT_CONFIG_FILE} in {cwd or Path.cwd()}",
        )
    return fallback(env)
