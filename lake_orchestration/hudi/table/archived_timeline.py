"""The archived timeline of a version-6 table (timeline layout 1): ``.hoodie/archived/.commits_.archive.N_1-0-1``.

Each archive file is a Hudi log file (file id ``commits``, empty base instant, extension ``archive``) of Avro data
blocks whose header holds only the SCHEMA (the ``HoodieArchivedMetaEntry`` writer schema); every record is one
archived instant state. Mirrors ``HoodieArchivedTimeline`` (0.14/0.15): files ordered by version, each record read
with the block's own writer schema and resolved by field name.
"""

from __future__ import annotations

import io
import logging
import re
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import fastavro

from lake_orchestration.errors import CorruptFileError, SchemaError
from lake_orchestration.hudi.log.block_content import encode_avro_data_content
from lake_orchestration.hudi.log.log_format import HeaderKey, LogBlockType, encode_block, iter_blocks
from lake_orchestration.hudi.model.avro import ArchivedMetaEntry, parse_schema_text, parsed_schema_for, schema_text
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, State
from lake_orchestration.io.storage import FileInfo, Storage

log = logging.getLogger(__name__)

ARCHIVE_FILE_ID = "commits"
"""File id of archive files (``HoodieArchivedTimeline.getArchiveLogPath``: ``<archived>/commits``)."""
ARCHIVE_WRITE_TOKEN = "1-0-1"
"""``HoodieLogFormat.UNKNOWN_WRITE_TOKEN``: the rollover token every archive file gets."""
MERGE_ARCHIVE_PLAN_NAME = "mergeArchivePlan"
"""``HoodieArchivedTimeline.MERGE_ARCHIVE_PLAN_NAME``: the plan of an in-progress merge of small archive files."""
_ARCHIVE_RE = re.compile(r"^\.commits_\.archive\.(\d+)(?:_(\d+-\d+-\d+))?$")
_ENTRY_NAME = "HoodieArchivedMetaEntry"


@dataclass(frozen=True, kw_only=True)
class ArchiveFile:
    """One archive file of ``.hoodie/archived/``."""

    path: str
    """Storage path."""
    name: str
    """File name, e.g. ``.commits_.archive.3_1-0-1``."""
    version: int
    """Log version (1, 2, ...); a new file per archival run."""
    size: int = 0
    """Size in bytes when listed."""


def archive_file_name(version: int, token: str = ARCHIVE_WRITE_TOKEN) -> str:
    """``.commits_.archive.{version}_{token}``."""
    return f".{ARCHIVE_FILE_ID}_.archive.{version}_{token}"


def parse_archive_file_name(name: str) -> int | None:
    """The version of an archive file name, or None if ``name`` is not one."""
    m = _ARCHIVE_RE.match(name)
    return int(m.group(1)) if m else None


def archive_dir(storage: Storage, folder: str) -> str:
    """Path of the archive folder (``hoodie.archivelog.folder``, relative to ``.hoodie``)."""
    return storage.join(".hoodie", folder)


def list_archive_files(storage: Storage, directory: str) -> list[ArchiveFile]:
    """Archive files in ``directory``, ascending by version (missing folder = none)."""
    return archive_files_in(storage.list_dir(directory))


def archive_files_in(entries: Iterable[FileInfo]) -> list[ArchiveFile]:
    """The archive files among the listed ``entries`` of an archive folder, ascending by version."""
    out = []
    for f in entries:
        if f.is_dir:
            continue
        version = parse_archive_file_name(f.name)
        if version is not None:
            out.append(ArchiveFile(path=f.path, name=f.name, version=version, size=f.size))
    return sorted(out, key=lambda a: (a.version, a.name))


def encode_archive_block(records: Sequence[dict[str, Any]]) -> bytes:
    """One AVRO_DATA block of ``HoodieArchivedMetaEntry`` records; header = SCHEMA only, as the archiver writes.

    Raises:
        ValueError: A record does not match the schema (from fastavro).
    """
    parsed = parsed_schema_for(_ENTRY_NAME)
    datums = []
    buf = io.BytesIO()
    for rec in records:
        buf.seek(0)
        buf.truncate()
        fastavro.schemaless_writer(buf, parsed, rec)
        datums.append(buf.getvalue())
    return encode_block(
        LogBlockType.AVRO_DATA_BLOCK, [(HeaderKey.SCHEMA, schema_text(_ENTRY_NAME))], encode_avro_data_content(datums)
    )


def decode_archive_block_records(content: bytes, schema_json: str, *, path: str) -> list[dict[str, Any]]:
    """Records of one archive Avro data block, decoded with the block's writer schema.

    Raises:
        CorruptFileError: The content does not decode with its schema.
    """
    try:
        schema = parse_schema_text(schema_json, "the SCHEMA header of an archive block")
    except SchemaError as err:
        raise CorruptFileError(path, str(err)) from err
    if len(content) < 8:
        raise CorruptFileError(path, f"archive block content is {len(content)} bytes, expected >= 8")
    version, count = struct.unpack_from(">ii", content, 0)
    if count < 0:
        raise CorruptFileError(path, f"archive block (version {version}) has a negative record count {count}")
    pos = 8
    out = []
    for i in range(count):
        if pos + 4 > len(content):
            raise CorruptFileError(path, f"archive block ends before record {i} of {count}")
        (size,) = struct.unpack_from(">i", content, pos)
        pos += 4
        try:
            rec = fastavro.schemaless_reader(io.BytesIO(content[pos : pos + size]), schema)
        except Exception as err:
            raise CorruptFileError(path, f"archive record {i} does not decode: {type(err).__name__}: {err}") from err
        if not isinstance(rec, dict):
            raise CorruptFileError(path, f"archive record {i} is not an Avro record")
        out.append(rec)
        pos += size
    return out


@dataclass(frozen=True, kw_only=True)
class ArchivedEntry:
    """One archived instant state and where it was read."""

    instant: Instant
    """Instant time, action and state of the entry."""
    entry: ArchivedMetaEntry
    """The decoded ``HoodieArchivedMetaEntry`` (its payload field holds the instant's metadata or plan)."""
    file: str
    """Name of the archive file holding it."""

    @property
    def key(self) -> tuple[str, str, int]:
        """``(time, action, state)``: identifies an archived state file."""
        return (str(self.instant.time), self.instant.action.value, int(self.instant.state))


def entry_instant(entry: ArchivedMetaEntry, *, where: str) -> Instant:
    """The instant an archived entry stands for (``actionState`` defaults to COMPLETED, as in Hudi).

    Raises:
        CorruptFileError: Missing or unknown time, action or state.
    """
    try:
        time = InstantTime(entry.commit_time or "", where=where)
        action = Action(entry.action_type or "")
        state = State[entry.action_state] if entry.action_state else State.COMPLETED
        return Instant(time, action, state)
    except (KeyError, ValueError) as err:
        raise CorruptFileError(
            where,
            f"archived entry ({entry.commit_time!r}, {entry.action_type!r}, {entry.action_state!r}) is not a "
            f"valid instant: {err}",
        ) from err


@dataclass(frozen=True, kw_only=True)
class ArchiveFileContent:
    """What one archive file holds."""

    file: ArchiveFile
    """The file."""
    records: tuple[dict[str, Any], ...]
    """Decoded records, in file order (as written; payload fields untyped)."""
    entries: tuple[ArchivedEntry, ...]
    """The records as typed entries."""
    corrupt_blocks: int
    """Blocks skipped because their framing or content is corrupt (a crashed writer's partial tail)."""
    trailing_bytes: int = 0
    """Bytes after the last block that no block covers (fewer than a magic: a tail cut short)."""

    @property
    def complete(self) -> bool:
        """True if every byte of the file was read as a well-framed block and the file holds at least one record."""
        return not self.corrupt_blocks and not self.trailing_bytes and bool(self.records)


def read_archive_file(storage: Storage, file: ArchiveFile) -> ArchiveFileContent:
    """Read every block of one archive file; corrupt blocks are skipped and counted, as Java's reader does.

    Raises:
        CorruptFileError: A well-framed block that is not an Avro data block with a SCHEMA header.
    """
    where = storage.uri(file.path)
    data = storage.read_bytes(file.path)
    records: list[dict[str, Any]] = []
    corrupt = 0
    covered = 0
    for block in iter_blocks(data):
        covered = block.offset + block.size
        if block.is_corrupt:
            log.warning(
                "Corrupt block in archive file %s at byte %d: %s; skipped", where, block.offset, block.corrupt_reason
            )
            corrupt += 1
            continue
        if block.block_type is not LogBlockType.AVRO_DATA_BLOCK:
            raise CorruptFileError(
                where,
                f"block at byte {block.offset} is a {block.block_type.name}, "
                "expected an AVRO_DATA_BLOCK of HoodieArchivedMetaEntry records",
            )
        schema_json = block.get(HeaderKey.SCHEMA)
        if not schema_json:
            raise CorruptFileError(where, f"archive block at byte {block.offset} has no SCHEMA header")
        records.extend(decode_archive_block_records(block.content, schema_json, path=where))
    entries = []
    for rec in records:
        try:
            entry = ArchivedMetaEntry.from_avro(rec)
        except SchemaError as err:
            raise CorruptFileError(where, str(err)) from err
        entries.append(ArchivedEntry(instant=entry_instant(entry, where=where), entry=entry, file=file.name))
    return ArchiveFileContent(
        file=file,
        records=tuple(records),
        entries=tuple(entries),
        corrupt_blocks=corrupt,
        trailing_bytes=len(data) - covered,
    )


@dataclass(frozen=True, kw_only=True)
class ArchivedTimeline:
    """Every archived instant state of a table, sorted by (time, action, state)."""

    entries: tuple[ArchivedEntry, ...]
    """Archived entries, sorted."""
    files: tuple[ArchiveFile, ...]
    """Archive files read, ascending by version."""
    corrupt_blocks: int = 0
    """Corrupt blocks skipped over all files."""

    @classmethod
    def load(cls, storage: Storage, folder: str = "archived") -> ArchivedTimeline:
        """Read ``.hoodie/<folder>/.commits_.archive*`` (the merge plan file and anything else are ignored).

        Raises:
            CorruptFileError: An archive block or record that cannot be decoded.
        """
        files = list_archive_files(storage, archive_dir(storage, folder))
        entries: list[ArchivedEntry] = []
        corrupt = 0
        for f in files:
            content = read_archive_file(storage, f)
            entries.extend(content.entries)
            corrupt += content.corrupt_blocks
        return cls(entries=tuple(sorted(entries, key=lambda e: e.instant)), files=tuple(files), corrupt_blocks=corrupt)

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.entries)

    def keys(self) -> set[tuple[str, str, int]]:
        """``(time, action, state)`` of every entry."""
        return {e.key for e in self.entries}

    def completed(self) -> list[Instant]:
        """Completed archived instants, sorted."""
        return [e.instant for e in self.entries if e.instant.is_completed]

    def get(self, time: str, action: Action, state: State = State.COMPLETED) -> ArchivedEntry | None:
        """The entry of one archived state, or None."""
        for e in self.entries:
            if e.instant.time == time and e.instant.action is action and e.instant.state is state:
                return e
        return None
