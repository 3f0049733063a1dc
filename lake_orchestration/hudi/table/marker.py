"""Write markers: ``.hoodie/.temp/<instant>/<partition>/<data file>.marker.<IOType>``, one per data file an instant's
attempt creates (DIRECT markers, as Hudi 0.14/0.15's ``DirectWriteMarkers``). Java's Spark writers default to
TIMELINE_SERVER_BASED markers instead: the timeline server batches the same marker names, one a line, into
``.hoodie/.temp/<instant>/MARKERS<n>`` files beside ``MARKERS.type`` (``TIMELINE_SERVER_BASED``);
:func:`list_markers` reads both kinds (``MarkerUtils.readTimelineServerBasedMarkersFromFileSystem``).

A marker is created before its data file, so the markers of an instant name every file its attempts may have
written: commit finalization deletes the base files a failed or speculative task attempt wrote
(:func:`reconcile_markers`), rollback deletes what a failed attempt wrote, and archival removes leftover marker
folders of archived instants.
"""

from __future__ import annotations

from dataclasses import dataclass

from lake_orchestration.hudi.model.instant import InstantTime
from lake_orchestration.io.storage import Storage

MARKERS_DIR = ".hoodie/.temp"
"""Folder of the marker folders (``.hoodie/.temp/<instant>``), relative to the base path."""
_SEPARATOR = ".marker."
MARKER_TYPE_FILE = "MARKERS.type"
"""``MarkerUtils.MARKER_TYPE_FILENAME``: the marker type of a folder written by Java's timeline server."""
_TIMELINE_SERVER_PREFIX = "MARKERS"
"""``MarkerUtils.MARKERS_FILENAME_PREFIX``: ``MARKERS<n>`` files of TIMELINE_SERVER_BASED markers."""


@dataclass(frozen=True)
class Marker:
    """One marker of an instant."""

    data_file: str
    """The data file's path relative to the base path (``<partition>/<name>``)."""
    io_type: str
    """``CREATE``, ``MERGE`` or ``APPEND``."""

    @property
    def partition(self) -> str:
        return self.data_file.rpartition("/")[0]

    @property
    def name(self) -> str:
        """The data file's name."""
        return self.data_file.rpartition("/")[2]


def markers_dir(storage: Storage, instant: InstantTime) -> str:
    """``.hoodie/.temp/<instant>`` (the storage path)."""
    return storage.join(MARKERS_DIR, instant)


def create_marker(storage: Storage, instant: InstantTime, partition: str, data_file_name: str, io_type: str) -> None:
    """``.hoodie/.temp/<instant>/<partition>/<name>.marker.<IOType>`` (DIRECT markers)."""
    path = storage.join(MARKERS_DIR, instant, partition, f"{data_file_name}{_SEPARATOR}{io_type}")
    storage.write_bytes(path, b"")


def list_markers(storage: Storage, instant: InstantTime) -> list[Marker]:
    """Every marker of ``instant`` (none when its folder does not exist: no existence check first)."""
    prefix = f"{MARKERS_DIR}/{instant}/"
    out = []
    for f in storage.walk_files(markers_dir(storage, instant)):
        rel = storage.relative(f.path)[len(prefix) :]
        name = rel.rpartition("/")[2]
        if name.endswith(".crc") and name.startswith("."):  # Hadoop's checksum of a marker file (local FS)
            continue
        if "/" not in rel and name.startswith(_TIMELINE_SERVER_PREFIX) and _SEPARATOR not in name:
            if name != MARKER_TYPE_FILE:  # MARKERS<n>: one marker name a line
                lines = storage.read_bytes(f.path).decode("utf-8").splitlines()
                out.extend(_parse(line.strip()) for line in lines if line.strip())
            continue
        out.append(_parse(rel))
    return out


def _parse(marker: str) -> Marker:
    """``<partition>/<data file>.marker.<IOType>`` (relative to the marker folder) -> the marker."""
    data_file, _, io_type = marker.rpartition(_SEPARATOR)
    return Marker(data_file, io_type)


def delete_markers(storage: Storage, instant: InstantTime) -> None:
    """Delete the marker folder of ``instant`` (done once the instant is committed or rolled back)."""
    storage.delete_dir(markers_dir(storage, instant))


def reconcile_markers(storage: Storage, instant: InstantTime, written: set[str]) -> list[str]:
    """Delete base files that have a CREATE/MERGE marker but are not in the write stats (failed or speculative
    task attempts), as Hudi's commit finalization does; returns the deleted relative paths.

    Log files (APPEND markers) are kept: a duplicate attempt's log blocks carry the same records.
    """
    deleted = []
    for m in list_markers(storage, instant):
        path = storage.join(m.data_file)
        if m.io_type in ("CREATE", "MERGE") and m.data_file not in written and storage.exists(path):
            storage.delete_file(path)
            deleted.append(m.data_file)
    return deleted
