"""The fleet's YAML: ``defaults:`` + ``tables:`` + ``discover:``, the same file the Dagster code location reads.

::

    defaults:                      # laid under every table (a table's own value wins; maps are merged key by key)
      compaction_options: {hoodie.compact.inline.max.delta.commits: 5}
      policy: {weight: 1.0, max_log_files_per_slice: 20}
    tables:                        # entries of the Dagster code location's shape (HudiTableConfig) + policy:
      - name: trips
        base_path: s3://bucket/warehouse/rides/trips
        storage: {provider: s3, region: eu-west-1, access_key_env: AWS_ACCESS_KEY_ID,
                  secret_key_env: AWS_SECRET_ACCESS_KEY}
        policy: {weight: 3}
    discover:                      # every Hudi and Paimon table under a prefix, named from its path (db_table)
      - prefix: s3://bucket/warehouse/
        storage: {provider: s3, region: eu-west-1}
        format: auto               # auto | hudi | paimon
        exclude: ["tmp_*"]         # globs on the discovered name or on the path under the prefix
        max_depth: 6               # directory levels searched under the prefix (default 6)
        rediscover_interval_minutes: 60  # the Dagster fleet model searches again this often (0: at load only)

:func:`expand_entries` turns the top level into one plain dict per table (the Dagster loader validates them as its
``HudiTableConfig``); :func:`load_fleet` gives the shell-independent :class:`FleetTable`. Secrets are never values
of the file: a storage field ending in ``_env`` names the environment variable that holds the secret, read when a
table is opened (:meth:`FleetTable.resolved_storage_options`), never stored.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import fnmatch
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml

from lake_orchestration.config.keys import HOODIE_PREFIX
from lake_orchestration.config.options import check_option_keys
from lake_orchestration.errors import LakeOrchestrationError

_NAME = re.compile(r"^[A-Za-z0-9_]+$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

FORMATS = ("hudi", "paimon")
SERVICES_BY_FORMAT: Mapping[str, tuple[str, ...]] = {
    "hudi": ("compaction", "log_compaction", "clustering", "clean", "archive"),
    "paimon": ("compaction",),
}
"""The services the fleet runs per format, in the order a table's due services run (Hudi's
``HoodieMultiTableServicesMain`` order: compaction, then clustering, then clean, then archive, as its
``MultiTableServiceUtils.buildTableServicePipeline`` adds them; log compaction beside compaction). Clustering runs
only on a table whose ``clustering_options`` set ``hoodie.clustering.async.enabled: true`` (the probe never finds it
due otherwise)."""


class FleetConfigError(LakeOrchestrationError, ValueError):
    """The fleet's config file is invalid: the message names the file, the entry and what was expected."""

    def __init__(self, where: str, detail: str) -> None:
        self.where = where
        self.detail = detail
        super().__init__(f"{where}: {detail}")


# -- the entry keys ------------------------------------------------------------------------------------------------
OPTION_MAPS = ("compaction_options", "clean_options", "archive_options", "bootstrap_options", "clustering_options")
"""The ``hoodie.*`` option maps of an entry."""

ENTRY_KEYS = frozenset(
    {
        "name",
        "base_path",
        "format",
        "storage",
        "passthrough_keys",
        *OPTION_MAPS,
        "policy",
        # read by the Dagster shell only (HudiTableConfig): accepted here, checked there
        "upstream_assets",
        "compaction_seq",
        "max_plans_per_tick",
        "engine",
        "schedule_cron",
        "clean_cron",
        "archive_cron",
        "clustering_cron",
        "clean_dry_run",
        "archive_dry_run",
        "max_small_archive_files",
        "max_pending_plan_age_seconds",
        "max_log_files_per_slice",
        "max_active_timeline_instants",
        "heartbeat_interval_ms",
        "heartbeat_tolerable_misses",
        "inflight_timeout_seconds",
        "retry_max_retries",
        "retry_delay_seconds",
    }
)
"""Keys of a ``tables:`` entry (and of ``defaults:``): the Dagster code location's ``HudiTableConfig`` fields plus
``policy``. A test keeps this in step with ``HudiTableConfig``."""

TOP_LEVEL_KEYS = ("defaults", "tables", "discover", "spark_config", "fleet", "fleet_budget_per_tick")
"""Top-level keys of the file: the fleet's, and those the Dagster code location reads (``spark_config``, ``fleet``,
``fleet_budget_per_tick``: accepted here, checked there), so one file serves both shells."""
DISCOVER_KEYS = ("prefix", "storage", "format", "exclude", "max_depth", "rediscover_interval_minutes")
DEFAULT_REDISCOVER_MINUTES = 60
"""How often the Dagster fleet model searches a ``discover:`` prefix again (``rediscover_interval_minutes``)."""

_STORAGE_FIELDS: Mapping[str, tuple[str, ...]] = {
    "local": (),
    "s3": ("region", "endpoint_override", "scheme", "anonymous", "role_arn", "force_virtual_addressing"),
    "gcs": (
        "project_id",
        "endpoint_override",
        "scheme",
        "anonymous",
        "default_bucket_location",
        "target_service_account",
        "credential_token_expiration",
    ),
    "hdfs": ("user", "kerb_ticket", "replication", "buffer_size", "default_block_size", "extra_conf"),
}
_STORAGE_SECRETS: Mapping[str, tuple[str, ...]] = {
    "local": (),
    "s3": ("access_key_env", "secret_key_env", "session_token_env"),
    "gcs": ("access_token_env",),
    "hdfs": (),
}
_SCHEMES: Mapping[str, tuple[str, ...]] = {
    "local": ("", "file"),
    "s3": ("s3", "s3a"),
    "gcs": ("gs", "gcs"),
    "hdfs": ("hdfs",),
}


def _closest(key: str, known: Any) -> str:
    hint = difflib.get_close_matches(str(key), list(known), n=1, cutoff=0.6)
    return f" (did you mean {hint[0]!r}?)" if hint else ""


def _refuse_unknown(data: Mapping[str, Any], known: Any, *, where: str, what: str) -> None:
    for k in data:
        if k not in known:
            raise FleetConfigError(
                where, f"{what}: unknown key {k!r}{_closest(k, known)}; expected one of {', '.join(sorted(known))}"
            )


# -- policy --------------------------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class TablePolicy:
    """How a table is scheduled and judged (the ``policy:`` block, under ``defaults:`` or a table).

    Thresholds are the largest healthy value: a table breaches its policy when a figure of its health row is above
    its threshold (``None``: not judged).
    """

    weight: float = 1.0
    """Priority: :func:`~lake_orchestration.fleet.probe.order` runs the largest ``overdue x weight`` first."""
    pool: str | None = None
    """The Dagster pool of the table's service runs (a fleet-wide limit per group); None: the service's pool."""
    max_log_files_per_slice: int | None = 50
    """Compaction backlog: log files of the most loaded latest file slice."""
    max_pending_compactions: int | None = 5
    """Compaction backlog: compaction plans requested or inflight."""
    max_pending_compaction_age_s: float | None = 24 * 3600.0
    """Compaction backlog: seconds since the oldest pending compaction plan's instant time."""
    max_cleaner_lag_commits: int | None = 20
    """Cleaner lag: completed write commits since the last completed clean (all of them without a clean)."""
    max_active_instants: int | None = 60
    """Archival lag: completed instants on the active timeline."""
    max_metadata_table_lag: int | None = 0
    """Metadata-table lag: completed data-table instants not (yet) in the metadata table."""
    max_small_files: int | None = None
    """Small files: latest base files under ``hoodie.parquet.small.file.limit`` (default 100 MiB); not judged by
    default (a young table is all small files)."""

    @classmethod
    def from_mapping(cls, raw: Any, *, where: str) -> TablePolicy:
        """The policy of a ``policy:`` block; unknown keys refused with the closest known one."""
        if raw is None:
            return cls()
        if not isinstance(raw, Mapping):
            raise FleetConfigError(where, f"policy: expected a mapping of policy keys, got {raw!r}")
        known = {f.name: f for f in dataclasses.fields(cls)}
        _refuse_unknown(raw, known, where=where, what="policy")
        values: dict[str, Any] = {}
        for k, v in raw.items():
            if k == "pool":
                if v is not None and (not isinstance(v, str) or not v.strip()):
                    raise FleetConfigError(where, f"policy.pool: expected a pool name (text), got {v!r}")
                values[k] = v
                continue
            if v is None and k != "weight":
                values[k] = None
                continue
            number = isinstance(v, int | float) and not isinstance(v, bool)
            if not number or v < 0 or (k == "weight" and v == 0):
                what = "a number > 0" if k == "weight" else "a number >= 0 (or null: not judged)"
                raise FleetConfigError(where, f"policy.{k}: expected {what}, got {v!r}")
            if k.startswith("max_") and not k.endswith("_s") and v != int(v):
                raise FleetConfigError(where, f"policy.{k}: expected a whole number, got {v!r}")
            values[k] = float(v) if k in ("weight", "max_pending_compaction_age_s") else int(v)
        return cls(**values)

    def to_json_obj(self) -> dict[str, Any]:
        """The policy as plain values."""
        return dataclasses.asdict(self)


# -- a table -------------------------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class FleetTable:
    """One table of the fleet, shell-independent (no Dagster, no Airflow)."""

    name: str
    """``[A-Za-z0-9_]+``, unique in the fleet."""
    base_path: str
    """Base path or URI."""
    format: str = "hudi"
    """``hudi`` or ``paimon``."""
    storage_options: Mapping[str, Any] = field(default_factory=dict)
    """The storage options of :class:`~lake_orchestration.io.storage.Storage` WITHOUT secrets (the non-secret fields
    of the entry's ``storage:``); :meth:`resolved_storage_options` adds the secrets, read from the environment."""
    secret_env: Mapping[str, str] = field(default_factory=dict)
    """Secret storage option -> the environment variable holding it (``secret_key`` -> ``AWS_SECRET_ACCESS_KEY``)."""
    options: Mapping[str, str] = field(default_factory=dict)
    """Every ``hoodie.*`` key of the entry's compaction, clean and archive maps, as one write config (archive over
    clean over compaction, as the Dagster shell's ``service_options()``); :meth:`service_options` for one service."""
    service_maps: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """The entry's option maps by service (``compaction``, ``clean``, ``archive``)."""
    policy: TablePolicy = field(default_factory=TablePolicy)
    """Scheduling and health thresholds."""
    entry: Mapping[str, Any] = field(default_factory=dict)
    """The expanded entry this table came from (the Dagster shell's ``HudiTableConfig`` shape)."""

    @property
    def services(self) -> tuple[str, ...]:
        """The services the fleet runs on this table's format."""
        return SERVICES_BY_FORMAT[self.format]

    def service_options(self, service: str | None = None) -> dict[str, str]:
        """``service``'s map laid over the other maps (its keys win), as the Dagster shell's ``service_options``."""
        if service in ("log_compaction", None):
            service = "compaction" if service else None
        maps = dict(self.service_maps)
        order = [m for n, m in maps.items() if n != service] + ([maps[service]] if service in maps else [])
        return {k: v for m in order for k, v in m.items()}

    def resolved_storage_options(self) -> Any:
        """The :class:`~lake_orchestration.io.storage_options.StorageOptions` of the table, secrets read from the
        environment now (never log them).

        Raises:
            FleetConfigError: a secret's environment variable is not set (naming the variable, not any value).
        """
        from lake_orchestration.io.storage_options import parse_storage_options

        secrets: dict[str, str] = {}
        for option, var in self.secret_env.items():
            value = os.environ.get(var)
            if not value:
                raise FleetConfigError(
                    f"table {self.name!r}",
                    f"storage names the environment variable {var!r} for {option}, which is not set (or empty) in "
                    "this process; expected it to hold the secret",
                )
            secrets[option] = value
        return parse_storage_options(self.storage_options, source=f"storage of table {self.name!r}", secrets=secrets)

    def open(self) -> Any:
        """A fresh :class:`~lake_orchestration.hudi.table.HudiTable` (``PaimonTable`` for ``format: paimon``)."""
        opts = self.resolved_storage_options().to_dict()
        if self.format == "paimon":
            from lake_orchestration.paimon.table import PaimonTable

            return PaimonTable.open(self.base_path, storage_options=opts)
        from lake_orchestration.hudi.table import HudiTable

        return HudiTable(self.base_path, storage_options=opts)

    def storage(self) -> Any:
        """A :class:`~lake_orchestration.io.storage.Storage` rooted at the base path (for the probe's listing)."""
        from lake_orchestration.io.storage import Storage

        return Storage(self.base_path, options=self.resolved_storage_options().to_dict())


# -- parsing -------------------------------------------------------------------------------------------------------
def _deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` laid on ``base``: mappings merged key by key, anything else replaced (a ``storage:`` of another
    provider replaces the default's whole block)."""
    out = copy.deepcopy(dict(base))
    for k, v in over.items():
        if k == "storage" and isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            if "provider" in v and v["provider"] != out[k].get("provider", "local"):
                out[k] = copy.deepcopy(dict(v))
                continue
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = _deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def _option_str(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _check_storage(raw: Any, *, base_path: str, where: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The non-secret storage options and the secrets' variables of a ``storage:`` block."""
    if raw is None:
        return {}, {}
    if not isinstance(raw, Mapping):
        raise FleetConfigError(where, f"storage: expected a mapping with provider: local|s3|gcs|hdfs, got {raw!r}")
    provider = raw.get("provider", "local")
    if provider not in _STORAGE_FIELDS:
        raise FleetConfigError(
            where,
            f"storage.provider: expected one of local, s3, gcs, hdfs, got {provider!r}"
            f"{_closest(provider, _STORAGE_FIELDS)}",
        )
    known = {"provider", "conditional_put", *_STORAGE_FIELDS[provider], *_STORAGE_SECRETS[provider]}
    _refuse_unknown(raw, known, where=where, what=f"storage (provider {provider})")
    scheme = urlparse(base_path).scheme.lower()
    if len(scheme) == 1:
        scheme = ""
    if scheme not in _SCHEMES[provider]:
        expected = " or ".join(f"{s}://" if s else "a local path" for s in _SCHEMES[provider])
        raise FleetConfigError(
            where, f"storage.provider {provider!r} does not match base_path {base_path!r}: expected {expected}"
        )
    opts: dict[str, Any] = {}
    secrets: dict[str, str] = {}
    for k, v in raw.items():
        if k == "provider" or v is None:
            continue
        if k.endswith("_env"):
            if not isinstance(v, str) or not _ENV_NAME.fullmatch(v):
                raise FleetConfigError(
                    where,
                    f"storage.{k}: expected the NAME of an environment variable ([A-Za-z_][A-Za-z0-9_]*), got a "
                    "value that is not one (not shown: secrets never go into the config, put them in the environment)",
                )
            secrets[k.removesuffix("_env")] = v
        elif k == "conditional_put" and isinstance(v, bool):
            opts[k] = "true" if v else "false"
        else:
            opts[k] = v
    if provider == "s3" and ("access_key" in secrets) != ("secret_key" in secrets):
        raise FleetConfigError(where, "storage: access_key_env and secret_key_env go together: set both or neither")
    try:  # the option types (a boolean that is not one, an integer that is not one)
        from lake_orchestration.io.storage_options import parse_storage_options

        parse_storage_options(opts, source=f"{where}: storage")
    except LakeOrchestrationError as err:
        raise FleetConfigError(where, str(err)) from err
    return opts, secrets


def _check_entry(entry: Mapping[str, Any], *, where: str) -> FleetTable:
    _refuse_unknown(entry, ENTRY_KEYS, where=where, what="table entry")
    name = entry.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise FleetConfigError(where, f"name: expected letters, digits and underscores only, got {name!r}")
    base_path = entry.get("base_path")
    if not isinstance(base_path, str) or not base_path.strip():
        raise FleetConfigError(where, f"base_path: expected a path or URI (text), got {base_path!r}")
    fmt = entry.get("format", "hudi")
    if fmt not in FORMATS:
        raise FleetConfigError(where, f"format: expected hudi or paimon, got {fmt!r}")
    passthrough = entry.get("passthrough_keys") or []
    if not isinstance(passthrough, list) or any(
        not isinstance(k, str) or not k.startswith(HOODIE_PREFIX) for k in passthrough
    ):
        raise FleetConfigError(where, f"passthrough_keys: expected a list of Hudi keys (hoodie.*), got {passthrough!r}")
    maps: dict[str, dict[str, str]] = {}
    for m in OPTION_MAPS:
        raw = entry.get(m) or {}
        if not isinstance(raw, Mapping):
            raise FleetConfigError(where, f"{m}: expected a mapping of Hudi keys (hoodie.*), got {raw!r}")
        out: dict[str, str] = {}
        for k, v in raw.items():
            if not isinstance(k, str) or not k.startswith(HOODIE_PREFIX):
                raise FleetConfigError(where, f"{m}: expected Hudi's keys (hoodie.*), got key {k!r}")
            if not isinstance(v, str | int | float | bool):
                raise FleetConfigError(where, f"{m}.{k}: expected a string, number or boolean, got {type(v).__name__}")
            out[k] = _option_str(v)
        try:
            check_option_keys(
                out, source=m, escape="the table's passthrough_keys: [KEY, ...]", passthrough=set(passthrough)
            )
        except LakeOrchestrationError as err:
            raise FleetConfigError(where, str(err)) from err
        maps[m] = out
    if fmt == "paimon":
        hudi_only = [m for m in OPTION_MAPS if maps[m]]
        if hudi_only:
            raise FleetConfigError(
                where, f"{', '.join(hudi_only)}: Hudi options, not taken by a format: paimon table: expected none"
            )
    storage_opts, secret_env = _check_storage(entry.get("storage"), base_path=base_path, where=where)
    policy = TablePolicy.from_mapping(entry.get("policy"), where=where)
    # clustering's map first: the lowest priority in the merged options (compaction, clean, archive as before)
    service_maps = {
        m.removesuffix("_options"): maps[m]
        for m in ("clustering_options", "compaction_options", "clean_options", "archive_options")
    }
    merged = {k: v for m in service_maps.values() for k, v in m.items()}
    return FleetTable(
        name=name,
        base_path=base_path,
        format=fmt,
        storage_options=storage_opts,
        secret_env=secret_env,
        options=merged,
        service_maps=service_maps,
        policy=policy,
        entry=copy.deepcopy(dict(entry)),
    )


def _norm_path(p: str) -> str:
    p = p.strip().rstrip("/")
    if p.startswith("s3a://"):
        p = "s3://" + p[len("s3a://") :]
    if p.startswith("file://"):
        p = p[len("file://") :]
    return p


def rediscover_interval_minutes(d: Mapping[str, Any], *, where: str) -> float:
    """A ``discover:`` entry's ``rediscover_interval_minutes`` (default :data:`DEFAULT_REDISCOVER_MINUTES`; 0: the
    prefix is searched when the definitions load only).

    Raises:
        FleetConfigError: not a number >= 0.
    """
    v = d.get("rediscover_interval_minutes", DEFAULT_REDISCOVER_MINUTES)
    if isinstance(v, bool) or not isinstance(v, int | float) or v < 0:
        raise FleetConfigError(where, f"rediscover_interval_minutes: expected a number of minutes >= 0, got {v!r}")
    return float(v)


def _discover_entries(
    discover: Any, *, where: str, defaults: Mapping[str, Any], listed: Mapping[str, str], first_index: int = 0
) -> list[dict[str, Any]]:
    """The entries of the tables found under each ``discover:`` prefix (not those whose base path is listed)."""
    from lake_orchestration.fleet.discovery import discover_tables

    if discover is None:
        return []
    if not isinstance(discover, list):
        raise FleetConfigError(
            where, f"discover: expected a list of {{prefix, storage, format, exclude}}, got {discover!r}"
        )
    out: list[dict[str, Any]] = []
    listed_paths = {_norm_path(p): n for n, p in listed.items()}
    for i, d in enumerate(discover, start=first_index):
        label = f"discover[{i}]"
        if not isinstance(d, Mapping) or not isinstance(d.get("prefix"), str):
            raise FleetConfigError(where, f"{label}: expected a mapping with prefix: (a path or URI), got {d!r}")
        _refuse_unknown(d, DISCOVER_KEYS, where=f"{where}: {label}", what="discover entry")
        rediscover_interval_minutes(d, where=f"{where}: {label}")
        fmt = d.get("format", "auto")
        if fmt not in ("auto", *FORMATS):
            raise FleetConfigError(where, f"{label}.format: expected auto, hudi or paimon, got {fmt!r}")
        exclude = d.get("exclude") or []
        if not isinstance(exclude, list) or any(not isinstance(g, str) for g in exclude):
            raise FleetConfigError(where, f"{label}.exclude: expected a list of globs, got {exclude!r}")
        from lake_orchestration.fleet.discovery import DEFAULT_MAX_DEPTH

        max_depth = d.get("max_depth", DEFAULT_MAX_DEPTH)
        if not isinstance(max_depth, int) or isinstance(max_depth, bool) or max_depth < 1:
            raise FleetConfigError(where, f"{label}.max_depth: expected a whole number >= 1, got {max_depth!r}")
        storage = d.get("storage", defaults.get("storage"))
        storage_opts, secret_env = _check_storage(storage, base_path=d["prefix"], where=f"{where}: {label}")
        probe_table = FleetTable(
            name="discover", base_path=d["prefix"], storage_options=storage_opts, secret_env=secret_env
        )
        try:
            found = discover_tables(probe_table.storage(), d["prefix"], format=fmt, max_depth=max_depth)
        except LakeOrchestrationError as err:
            raise FleetConfigError(where, f"{label}: {err}") from err
        for t in found:
            if any(fnmatch.fnmatchcase(t.name, g) or fnmatch.fnmatchcase(t.relative_path, g) for g in exclude):
                continue
            if _norm_path(t.base_path) in listed_paths:
                continue  # listed (or found under an earlier prefix): the first entry wins
            listed_paths[_norm_path(t.base_path)] = t.name
            entry: dict[str, Any] = {"name": t.name, "base_path": t.base_path, "format": t.format}
            if storage is not None:
                entry["storage"] = copy.deepcopy(dict(storage))
            out.append(entry)
    return out


def discover_prefix(
    raw: Mapping[str, Any], index: int, *, where: str, listed: Mapping[str, str]
) -> list[dict[str, Any]]:
    """The entries of the tables found now under the prefix ``raw["discover"][index]`` (of a config's top level, as
    :func:`expand_entries` takes it), ``defaults`` laid under each; not those whose base path is in ``listed``
    (name -> base path: the ``tables:`` entries, and the tables of the prefixes before it). The Dagster fleet model
    calls it to search a prefix again (``rediscover_interval_minutes``).

    Raises:
        FleetConfigError: the prefix cannot be listed, or a table found cannot be named.
    """
    defaults = raw.get("defaults") or {}
    found = _discover_entries(
        [raw["discover"][index]], where=where, defaults=defaults, listed=listed, first_index=index
    )
    return [_deep_merge(_defaults_for(defaults, e["format"]), e) for e in found]


def _defaults_for(defaults: Mapping[str, Any], fmt: Any) -> Mapping[str, Any]:
    """The defaults a table of format ``fmt`` takes: a Paimon table takes no Hudi option map (Paimon keeps its
    options in the table's schema)."""
    if fmt != "paimon":
        return defaults
    return {k: v for k, v in defaults.items() if k not in (*OPTION_MAPS, "passthrough_keys")}


def expand_entries(raw: Mapping[str, Any], *, where: str) -> list[dict[str, Any]]:
    """The config file's top level (``defaults:`` + ``tables:`` + ``discover:``) -> one dict per table, in the shape
    of the Dagster code location's table entries (``HudiTableConfig`` + ``policy:``): ``defaults`` deep-merged under
    each table (the table's value wins; a Paimon table takes none of the defaults' Hudi option maps), then the
    tables discovered under each ``discover:`` prefix that are not
    listed (by base path), with ``defaults`` under them too. Every entry is checked (:func:`tables_from_entries`).

    Raises:
        FleetConfigError: naming ``where``, the entry and what was expected (unknown keys with the closest known).
    """
    if not isinstance(raw, Mapping):
        raise FleetConfigError(where, f"expected a mapping with 'tables:' and/or 'discover:', got {type(raw).__name__}")
    _refuse_unknown(raw, TOP_LEVEL_KEYS, where=where, what="top level")
    defaults = raw.get("defaults") or {}
    if not isinstance(defaults, Mapping):
        raise FleetConfigError(where, f"defaults: expected a mapping of table keys, got {defaults!r}")
    bad = [k for k in defaults if k in ("name", "base_path")]
    if bad:
        raise FleetConfigError(where, f"defaults: {bad[0]} is per table, expected it under tables:")
    _refuse_unknown(defaults, ENTRY_KEYS, where=where, what="defaults")
    tables = raw.get("tables") or []
    if not isinstance(tables, list):
        raise FleetConfigError(where, f"tables: expected a list of tables (name, base_path, ...), got {tables!r}")
    if not tables and not raw.get("discover"):
        raise FleetConfigError(where, "expected 'tables:' (a list of tables) or 'discover:' (prefixes to search)")
    entries: list[dict[str, Any]] = []
    labels: list[str] = []
    for i, t in enumerate(tables):
        label = f"tables[{i}]"
        if not isinstance(t, Mapping):
            raise FleetConfigError(where, f"{label}: expected a mapping with name and base_path, got {t!r}")
        if isinstance(t.get("name"), str):
            label += f" ({t['name']!r})"
        entries.append(_deep_merge(_defaults_for(defaults, t.get("format", "hudi")), t))
        labels.append(label)
    listed = {str(e.get("name")): str(e.get("base_path", "")) for e in entries}
    for e in _discover_entries(raw.get("discover"), where=where, defaults=defaults, listed=listed):
        entries.append(_deep_merge(_defaults_for(defaults, e["format"]), e))
        labels.append(f"discovered {e['name']!r} ({e['base_path']})")
    tables_from_entries(entries, where=where, labels=labels)
    return entries


def tables_from_entries(
    entries: list[Mapping[str, Any]], *, where: str, labels: list[str] | None = None
) -> list[FleetTable]:
    """The :class:`FleetTable` of each expanded entry; names unique (a clash names both paths)."""
    out: list[FleetTable] = []
    seen: dict[str, tuple[str, str]] = {}
    for i, e in enumerate(entries):
        label = labels[i] if labels else f"tables[{i}]"
        t = _check_entry(e, where=f"{where}: {label}")
        if t.name in seen:
            other_label, other_path = seen[t.name]
            raise FleetConfigError(
                where,
                f"{label}: duplicate table name {t.name!r}: {t.base_path} and {other_path} ({other_label}); "
                "expected unique names (name one of them under tables:, or exclude it from discover:)",
            )
        seen[t.name] = (label, t.base_path)
        out.append(t)
    return out


def read_config_file(path: str | Path) -> dict[str, Any]:
    """The YAML mapping of a config file (errors name the file and the line)."""
    where = str(path)
    try:
        text = Path(path).read_text()
    except OSError as err:
        raise FleetConfigError(where, f"cannot read the config file ({err.strerror or err})") from err
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise FleetConfigError(where, f"not valid YAML{at}: {problem}") from err
    if not isinstance(data, Mapping):
        raise FleetConfigError(
            where, f"expected a mapping with 'tables:' and/or 'discover:', got {type(data).__name__}"
        )
    return dict(data)


def load_fleet(path: str | Path) -> list[FleetTable]:
    """The tables of a fleet config file (discovery included)."""
    where = str(path)
    return tables_from_entries(expand_entries(read_config_file(path), where=where), where=where)
