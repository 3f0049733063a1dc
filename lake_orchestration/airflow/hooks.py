"""``HudiTableHook``: a Hudi table's location from an Airflow connection of type ``hudi``.

The connection holds everything about where the table is and how to reach it, and it is the only place secrets go:

* **host** (or ``base_path`` in the extra): the table's base path (``s3://bucket/tables/trips``, ``/data/trips``);
  an operator's ``base_path`` argument (templated: ``{{ var.value.trips_path }}``) wins, so one connection can
  serve the tables of a bucket;
* **login** / **password**: the object store's access key and secret key (``access_key`` / ``secret_key`` storage
  options); ``session_token`` in the extra;
* **extra**: ``{"storage_options": {"region": ..., "endpoint_override": ...}, "hoodie_options": {"hoodie.x": ...},
  "passthrough_keys": [...]}`` — the non-secret storage options of :class:`~lake_orchestration.io.storage.Storage`
  and the table's service options (``hoodie.cleaner.*``, ``hoodie.keep.*``, ``hoodie.compact.*`` ...), below an
  operator's ``options``. A ``hoodie.*`` key nothing reads (a typo: ``hoodie.compact.inline.max.delta.commit``) is
  refused with the closest known key, as the CLI's ``--option`` does; ``passthrough_keys`` lists the keys
  lake_orchestration does not model that are passed on purpose (the CLI's ``--option-passthrough``).

The connection form's labels (host: *Base path*, login: *Access key*, password: *Secret key*) are declared in the
provider info (:data:`lake_orchestration.airflow.provider.CONNECTION_FORM`), where Airflow 3.3 reads them.

Without login/password an S3 table uses the AWS default credential chain of the worker.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseHook

from lake_orchestration.config.keys import HOODIE_PREFIX
from lake_orchestration.config.options import check_option_keys
from lake_orchestration.errors import InvalidOptionError
from lake_orchestration.io.storage_options import parse_storage_options

if TYPE_CHECKING:
    from airflow.sdk import Connection

    from lake_orchestration.hudi.table import HudiTable


@dataclass(frozen=True, kw_only=True)
class HudiTableLocation:
    """Where a table is and how to open it (``storage_options`` may hold secrets: never log or XCom them)."""

    base_path: str
    storage_options: dict[str, Any] = field(default_factory=dict, repr=False)
    hoodie_options: dict[str, str] = field(default_factory=dict)
    """``hoodie.*`` service options of the connection (an operator's ``options`` win)."""

    def open_table(self) -> HudiTable:
        """A fresh :class:`~lake_orchestration.hudi.table.HudiTable` at ``base_path``."""
        from lake_orchestration.hudi.table import HudiTable

        return HudiTable(self.base_path, storage_options=self.storage_options)

    def service_options(self, overrides: Mapping[str, Any] | None = None) -> dict[str, str]:
        """The connection's ``hoodie_options`` with ``overrides`` (an operator's ``options``) on top."""
        return {**self.hoodie_options, **{str(k): str(v) for k, v in (overrides or {}).items()}}


PASSTHROUGH_ESCAPE = "passthrough_keys: [KEY, ...] (the operator's argument or the connection extra's)"
"""How to pass a ``hoodie.*`` key lake_orchestration does not model on purpose, for the unknown-key message."""


def parse_passthrough_keys(value: object, *, source: str) -> frozenset[str]:
    """``passthrough_keys`` (a list of ``hoodie.*`` keys) checked: anything else is refused, naming ``source``."""
    if value is None:
        return frozenset()
    if isinstance(value, str) or not isinstance(value, (list, tuple, set, frozenset)):
        raise InvalidOptionError(
            f"{source}: passthrough_keys is {type(value).__name__} {value!r}, expected a list of hoodie.* keys"
        )
    bad = [k for k in value if not isinstance(k, str) or not k.strip().lower().startswith(HOODIE_PREFIX)]
    if bad:
        raise InvalidOptionError(f"{source}: passthrough_keys {bad!r} are not Hudi keys, expected hoodie.* keys")
    return frozenset(k.strip() for k in value)


def location_from_connection(
    conn: Connection, *, base_path: str | None = None, passthrough: frozenset[str] | set[str] = frozenset()
) -> HudiTableLocation:
    """The table location a ``hudi`` connection describes (``base_path``: the operator's, wins over the connection's).

    ``passthrough``: ``hoodie.*`` keys accepted unknown (the operator's ``passthrough_keys``), besides the
    connection extra's ``passthrough_keys``.

    Raises:
        InvalidOptionError: no base path anywhere, or an extra field of the wrong shape (naming the connection).
        UnknownOptionError: a ``hoodie_options`` key nothing reads and not passed through (naming the connection,
            the closest known key and ``passthrough_keys``).
    """
    extra = conn.extra_dejson or {}
    path = base_path or extra.get("base_path") or conn.host
    if not path:
        raise InvalidOptionError(
            f"Airflow connection {conn.conn_id!r}: no table base path (expected the host, extra 'base_path' or the "
            "operator's base_path)"
        )
    opts = extra.get("storage_options") or {}
    hoodie = extra.get("hoodie_options") or {}
    for name, value in (("storage_options", opts), ("hoodie_options", hoodie)):
        if not isinstance(value, dict):
            raise InvalidOptionError(
                f"Airflow connection {conn.conn_id!r}: extra {name!r} is {type(value).__name__} {value!r}, "
                "expected an object of option -> value"
            )
    source = f"extra 'hoodie_options' of Airflow connection {conn.conn_id!r}"
    own = parse_passthrough_keys(extra.get("passthrough_keys"), source=f"Airflow connection {conn.conn_id!r}")
    check_option_keys(hoodie, source=source, escape=PASSTHROUGH_ESCAPE, passthrough=own | set(passthrough))
    # typed as the CLI and Dagster type them (anonymous: "true" -> True, replication: "3" -> 3 ...)
    storage = dict(
        parse_storage_options(
            opts,
            source=f"extra 'storage_options' of Airflow connection {conn.conn_id!r}",
            secrets={
                "access_key": conn.login,
                "secret_key": conn.password,
                "session_token": str(extra["session_token"]) if extra.get("session_token") else None,
            },
        ).items()
    )
    return HudiTableLocation(
        base_path=str(path), storage_options=storage, hoodie_options={str(k): str(v) for k, v in hoodie.items()}
    )


class HudiTableHook(BaseHook):
    """A Hudi table from the Airflow connection ``hudi_conn_id`` (type ``hudi``; see the module docstring).

    Args:
        hudi_conn_id: the connection (default ``hudi_default``).
        base_path: the table's base path, over the connection's (one connection, many tables).
        passthrough_keys: ``hoodie.*`` keys of the connection's ``hoodie_options`` that lake_orchestration does not
            model, accepted unchecked (besides the connection extra's ``passthrough_keys``).
    """

    conn_name_attr = "hudi_conn_id"
    default_conn_name = "hudi_default"
    conn_type = "hudi"
    hook_name = "Apache Hudi table"

    def __init__(
        self,
        hudi_conn_id: str = default_conn_name,
        *,
        base_path: str | None = None,
        passthrough_keys: frozenset[str] | set[str] = frozenset(),
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.hudi_conn_id = hudi_conn_id
        self.base_path = base_path
        self.passthrough_keys = frozenset(passthrough_keys)

    def get_conn(self) -> HudiTableLocation:
        """The table location of the connection."""
        return location_from_connection(
            self.get_connection(self.hudi_conn_id), base_path=self.base_path, passthrough=self.passthrough_keys
        )

    async def aget_conn(self) -> HudiTableLocation:
        """:meth:`get_conn` from an async context (a trigger)."""
        return location_from_connection(
            await self.aget_connection(self.hudi_conn_id), base_path=self.base_path, passthrough=self.passthrough_keys
        )

    def open_table(self) -> HudiTable:
        """A fresh :class:`~lake_orchestration.hudi.table.HudiTable` of the connection."""
        return self.get_conn().open_table()

    def test_connection(self) -> tuple[bool, str]:
        """The UI's *Test*: the table opens and its timeline lists."""
        try:
            table = self.open_table()
            last = table.timeline.completed_commits().last
        except Exception as err:  # the UI shows the message
            return False, str(err)
        return True, f"{table.base_uri}: latest completed commit {last.time if last else 'none'}"
