"""Storage access: the only place that touches files."""

from lake_orchestration.io.storage import FileInfo, Storage

__all__ = ["FileInfo", "Storage"]
