"""Storage access: the only place that touches files."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lake_orchestration.io.storage import FileInfo, Storage

__all__ = ["FileInfo", "Storage"]


def __getattr__(name: str) -> Any:
    """``Storage`` and ``FileInfo`` imported on first use (PEP 562): importing ``lake_orchestration.io.
    storage_options`` (the CLI does, to parse its options) does not load pyarrow."""
    if name in __all__:
        from lake_orchestration.io import storage

        return getattr(storage, name)
    raise AttributeError(f"module 'lake_orchestration.io' has no attribute {name!r}")
