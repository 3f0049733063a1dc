"""Errors of the Dagster layer: ``DagsterHudiError`` (a ``dagster.Failure``) and its subclasses.

A service step runs inside :func:`hudi_step`, which turns a :class:`~lake_orchestration.errors.LakeOrchestrationError`
into a :class:`DagsterHudiError` carrying the table, its URI, the instant and an excerpt of the timeline as metadata
(what the run's page shows beside the message). Errors a retry cannot fix (:data:`PERMANENT_ERRORS`) become a
:class:`PermanentHudiError` that fails the step at once instead of being retried by the table's retry policy; every
other error keeps the retry policy. A sensor cursor that cannot be decoded is a :class:`SensorCursorError`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import dagster as dg

from lake_orchestration.errors import (
    CorruptFileError,
    InvalidOptionError,
    InvalidTablePropertiesError,
    JavaNotFoundError,
    LakeOrchestrationError,
    MetadataTableError,
    TableNotFoundError,
    UnsupportedTableVersionError,
)

if TYPE_CHECKING:
    from lake_orchestration.dagster.config import HudiTableConfig
    from lake_orchestration.hudi.table import HudiTable

PERMANENT_ERRORS: tuple[type[Exception], ...] = (
    InvalidOptionError,
    InvalidTablePropertiesError,
    CorruptFileError,
    MetadataTableError,
    TableNotFoundError,
    UnsupportedTableVersionError,
    JavaNotFoundError,
)
"""Configuration and table-format errors (a corrupt file or log block, hoodie.properties missing a key): the same call
fails the same way until someone changes the config or repairs the table. Everything
else is retried by the table's retry policy: storage errors, a commit whose outcome is unknown, and what another
writer may resolve (a plan refused because a write is still inflight, a plan another process is executing, a held
table lock, a properties checksum changed under a concurrent update); each service re-checks the timeline first."""

TIMELINE_EXCERPT = 10
"""Instants (the latest) of the timeline excerpt attached to a failure."""


class DagsterHudiError(dg.Failure):
    """A step of a table's service failed; the table, its URI, the instant and a timeline excerpt are metadata."""

    def __init__(
        self,
        description: str,
        *,
        table: str,
        table_uri: str | None = None,
        instant: str | None = None,
        timeline: Sequence[str] = (),
        error: str | None = None,
        allow_retries: bool = True,
    ) -> None:
        self.table = table
        self.table_uri = table_uri
        self.instant = instant
        self.timeline = tuple(timeline)
        self.error = error
        metadata: dict[str, dg.RawMetadataValue] = {"table": table}
        if table_uri is not None:
            metadata["table_uri"] = table_uri
        if instant is not None:
            metadata["instant"] = instant
        if error is not None:
            metadata["error"] = error
        metadata["retried"] = allow_retries
        if self.timeline:
            metadata["timeline"] = dg.MetadataValue.json(list(self.timeline))
        super().__init__(description=description, metadata=metadata, allow_retries=allow_retries)


class PermanentHudiError(DagsterHudiError):
    """A failure a retry cannot fix (one of :data:`PERMANENT_ERRORS`): the step fails without retries."""

    def __init__(self, description: str, **kw: object) -> None:
        super().__init__(description, allow_retries=False, **kw)  # type: ignore[arg-type]


class SensorCursorError(DagsterHudiError):
    """A sensor's cursor cannot be decoded: never a silent restart (it would request every plan again)."""

    def __init__(self, *, table: str, sensor: str, cursor: str, expected: str, detail: str) -> None:
        self.sensor = sensor
        self.cursor = cursor
        super().__init__(
            f"Cannot decode the cursor of {sensor}: {cursor[:200]!r} ({detail}); expected {expected}. Reset the "
            "cursor explicitly in the UI if intended.",
            table=table,
            allow_retries=False,
        )


class HudiStep:
    """The table a step works on (opened once, through :meth:`open_table`), for the metadata of a failure."""

    def __init__(self, cfg: HudiTableConfig, *, instant: str | None = None) -> None:
        self.cfg = cfg
        self.instant = instant
        self.table: HudiTable | None = None

    def open_table(self) -> HudiTable:
        """The table, opened with the table's storage options (once per step)."""
        if self.table is None:
            self.table = self.cfg.open_table()
        return self.table

    def timeline_excerpt(self) -> list[str]:
        """File names of the latest instants of the timeline as last listed (none before the table opened)."""
        if self.table is None:
            return []
        if self.cfg.format == "paimon":  # a Paimon table's history: its snapshot files
            return [f"snapshot-{i}" for i in self.table.snapshot_ids()[-TIMELINE_EXCERPT:]]
        return [i.file_name for i in list(self.table.timeline)[-TIMELINE_EXCERPT:]]

    def error(self, err: LakeOrchestrationError, *, permanent: bool) -> DagsterHudiError:
        """``err`` as the step's failure: ``<ErrorClass>: <message>`` with the table, instant and timeline excerpt as
        metadata; :class:`PermanentHudiError` (no retry) when ``permanent``."""
        cls = PermanentHudiError if permanent else DagsterHudiError
        return cls(
            f"{type(err).__name__}: {err}",
            table=self.cfg.name,
            table_uri=self.cfg.base_path,
            instant=self.instant,
            timeline=self.timeline_excerpt(),
            error=type(err).__name__,
        )


@contextmanager
def hudi_step(cfg: HudiTableConfig, *, instant: str | None = None) -> Iterator[HudiStep]:
    """Run a service step: a :class:`~lake_orchestration.errors.LakeOrchestrationError` leaves it as a
    :class:`DagsterHudiError` (:class:`PermanentHudiError` for :data:`PERMANENT_ERRORS`) with the message
    ``<ErrorClass>: <message>`` and the table, instant and timeline excerpt as metadata."""
    step = HudiStep(cfg, instant=instant)
    try:
        yield step
    except LakeOrchestrationError as err:
        raise step.error(err, permanent=isinstance(err, PERMANENT_ERRORS)) from err
