"""Typed configuration of the Dagster layer: tables, their storage, and per-service options under Hudi's keys.

One :class:`HudiTableConfig` per table. Its ``storage`` is a discriminated union on ``provider``
(:class:`LocalStorage`, :class:`S3Storage`, :class:`GcsStorage`, :class:`HdfsStorage`) mapped to the
``storage_options`` that :class:`~lake_orchestration.hudi.table.HudiTable` hands to ``pyarrow.fs``. Secrets are
never values of the config: a secret field names the environment variable that holds it (``secret_key_env:
AWS_SECRET_ACCESS_KEY``) and is read when a run opens the table, so no secret is in YAML, in the Dagster UI, in run
config or in metadata.

The same models are the attributes of the ``HudiTablesComponent`` (``defs.yaml``) and the entries of the code
location's config file (:func:`load_config_file`). They are ``dg.Model`` (pydantic, extra keys refused), not
``dg.Config``: they configure definitions when the code location loads, not runs, and Dagster's run-config schema
cannot express an optional discriminated union, a datetime or a string-or-number option value.
"""

import dataclasses
import os
import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal
from urllib.parse import urlparse

import dagster as dg
import pydantic
import yaml

from lake_orchestration.config.keys import HOODIE_PREFIX, HoodieKey
from lake_orchestration.config.options import check_option_keys
from lake_orchestration.errors import LakeOrchestrationError

if TYPE_CHECKING:
    from lake_orchestration.config.options import HeartbeatConfig
    from lake_orchestration.hudi.services.archive.config import ArchiveConfig
    from lake_orchestration.hudi.services.bootstrap.config import BootstrapConfig
    from lake_orchestration.hudi.services.clean.config import CleanConfig
    from lake_orchestration.hudi.services.clustering.config import ClusteringConfig
    from lake_orchestration.hudi.services.compaction.config import CompactionConfig
    from lake_orchestration.hudi.services.rollback.config import RollbackConfig
    from lake_orchestration.io.storage_options import StorageOptions

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DAGSTER_NAME = re.compile(r"^[A-Za-z0-9_]+$")

OptionValue = str | int | float | bool
"""A service option as YAML gives it; normalized to the string Hudi reads (``true``/``false`` for booleans)."""


class HudiConfigError(LakeOrchestrationError, ValueError):
    """A table configuration (a config file, a ``defs.yaml`` or a :class:`HudiTableConfig`) is invalid."""

    def __init__(self, where: str, detail: str) -> None:
        self.where = where
        self.detail = detail
        super().__init__(f"{where}: {detail}")


def _option_str(v: OptionValue) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _normalize_options(value: Any, what: str) -> Any:
    if not isinstance(value, Mapping):
        return value
    out: dict[str, str] = {}
    for k, v in value.items():
        if not isinstance(k, str) or not k.startswith(HOODIE_PREFIX):
            raise ValueError(f"{what} take Hudi's keys (hoodie.*); got key {k!r}")
        if not isinstance(v, str | int | float | bool):
            raise ValueError(f"{what}: {k} must be a string, number or boolean, got {type(v).__name__}")
        out[k] = _option_str(v)
    return out


def _env_secret(var: str | None, *, table: str, field: str) -> str | None:
    if var is None:
        return None
    value = os.environ.get(var)
    if not value:
        raise HudiConfigError(
            f"table {table!r}",
            f"storage.{field} names the environment variable {var!r}, which is not set (or empty) in this process; "
            "expected it to hold the secret",
        )
    return value


ConditionalPut = Literal["auto", "true", "false"]
"""The ``conditional_put`` storage option (``lake_orchestration.io.object_store``): ``auto`` probes an S3-compatible
endpoint once for conditional writes, ``true`` trusts the store, ``false`` declares a store without them (one
writer only: creates are a check then a write, and the file-based table lock refuses such a store)."""


def _conditional_put(v: Any) -> Any:
    if isinstance(v, bool):  # YAML's `conditional_put: false`
        return "true" if v else "false"
    return v


def _check_env_name(v: str | None) -> str | None:
    if v is not None and not _ENV_NAME.fullmatch(v):
        raise ValueError(
            "expected the NAME of an environment variable ([A-Za-z_][A-Za-z0-9_]*), got a value that is not one "
            f"({len(v)} characters, not shown: secrets never go into the config, put them in the environment)"
        )
    return v


class LocalStorage(dg.Resolvable, dg.Model):
    """A table on the local file system (or a mounted one): no options."""

    provider: Literal["local"] = "local"
    """Discriminator."""

    def to_storage_options(self, *, table: str) -> dict[str, Any]:
        """The ``storage_options`` of ``HudiTable`` (none for local paths)."""
        return {}


class S3Storage(dg.Resolvable, dg.Model):
    """A table on S3 (``s3://`` or ``s3a://``): options of ``pyarrow.fs.S3FileSystem``.

    Without ``access_key_env``/``secret_key_env`` pyarrow uses the AWS default credential chain (environment,
    ``~/.aws``, instance or pod role).
    """

    provider: Literal["s3"] = "s3"
    """Discriminator."""
    region: str | None = None
    """AWS region (``region``)."""
    endpoint_override: str | None = None
    """S3-compatible endpoint, e.g. ``localhost:9000`` for MinIO."""
    scheme: Literal["https", "http"] | None = None
    """Connection scheme (``http`` for a local MinIO)."""
    anonymous: bool | None = None
    """Unsigned requests (public buckets)."""
    role_arn: str | None = None
    """An IAM role to assume."""
    force_virtual_addressing: bool | None = None
    """Virtual-hosted-style addressing (some S3-compatible stores need it)."""
    access_key_env: str | None = None
    """Name of the environment variable holding the access key id (``AWS_ACCESS_KEY_ID``)."""
    secret_key_env: str | None = None
    """Name of the environment variable holding the secret access key (``AWS_SECRET_ACCESS_KEY``)."""
    session_token_env: str | None = None
    """Name of the environment variable holding a session token (``AWS_SESSION_TOKEN``)."""
    conditional_put: ConditionalPut | None = None
    """Conditional writes of the store (default ``auto``): ``false`` for an S3-compatible store without
    ``If-None-Match`` (single writer only), ``true`` to skip the one-time probe of a custom endpoint."""

    _conditional = pydantic.field_validator("conditional_put", mode="before")(_conditional_put)

    @pydantic.field_validator("access_key_env", "secret_key_env", "session_token_env")
    @classmethod
    def _env_names(cls, v: str | None) -> str | None:
        return _check_env_name(v)

    @pydantic.model_validator(mode="after")
    def _pair(self) -> "S3Storage":
        if (self.access_key_env is None) != (self.secret_key_env is None):
            raise ValueError("access_key_env and secret_key_env go together: set both or neither")
        return self

    def to_storage_options(self, *, table: str) -> dict[str, Any]:
        """The ``storage_options`` of ``HudiTable``, secrets read from the environment now."""
        opts: dict[str, Any] = {
            k: getattr(self, k)
            for k in (
                "region",
                "endpoint_override",
                "scheme",
                "anonymous",
                "role_arn",
                "force_virtual_addressing",
                "conditional_put",
            )
            if getattr(self, k) is not None
        }
        for key in ("access_key", "secret_key", "session_token"):
            v = _env_secret(getattr(self, f"{key}_env"), table=table, field=f"{key}_env")
            if v is not None:
                opts[key] = v
        return opts


class GcsStorage(dg.Resolvable, dg.Model):
    """A table on Google Cloud Storage (``gs://``): options of ``pyarrow.fs.GcsFileSystem``.

    Without ``access_token_env`` pyarrow uses Google's default credentials (``GOOGLE_APPLICATION_CREDENTIALS``,
    the metadata server).
    """

    provider: Literal["gcs"] = "gcs"
    """Discriminator."""
    project_id: str | None = None
    """Project for bucket creation (``project_id``)."""
    endpoint_override: str | None = None
    """A GCS-compatible endpoint (e.g. a local emulator)."""
    scheme: Literal["https", "http"] | None = None
    """Connection scheme."""
    anonymous: bool | None = None
    """Unauthenticated access (public buckets)."""
    default_bucket_location: str | None = None
    """Location of buckets pyarrow creates."""
    target_service_account: str | None = None
    """A service account to impersonate."""
    access_token_env: str | None = None
    """Name of the environment variable holding an OAuth access token."""
    credential_token_expiration: str | None = None
    """When that access token expires, ISO 8601 (``2030-01-01T00:00:00+00:00``); required with ``access_token_env``."""
    conditional_put: ConditionalPut | None = None
    """Conditional writes of the store (default ``auto``: GCS has them); ``false`` for a GCS-compatible store
    without ``x-goog-if-generation-match`` (single writer only)."""

    _conditional = pydantic.field_validator("conditional_put", mode="before")(_conditional_put)

    @pydantic.field_validator("access_token_env")
    @classmethod
    def _env_names(cls, v: str | None) -> str | None:
        return _check_env_name(v)

    @pydantic.field_validator("credential_token_expiration")
    @classmethod
    def _iso(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                datetime.fromisoformat(v)
            except ValueError as err:
                raise ValueError("expected an ISO 8601 date-time, e.g. 2030-01-01T00:00:00+00:00") from err
        return v

    @pydantic.model_validator(mode="after")
    def _pair(self) -> "GcsStorage":
        if (self.access_token_env is None) != (self.credential_token_expiration is None):
            raise ValueError("access_token_env and credential_token_expiration go together: set both or neither")
        return self

    def to_storage_options(self, *, table: str) -> dict[str, Any]:
        """The ``storage_options`` of ``HudiTable``, the token read from the environment now."""
        opts: dict[str, Any] = {
            k: getattr(self, k)
            for k in (
                "project_id",
                "endpoint_override",
                "scheme",
                "anonymous",
                "default_bucket_location",
                "target_service_account",
                "conditional_put",
            )
            if getattr(self, k) is not None
        }
        if self.credential_token_expiration is not None:
            opts["credential_token_expiration"] = datetime.fromisoformat(self.credential_token_expiration)
        token = _env_secret(self.access_token_env, table=table, field="access_token_env")
        if token is not None:
            opts["access_token"] = token
        return opts


class HdfsStorage(dg.Resolvable, dg.Model):
    """A table on HDFS (``hdfs://host:port/path``): options of ``pyarrow.fs.HadoopFileSystem``.

    Host and port come from the base path. Kerberos uses a ticket cache file (``kerb_ticket``), never a password.
    """

    provider: Literal["hdfs"] = "hdfs"
    """Discriminator."""
    user: str | None = None
    """HDFS user name."""
    kerb_ticket: str | None = None
    """Path of the Kerberos ticket cache."""
    replication: int | None = None
    """Replication of the files written."""
    buffer_size: int | None = None
    """Read/write buffer size in bytes (0: the HDFS default)."""
    default_block_size: int | None = None
    """Block size of the files written."""
    extra_conf: dict[str, str] = {}  # noqa: RUF012 - pydantic copies field defaults
    """Extra Hadoop configuration (``dfs.*`` ...)."""
    conditional_put: ConditionalPut | None = None
    """HDFS has no exclusive create through pyarrow: timeline files can only be created with ``false`` (one writer
    only, declared by the user; creates are then a check followed by a write)."""

    _conditional = pydantic.field_validator("conditional_put", mode="before")(_conditional_put)

    def to_storage_options(self, *, table: str) -> dict[str, Any]:
        """The ``storage_options`` of ``HudiTable``."""
        opts: dict[str, Any] = {
            k: getattr(self, k)
            for k in ("user", "kerb_ticket", "replication", "buffer_size", "default_block_size", "conditional_put")
            if getattr(self, k) is not None
        }
        if self.extra_conf:
            opts["extra_conf"] = dict(self.extra_conf)
        return opts


StorageConfig = Annotated[LocalStorage | S3Storage | GcsStorage | HdfsStorage, pydantic.Field(discriminator="provider")]
"""Storage of a table: one of the providers, chosen by ``provider: local | s3 | gcs | hdfs``."""

_SCHEMES = {"local": ("", "file"), "s3": ("s3", "s3a"), "gcs": ("gs", "gcs"), "hdfs": ("hdfs",)}


_PARSED_COMPACTION_OPTIONS: set[frozenset[tuple[str, str]]] = set()
"""Compaction option maps that parsed (the check of :meth:`HudiTableConfig._consistent`, done once per map)."""


class HudiTableConfig(dg.Resolvable, dg.Model):
    """One Hudi table managed by lake_orchestration (an entry of ``tables:``)."""

    name: str
    """Dagster-facing table name (asset keys ``hudi/<name>``, job names ``<name>__...``): ``[A-Za-z0-9_]+``."""
    base_path: str
    """Table base path or URI (``/data/t``, ``s3://bucket/t``, ``gs://bucket/t``, ``hdfs://nn:8020/t``)."""
    format: Literal["hudi", "paimon"] = "hudi"
    """Table format. ``paimon``: an Apache Paimon primary-key table directory (``<warehouse>/<db>.db/<table>``); it
    gets the table asset ``paimon/<name>`` with its compaction health, the compaction asset, job, schedule
    (``schedule_cron``), new-snapshot sensor and checks of :mod:`lake_orchestration.dagster.paimon`, and takes none
    of the Hudi service options (Paimon keeps its options in the table's schema)."""
    storage: StorageConfig | None = None
    """Storage options; default: none (local paths, or pyarrow's default credential chain for object stores)."""
    passthrough_keys: list[str] = []  # noqa: RUF012 - pydantic copies field defaults
    """``hoodie.*`` keys lake_orchestration does not model, accepted in the ``*_options`` maps as given (any other
    unknown ``hoodie.*`` key is refused with the closest known key: a typo would silently keep Hudi's default).
    Declared before the option maps, which are checked against it."""
    compaction_options: dict[str, OptionValue] = {}  # noqa: RUF012 - pydantic copies field defaults
    """Compaction options under Hudi's keys (``hoodie.compact.inline.max.delta.commits`` ...)."""
    clean_options: dict[str, OptionValue] = {}  # noqa: RUF012
    """Clean options under Hudi's keys (``hoodie.cleaner.policy``, ``hoodie.cleaner.commits.retained`` ...)."""
    archive_options: dict[str, OptionValue] = {}  # noqa: RUF012
    """Archive options under Hudi's keys (``hoodie.keep.min.commits``, ``hoodie.keep.max.commits`` ...)."""
    bootstrap_options: dict[str, OptionValue] = {}  # noqa: RUF012
    clustering_options: dict[str, OptionValue] = {}  # noqa: RUF012
    """Clustering options under Hudi's keys (``hoodie.clustering.*``, ``hoodie.layout.optimize.strategy``). Off unless
    ``hoodie.clustering.async.enabled: true`` (Hudi's switch of the async clustering service, which the table's
    clustering asset, schedule and sensors are): then the table gets ``hudi/<name>/clustering`` and its job, schedule
    (``clustering_cron``) and sensors, and Hudi's async trigger applies (``hoodie.clustering.async.max.commits``
    commits since the last clustering, default 4)."""
    clustering_cron: str = "0 */4 * * *"
    """Cron of the schedule-clustering job (a table with ``hoodie.clustering.async.enabled``)."""
    """Bootstrap of the table from an existing parquet dataset (job ``<name>__bootstrap``, run once; only when
    ``hoodie.bootstrap.base.path`` names the source): ``hoodie.bootstrap.mode.selector`` and its regex keys, and the
    new table's write keys (``hoodie.datasource.write.recordkey.field`` ...; ``hoodie.table.name`` defaults to
    ``name``)."""
    upstream_assets: list[str] = []  # noqa: RUF012
    """Asset keys (``raw/trips``) of the jobs that write the table: deps of ``hudi/<name>``, for lineage."""
    compaction_seq: Literal["FIFO", "LIFO"] = "FIFO"
    """Order in which the sensor requests pending plans (``--seq``)."""
    max_plans_per_tick: int = pydantic.Field(default=5, ge=1)
    """Run requests the pending-compaction sensor emits at most per evaluation."""
    engine: Literal["spark", "local"] = "local"
    """Where compaction operations and clean deletes run: ``local`` (default) in-process, the fastest on one machine
    (its light steps share the run's process too); ``spark`` on the ``pyspark`` resource, the choice for a cluster
    (``spark_config: {spark.master: ...}``)."""
    schedule_cron: str = "*/15 * * * *"
    """Cron of the schedule-compaction job."""
    clean_cron: str | None = "0 * * * *"
    """Cron of the clean job's schedule (None: no schedule)."""
    archive_cron: str | None = "30 * * * *"
    """Cron of the archive job's schedule (None: no schedule)."""
    clean_dry_run: bool = True
    """Clean runs only report what they would delete unless this is false (or the run config says so)."""
    archive_dry_run: bool = True
    """Archive runs only report what they would archive unless this is false (or the run config says so)."""
    max_small_archive_files: int = pydantic.Field(default=20, ge=0)
    """Asset check: at most this many archive files up to ``hoodie.archive.merge.small.file.limit.bytes``."""
    max_pending_plan_age_seconds: int = 24 * 3600
    """Asset check: the oldest pending compaction plan may not be older than this."""
    max_log_files_per_slice: int = 50
    """Asset check: no latest file slice may have more log files than this."""
    max_active_timeline_instants: int = 30
    """Asset check: the active timeline length bound (``hoodie.keep.max.commits``)."""
    heartbeat_interval_ms: int | None = pydantic.Field(default=None, ge=1)
    """``hoodie.client.heartbeat.interval_in_ms`` of the table's writers and services (>= 1: 0 would judge live
    writes stale). Not a second setting: it is that key, laid into every service's options (:meth:`service_options`),
    so the services beat and the stale-write sensor judges by one value; setting the key in an options map works as
    well (both set: they must agree). Default: the key's, else Hudi's 60000."""
    heartbeat_tolerable_misses: int | None = pydantic.Field(default=None, ge=1)
    """``hoodie.client.heartbeat.tolerable.misses`` (>= 1), as ``heartbeat_interval_ms`` (default: Hudi's 2)."""
    inflight_timeout_seconds: int = pydantic.Field(default=6 * 3600, ge=1)
    """A pending write without a heartbeat file is stale after this long."""
    retry_max_retries: int = pydantic.Field(default=2, ge=0)
    """Dagster retries of a failed service step (compaction partition, schedule, rollback)."""
    retry_delay_seconds: float = pydantic.Field(default=10.0, ge=0)
    """Delay before the first retry; doubles on each further retry (exponential backoff)."""
    policy: dict[str, Any] = {}  # noqa: RUF012
    """The table's fleet policy (:class:`~lake_orchestration.fleet.config.TablePolicy`: ``weight``, ``pool`` and the
    health thresholds), read by the fleet model (:mod:`lake_orchestration.dagster.fleet`); checked when loaded."""

    @pydantic.field_validator("policy")
    @classmethod
    def _policy(cls, v: dict[str, Any]) -> dict[str, Any]:
        if not v:
            return v
        from lake_orchestration.fleet.config import TablePolicy

        try:
            TablePolicy.from_mapping(v, where="policy")
        except LakeOrchestrationError as err:
            raise ValueError(str(err).removeprefix("policy: ")) from err
        return v

    @pydantic.field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _DAGSTER_NAME.fullmatch(v):
            raise ValueError("expected letters, digits and underscores only (a Dagster name)")
        return v

    @pydantic.field_validator("passthrough_keys")
    @classmethod
    def _passthrough(cls, v: list[str]) -> list[str]:
        bad = [k for k in v if not k.startswith(HOODIE_PREFIX)]
        if bad:
            raise ValueError(f"expected Hudi keys (hoodie.*), got {bad}")
        return v

    @pydantic.field_validator(
        "compaction_options",
        "clean_options",
        "archive_options",
        "bootstrap_options",
        "clustering_options",
        mode="before",
    )
    @classmethod
    def _options(cls, v: Any, info: pydantic.ValidationInfo) -> Any:
        if isinstance(v, Mapping) and not v:
            return {}  # nothing to check (most tables of a fleet leave most maps empty)
        out = _normalize_options(v, str(info.field_name))
        if isinstance(out, Mapping):
            name = info.data.get("name")
            try:
                check_option_keys(
                    out,
                    source=f"{info.field_name} of table {name!r}" if name else str(info.field_name),
                    escape="the table's passthrough_keys: [KEY, ...]",
                    passthrough=set(info.data.get("passthrough_keys") or ()),
                )
            except LakeOrchestrationError as err:  # pydantic reports a ValueError with the field's location
                raise ValueError(str(err)) from err
        return out

    @pydantic.model_validator(mode="after")
    def _consistent(self) -> "HudiTableConfig":
        scheme = urlparse(self.base_path).scheme.lower()
        if len(scheme) == 1:  # a Windows drive letter
            scheme = ""
        if self.storage is not None and scheme not in _SCHEMES[self.storage.provider]:
            expected = " or ".join(f"{s}://" if s else "a local path" for s in _SCHEMES[self.storage.provider])
            raise ValueError(
                f"storage.provider {self.storage.provider!r} does not match base_path {self.base_path!r}: "
                f"expected {expected}"
            )
        if self.format == "paimon":
            hudi_only = [
                f
                for f in (
                    "compaction_options",
                    "clean_options",
                    "archive_options",
                    "bootstrap_options",
                    "clustering_options",
                )
                if getattr(self, f)
            ]
            if hudi_only:
                raise ValueError(
                    f"{', '.join(hudi_only)}: Hudi options, not taken by a format: paimon table (Paimon reads its "
                    "options from the table's schema): expected none"
                )
        for key, value in self._heartbeat_fields().items():
            field = (
                "heartbeat_interval_ms" if key == HoodieKey.HEARTBEAT_INTERVAL_MS.key else "heartbeat_tolerable_misses"
            )
            for name in (
                "compaction_options",
                "clean_options",
                "archive_options",
                "bootstrap_options",
                "clustering_options",
            ):
                given = getattr(self, name).get(key)
                if given is not None and _option_str(given) != value:
                    raise ValueError(
                        f"{field}={value} and {key}={_option_str(given)} in {name} disagree: expected one value "
                        f"(set one of them)"
                    )
        try:
            # parsed once per distinct option map (a fleet's tables mostly share their defaults)
            key = frozenset(self.service_options("compaction").items())
            if key not in _PARSED_COMPACTION_OPTIONS:
                self.compaction_config()
                if len(_PARSED_COMPACTION_OPTIONS) < 10_000:
                    _PARSED_COMPACTION_OPTIONS.add(key)
            if self.bootstrap_options:
                self.bootstrap_config()
            if self.clustering_options:
                self.clustering_config()
        except LakeOrchestrationError as err:
            raise ValueError(str(err)) from err
        return self

    def service_options(
        self, service: Literal["compaction", "clean", "archive", "clustering"] | None = None
    ) -> dict[str, str]:
        """The strings Hudi reads, as one write config (as Hudi has): archival reads the cleaner's and the compaction
        trigger's keys too, and a ``hoodie.metadata.enable`` set under any service applies to all. ``service``'s own
        map is laid over the others, so its keys win; without it, archive over clean over compaction over
        clustering."""
        maps = {
            "clustering": self.clustering_options,
            "compaction": self.compaction_options,
            "clean": self.clean_options,
            "archive": self.archive_options,
        }
        order = [m for name, m in maps.items() if name != service] + ([maps[service]] if service else [])
        out = {k: _option_str(v) for m in order for k, v in m.items()}
        for key, value in self._heartbeat_fields().items():
            out.setdefault(key, value)  # the same key: _consistent refused a disagreeing value
        return out

    def _heartbeat_fields(self) -> dict[str, str]:
        """The ``hoodie.client.heartbeat.*`` keys the table's heartbeat fields set."""
        if self.heartbeat_interval_ms is None and self.heartbeat_tolerable_misses is None:
            return {}  # the common case, without the key registry's lookups
        fields = {
            HoodieKey.HEARTBEAT_INTERVAL_MS.key: self.heartbeat_interval_ms,
            HoodieKey.HEARTBEAT_TOLERABLE_MISSES.key: self.heartbeat_tolerable_misses,
        }
        return {k: str(v) for k, v in fields.items() if v is not None}

    def heartbeat_config(self) -> "HeartbeatConfig":
        """The heartbeat settings every service of the table uses (the ``hoodie.client.heartbeat.*`` keys of
        :meth:`service_options`): how often a writer beats and when the stale-write sensor judges it dead.

        Raises:
            InvalidOptionError: a value that does not parse, naming the key and the value.
        """
        from lake_orchestration.config.options import HeartbeatConfig

        return HeartbeatConfig.from_options(self.service_options())

    # -- the core's typed configs (Hudi keys parsed here, at the edge; core code never sees these models) --------
    def compaction_config(self) -> "CompactionConfig":
        """The core compaction settings of :meth:`service_options` ``("compaction")``.

        Raises:
            InvalidOptionError: a value that does not parse, naming the key and the value.
        """
        from lake_orchestration.hudi.services.compaction.config import CompactionConfig

        return CompactionConfig.from_options(self.service_options("compaction"))

    @property
    def clustering_enabled(self) -> bool:
        """``hoodie.clustering.async.enabled`` is true in ``clustering_options``: the table gets its clustering
        asset, job, schedule and sensors (off by default, as in Hudi)."""
        value = self.clustering_options.get(HoodieKey.CLUSTERING_ASYNC_ENABLED.key)
        return value is not None and _option_str(value).strip().lower() == "true"

    def clustering_config(self) -> "ClusteringConfig":
        """The core clustering settings of :meth:`service_options` ``("clustering")``.

        Raises:
            InvalidOptionError: a value that does not parse, naming the key and the value.
        """
        from lake_orchestration.hudi.services.clustering.config import ClusteringConfig

        return ClusteringConfig.from_options(self.service_options("clustering"))

    def clean_config(self) -> "CleanConfig":
        """The core clean settings of :meth:`service_options` ``("clean")``.

        Raises:
            InvalidOptionError: a value that does not parse, naming the key and the value.
        """
        from lake_orchestration.hudi.services.clean.config import CleanConfig

        return CleanConfig.from_options(self.service_options("clean"))

    def archive_config(
        self, table_properties: Mapping[str, str], *, merge_enable: bool | None = None
    ) -> "ArchiveConfig":
        """The core archive settings: :meth:`service_options` ``("archive")`` over the table's ``hoodie.properties``
        over Hudi's defaults; ``merge_enable`` overrides ``hoodie.archive.merge.enable``.

        Raises:
            InvalidOptionError: a value that does not parse, naming the key and the value.
        """
        from lake_orchestration.hudi.services.archive.config import ArchiveConfig

        config = ArchiveConfig.from_options(self.service_options("archive"), table_properties=table_properties)
        return config if merge_enable is None else dataclasses.replace(config, merge_enable=merge_enable)

    def rollback_config(self) -> "RollbackConfig":
        """The core rollback settings of :meth:`service_options` (``hoodie.metadata.enable=false`` set under any
        service lets a table with a metadata table be rolled back).

        Raises:
            InvalidOptionError: a value that does not parse, naming the key and the value.
        """
        from lake_orchestration.hudi.services.rollback.config import RollbackConfig

        return RollbackConfig.from_options(self.service_options())

    def bootstrap_config(self) -> "BootstrapConfig | None":
        """The core bootstrap settings of ``bootstrap_options`` (table name defaulting to ``name``); None when no
        ``hoodie.bootstrap.base.path`` is configured (the table gets no bootstrap job).

        Raises:
            InvalidOptionError: a value that does not parse, naming the key and the value.
        """
        from lake_orchestration.hudi.services.bootstrap.config import BootstrapConfig

        opts = {k: _option_str(v) for k, v in self.bootstrap_options.items()}
        if not opts.get(HoodieKey.BOOTSTRAP_BASE_PATH.key, "").strip():
            return None
        opts.setdefault(HoodieKey.TABLE_NAME.key, self.name)
        for key, value in self._heartbeat_fields().items():
            opts.setdefault(key, value)
        return BootstrapConfig.from_options(opts)

    def storage_options(self) -> "StorageOptions":
        """The ``storage_options`` of ``HudiTable`` (secrets read from the environment now; never log them), typed
        by the one storage-options model the CLI and Airflow parse into (:func:`~lake_orchestration.io.
        storage_options.parse_storage_options`)."""
        from lake_orchestration.io.storage_options import is_secret_key, parse_storage_options

        opts = self.storage.to_storage_options(table=self.name) if self.storage is not None else {}
        return parse_storage_options(
            {k: v for k, v in opts.items() if not is_secret_key(k)},
            source=f"storage of table {self.name!r}",
            secrets={k: v for k, v in opts.items() if is_secret_key(k)},
        )

    def open_table(self) -> Any:
        """A fresh :class:`~lake_orchestration.hudi.table.HudiTable` on this table's storage
        (:class:`~lake_orchestration.paimon.table.PaimonTable` for ``format: paimon``)."""
        if self.format == "paimon":
            from lake_orchestration.paimon.table import PaimonTable

            return PaimonTable.open(self.base_path, storage_options=self.storage_options())
        from lake_orchestration.hudi.table import HudiTable

        return HudiTable(self.base_path, storage_options=self.storage_options())

    def retry_policy(self) -> dg.RetryPolicy:
        """The Dagster retry policy of this table's service steps."""
        return dg.RetryPolicy(
            max_retries=self.retry_max_retries, delay=self.retry_delay_seconds, backoff=dg.Backoff.EXPONENTIAL
        )


DEFAULT_SPARK_CONFIG: dict[str, str] = {
    "spark.master": "local[*]",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}
"""The embedded default Spark: local, every core, no UI, no progress bars in the run logs. Any ``spark.*`` key of
``spark_config`` overrides it."""


def normalize_spark_config(conf: Mapping[str, Any] | None, *, where: str = "spark_config") -> dict[str, str]:
    """``spark_config`` as strings over the embedded default; keys must be Spark's (``spark.*``), and
    ``spark.master`` a URL Spark accepts (checked here, not when the first step starts a JVM)."""
    out = dict(DEFAULT_SPARK_CONFIG)
    for k, v in (conf or {}).items():
        if not isinstance(k, str) or not k.startswith("spark."):
            raise HudiConfigError(where, f"expected Spark configuration keys (spark.*), got {k!r}")
        if not isinstance(v, str | int | float | bool):
            raise HudiConfigError(where, f"{k} must be a string, number or boolean, got {type(v).__name__}")
        out[k] = _option_str(v)
    from lake_orchestration.engines.spark_session import validate_spark_master
    from lake_orchestration.errors import EngineError

    try:
        validate_spark_master(out["spark.master"])
    except EngineError as err:
        raise HudiConfigError(where, str(err)) from None
    return out


class HudiTablesFile(dg.Model):
    """A whole config file (and the ``attributes:`` of the component): the tables and the Spark configuration."""

    tables: list[HudiTableConfig]
    """The tables."""
    spark_config: dict[str, OptionValue] = {}  # noqa: RUF012
    """``spark.*`` configuration of the ``pyspark`` resource over the default (``spark.master=local[*]``)."""
    fleet: bool | Literal["auto"] = "auto"
    """The fleet model (:mod:`lake_orchestration.dagster.fleet`: shared jobs, one sensor per service kind) or the
    per-table model; ``auto``: the fleet model from ``FLEET_AUTO_MIN_TABLES`` (20) tables on."""
    fleet_budget_per_tick: int = pydantic.Field(default=20, ge=1)
    """Runs a fleet sensor requests at most per tick."""


CONFIG_ENV_VAR = "LAKE_ORCHESTRATION_CONFIG"
"""Environment variable naming the code location's config file."""
DEPRECATED_CONFIG_ENV_VAR = "LAKE_ORCH_TABLES_YAML"
"""The former variable: still read (when ``LAKE_ORCHESTRATION_CONFIG`` is unset), deprecated."""
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader when PyYAML has it (about 10x faster on a fleet's config), else the pure-Python one."""
DEFAULT_CONFIG_FILE = "lake_orchestration.yaml"
"""Read from the code location's working directory when neither variable is set and the file exists."""


def _format_validation_error(err: pydantic.ValidationError) -> str:
    parts = []
    for e in err.errors(include_url=False):
        loc = ".".join(str(p) for p in e["loc"]) or "entry"
        msg = e["msg"].removeprefix("Value error, ")
        got = e.get("input")
        # never echo what was put in a secret's field (it may be the secret itself)
        secret = any(str(p).endswith("_env") for p in e["loc"])
        shown = "" if secret or isinstance(got, dict | list) or e["type"] == "missing" else f" (got {got!r})"
        parts.append(f"{loc}: {msg}{shown}")
    return "; ".join(parts)


def validate_tables(entries: Any, *, where: str) -> list[HudiTableConfig]:
    """Validate a ``tables:`` list; errors name ``where``, the entry and what was expected."""
    if not isinstance(entries, list) or not entries:
        raise HudiConfigError(
            where, f"expected 'tables:' to be a non-empty list of tables (name, base_path, ...), got {entries!r}"
        )
    tables: list[HudiTableConfig] = []
    seen: dict[str, int] = {}
    for i, entry in enumerate(entries):
        label = f"tables[{i}]"
        if isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
            label += f" ({entry['name']!r})"
        if not isinstance(entry, Mapping):
            raise HudiConfigError(where, f"{label}: expected a mapping with name and base_path, got {entry!r}")
        try:
            cfg = HudiTableConfig.model_validate(dict(entry))
        except pydantic.ValidationError as err:
            raise HudiConfigError(where, f"{label}: {_format_validation_error(err)}") from err
        if cfg.name in seen:
            raise HudiConfigError(where, f"{label}: duplicate table name {cfg.name!r} (also tables[{seen[cfg.name]}])")
        seen[cfg.name] = i
        tables.append(cfg)
    return tables


def load_config_file(path: str | Path, *, allow_list: bool = False) -> HudiTablesFile:
    """Read a config file: top level ``tables:`` (a list of :class:`HudiTableConfig` entries) and ``spark_config:``;
    with ``defaults:`` or ``discover:``, the entries are the fleet's (:func:`~lake_orchestration.fleet.config.
    expand_entries`: defaults deep-merged under each table, discovered tables added); ``fleet:`` and
    ``fleet_budget_per_tick:`` choose the model (:data:`TOP_LEVEL_KEYS`).

    Args:
        path: the YAML file.
        allow_list: also accept a bare top-level list of tables (the deprecated ``LAKE_ORCH_TABLES_YAML`` format).

    Raises:
        HudiConfigError: the file is missing, not YAML, or an entry is invalid (the message names the file, the
            entry and what was expected).
    """
    where = str(path)
    try:
        text = Path(path).read_text()
    except OSError as err:
        raise HudiConfigError(where, f"cannot read the config file ({err.strerror or err})") from err
    try:
        data = yaml.load(text, Loader=_YAML_LOADER)  # a safe loader (libyaml's when present)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise HudiConfigError(where, f"not valid YAML{at}: {problem}") from err
    if allow_list and isinstance(data, list):
        data = {"tables": data}
    if not isinstance(data, Mapping):
        raise HudiConfigError(
            where, f"expected a mapping with 'tables:' (and optionally 'spark_config:'), got {type(data).__name__}"
        )
    unknown = sorted(set(data) - set(TOP_LEVEL_KEYS))
    if unknown:
        raise HudiConfigError(where, f"unknown top-level keys {unknown}: expected {', '.join(TOP_LEVEL_KEYS)}")
    if "defaults" in data or "discover" in data:
        # the fleet's YAML: defaults laid under every table, tables discovered under prefixes
        from lake_orchestration.fleet.config import FleetConfigError, expand_entries

        fleet_keys = ("defaults", "tables", "discover", "spark_config")
        try:
            entries: Any = expand_entries({k: data[k] for k in fleet_keys if k in data}, where=where)
        except FleetConfigError as err:
            raise HudiConfigError(err.where, err.detail) from err
    elif "tables" not in data:
        raise HudiConfigError(where, "missing 'tables:' (a list of tables with name and base_path)")
    else:
        entries = data["tables"]
    tables = validate_tables(entries, where=where)
    spark = data.get("spark_config") or {}
    if not isinstance(spark, Mapping):
        raise HudiConfigError(where, f"spark_config: expected a mapping of spark.* keys, got {spark!r}")
    normalize_spark_config(spark, where=f"{where}: spark_config")
    fleet = data.get("fleet", "auto")
    if not isinstance(fleet, bool) and fleet != "auto":
        raise HudiConfigError(where, f"fleet: expected true, false or auto, got {fleet!r}")
    budget = data.get("fleet_budget_per_tick", 20)
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise HudiConfigError(where, f"fleet_budget_per_tick: expected a whole number >= 1, got {budget!r}")
    # the entries are validated: constructing the file does not validate each table again (a fleet has many)
    return HudiTablesFile.model_construct(
        tables=tables, spark_config=dict(spark), fleet=fleet, fleet_budget_per_tick=budget
    )


TOP_LEVEL_KEYS = ("tables", "spark_config", "defaults", "discover", "fleet", "fleet_budget_per_tick")
"""The top-level keys of the code location's config file: ``tables:`` and ``spark_config:``; the fleet's
``defaults:`` (laid under every table) and ``discover:`` (tables found under prefixes,
:func:`lake_orchestration.fleet.config.expand_entries`); ``fleet:`` (``true``, ``false``, ``auto``) and
``fleet_budget_per_tick:`` (:mod:`lake_orchestration.dagster.fleet`)."""
