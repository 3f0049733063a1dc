"""A Paimon snapshot: ``snapshot/snapshot-N`` (JSON, Java ``org.apache.paimon.Snapshot``).

A snapshot names three manifest lists: *base* (all files of the previous snapshot), *delta* (this commit's
ADD/DELETE entries) and optionally *changelog*. The live files are base + delta with DELETEs applied.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from typing import Any

from lake_orchestration.errors import CorruptFileError

SNAPSHOT_PREFIX = "snapshot-"
LATEST_HINT = "LATEST"
EARLIEST_HINT = "EARLIEST"


class CommitKind(str, enum.Enum):
    """``commitKind`` of a snapshot."""

    APPEND = "APPEND"
    """New data files (a write)."""
    COMPACT = "COMPACT"
    """Compaction: files replaced or upgraded, records unchanged."""
    OVERWRITE = "OVERWRITE"
    """INSERT OVERWRITE / delete of partitions."""
    ANALYZE = "ANALYZE"
    """Statistics only."""


# JSON keys in Java's field order (Jackson writes them in this order; None values are omitted).
_KEYS = (
    ("version", "version"),
    ("id", "id"),
    ("schemaId", "schema_id"),
    ("baseManifestList", "base_manifest_list"),
    ("baseManifestListSize", "base_manifest_list_size"),
    ("deltaManifestList", "delta_manifest_list"),
    ("deltaManifestListSize", "delta_manifest_list_size"),
    ("changelogManifestList", "changelog_manifest_list"),
    ("changelogManifestListSize", "changelog_manifest_list_size"),
    ("indexManifest", "index_manifest"),
    ("commitUser", "commit_user"),
    ("commitIdentifier", "commit_identifier"),
    ("commitKind", "commit_kind"),
    ("timeMillis", "time_millis"),
    ("logOffsets", "log_offsets"),
    ("totalRecordCount", "total_record_count"),
    ("deltaRecordCount", "delta_record_count"),
    ("changelogRecordCount", "changelog_record_count"),
    ("watermark", "watermark"),
    ("statistics", "statistics"),
    ("properties", "properties"),
    ("nextRowId", "next_row_id"),
)
_REQUIRED = ("id", "schemaId", "baseManifestList", "deltaManifestList", "commitUser", "commitIdentifier")
_REQUIRED += ("commitKind", "timeMillis")


@dataclass(frozen=True, kw_only=True)
class Snapshot:
    """A ``snapshot-N`` file.

    Example:
        >>> s = Snapshot.from_json(b'{"version":3,"id":2,"schemaId":0,"baseManifestList":"b","deltaManifestList":"d",'
        ...     b'"commitUser":"u","commitIdentifier":7,"commitKind":"COMPACT","timeMillis":1}', path="snapshot-2")
        >>> s.commit_kind, s.manifest_lists
        (<CommitKind.COMPACT: 'COMPACT'>, ('b', 'd'))
    """

    version: int | None = None
    """Snapshot format version (3 since Paimon 0.5)."""
    id: int
    """Snapshot id (``N``)."""
    schema_id: int
    """Schema the commit was written with."""
    base_manifest_list: str
    """Manifest list with every file of the previous snapshot."""
    base_manifest_list_size: int | None = None
    """Its size in bytes (Paimon >= 1.0)."""
    delta_manifest_list: str
    """Manifest list with this commit's entries."""
    delta_manifest_list_size: int | None = None
    """Its size in bytes."""
    changelog_manifest_list: str | None = None
    """Manifest list of changelog files, if any."""
    changelog_manifest_list_size: int | None = None
    """Its size in bytes."""
    index_manifest: str | None = None
    """Index manifest (deletion vectors, global indexes), if any."""
    commit_user: str
    """Writer id; with the identifier, the idempotency key of a commit."""
    commit_identifier: int
    """Checkpoint/commit id (Long.MAX_VALUE for batch writes)."""
    commit_kind: CommitKind
    """APPEND, COMPACT, OVERWRITE or ANALYZE."""
    time_millis: int
    """Commit time."""
    log_offsets: dict[str, int] | None = None
    """Log system offsets (legacy)."""
    total_record_count: int | None = None
    """Rows in all live files (adds minus deletes)."""
    delta_record_count: int | None = None
    """Rows added minus rows deleted by this commit's delta (0 for COMPACT)."""
    changelog_record_count: int | None = None
    """Rows in this commit's changelog files."""
    watermark: int | None = None
    """Watermark of the writer, if any."""
    statistics: str | None = None
    """Statistics file name (ANALYZE)."""
    properties: dict[str, str] | None = None
    """Commit properties."""
    next_row_id: int | None = None
    """Next row id (row tracking)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """JSON keys this model does not know, kept as read."""

    @classmethod
    def from_json(cls, data: bytes | str, *, path: str) -> Snapshot:
        """Parse a ``snapshot-N`` file.

        Raises:
            CorruptFileError: Not JSON, a required key missing, or an unknown ``commitKind``.
        """
        try:
            text = data.decode("utf-8") if isinstance(data, bytes) else data
        except UnicodeDecodeError as err:
            raise CorruptFileError(
                path,
                f"not UTF-8 text (byte {err.start} is {data[err.start : err.start + 1]!r}): expected the JSON "
                "object of a Java Snapshot",
            ) from err
        try:
            obj = json.loads(text)
        except ValueError as err:
            raise CorruptFileError(path, f"not JSON ({err}): expected the JSON object of a Java Snapshot") from err
        if not isinstance(obj, dict):
            raise CorruptFileError(path, f"expected a JSON object, found {type(obj).__name__}")
        missing = [k for k in _REQUIRED if k not in obj]
        if missing:
            raise CorruptFileError(path, f"snapshot lacks {missing}")
        try:
            kind = CommitKind(obj["commitKind"])
        except ValueError as err:
            raise CorruptFileError(
                path, f"unknown commitKind {obj['commitKind']!r}: expected one of {[k.value for k in CommitKind]}"
            ) from err
        kwargs: dict[str, Any] = {attr: obj.get(key) for key, attr in _KEYS if key in obj}
        kwargs["commit_kind"] = kind
        known = {key for key, _ in _KEYS}
        return cls(**kwargs, extra={k: v for k, v in obj.items() if k not in known})

    def to_json_obj(self) -> dict[str, Any]:
        """The JSON object in Java's key order (None values omitted, as Jackson's ``NON_NULL``)."""
        out: dict[str, Any] = {}
        for key, attr in _KEYS:
            value = getattr(self, attr)
            if value is not None:
                out[key] = value.value if isinstance(value, CommitKind) else value
        out.update(self.extra)
        return out

    @property
    def manifest_lists(self) -> tuple[str, str]:
        """``(base, delta)`` manifest list file names: together they list every live file."""
        return (self.base_manifest_list, self.delta_manifest_list)


def snapshot_file_name(snapshot_id: int) -> str:
    """``snapshot-N``."""
    return f"{SNAPSHOT_PREFIX}{snapshot_id}"
