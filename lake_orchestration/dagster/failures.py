"""Errors a retry cannot fix fail a Dagster step at once, instead of being retried by the table's retry policy."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg

from lake_orchestration.errors import (
    CorruptFileError,
    InvalidOptionError,
    InvalidTablePropertiesError,
    JavaNotFoundError,
    MetadataTableError,
    TableNotFoundError,
    UnsupportedTableVersionError,
)

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


@contextmanager
def fail_fast_on_permanent_errors() -> Iterator[None]:
    """Re-raise :data:`PERMANENT_ERRORS` as ``dagster.Failure(allow_retries=False)`` with the error's message."""
    try:
        yield
    except PERMANENT_ERRORS as err:
        raise dg.Failure(
            description=f"{type(err).__name__}: {err}",
            metadata={"error": type(err).__name__, "retried": False},
            allow_retries=False,
        ) from err
