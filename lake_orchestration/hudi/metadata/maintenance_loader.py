"""How the metadata table's clean and archive get registered: a slot the package root fills with a loader.

The MDT's table services (:mod:`~lake_orchestration.hudi.metadata.table_services`) run the project's cleaner and
archiver, which sit in the services layer above the commit path: they are handed down through
:func:`~lake_orchestration.hudi.metadata.table_services.register_metadata_table_maintenance`, which
:mod:`lake_orchestration.hudi.services.metadata_table` calls when imported. The package root does not import that
module (nor anything heavy: ``lake-orch --help`` starts without pyarrow, polars or the services); it sets a loader
here that imports it, and the MDT's table services call :func:`load_metadata_table_maintenance` the first time they
need the cleaner and archiver. This module imports nothing, so the root can set the loader for free.
"""

from __future__ import annotations

from collections.abc import Callable

_LOADER: list[Callable[[], object]] = []


def set_metadata_table_maintenance_loader(loader: Callable[[], object]) -> None:
    """The package root's loader of the module that registers the MDT's clean and archive."""
    _LOADER[:] = [loader]


def load_metadata_table_maintenance() -> None:
    """Run the loader (importing the registering module; a no-op once imported)."""
    for loader in _LOADER:
        loader()
