"""Base and log file names, write tokens, file ids, file slices and file groups (table version 6).

Mirrors ``FSUtils``, ``HoodieLogFile``, ``HoodieBaseFile``, ``FileSlice`` and ``HoodieFileGroup`` of Hudi 0.14.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field

from lake_orchestration.errors import InvalidFileNameError
from lake_orchestration.hudi.model.instant import InstantTime

# FSUtils.LOG_FILE_PATTERN
_LOG_RE = re.compile(r"^\.(.+)_(.*)\.(log|archive)\.(\d+)(_((\d+)-(\d+)-(\d+))(\.cdc|-cdc)?)?$")
_TOKEN_RE = re.compile(r"^\d+-\d+-\d+$")
BASE_FILE_EXTENSIONS = (".parquet", ".orc", ".hfile")
BASE_FILE_GRAMMAR = "<fileId>_<writeToken>_<instant>.parquet"
LOG_FILE_GRAMMAR = ".<fileId>_<baseInstant>.log.<version>_<writeToken>"
UNKNOWN_WRITE_TOKEN = "1-0-1"
PARTITION_METAFILE_PREFIX = ".hoodie_partition_metadata"


def make_write_token(task_partition_id: int, stage_id: int, task_attempt_id: int) -> str:
    """``{taskPartitionId}-{stageId}-{taskAttemptId}`` (``FSUtils.makeWriteToken``)."""
    return f"{task_partition_id}-{stage_id}-{task_attempt_id}"


def new_file_id(index: int = 0, *, prefix: str | None = None) -> str:
    """``{uuid4}-{n}`` (``FSUtils.createNewFileId``)."""
    return f"{prefix or uuid.uuid4()}-{index}"


def is_base_file_name(name: str) -> bool:
    return name.endswith(BASE_FILE_EXTENSIONS) and not name.startswith(".")


def is_log_file_name(name: str) -> bool:
    return name.startswith(".") and ".log." in name and _LOG_RE.match(name) is not None


@dataclass(frozen=True, order=False)
class BaseFile:
    """A base file ``{fileId}_{writeToken}_{instant}.parquet``."""

    file_id: str
    write_token: str
    instant: InstantTime
    extension: str = ".parquet"
    size: int = -1
    partition_path: str = ""
    bootstrap_source: str | None = None
    """The external source file a METADATA_ONLY bootstrap skeleton stands for (its Hadoop path as the bootstrap
    index records it, e.g. ``file:/data/src/dt=1/a.parquet``); readers take the data columns from it (Java's
    ``HoodieBaseFile.getBootstrapBaseFile``). None for every other base file."""

    @property
    def name(self) -> str:
        return f"{self.file_id}_{self.write_token}_{self.instant}{self.extension}"

    @property
    def relative_path(self) -> str:
        return f"{self.partition_path}/{self.name}" if self.partition_path else self.name

    @classmethod
    def parse(cls, name: str, *, partition_path: str = "", size: int = -1, where: str = "") -> BaseFile:
        """Parse a base file name.

        Raises:
            InvalidFileNameError: the name does not follow ``<fileId>_<writeToken>_<instant>.<ext>``.
        """
        ext = next((e for e in BASE_FILE_EXTENSIONS if name.endswith(e)), None)
        stem = name[: -len(ext)] if ext else ""
        parts = stem.split("_")
        if ext is None or len(parts) != 3 or not _TOKEN_RE.match(parts[1]) or not parts[0]:
            raise InvalidFileNameError(name, BASE_FILE_GRAMMAR, where)
        try:
            instant = InstantTime(parts[2])
        except ValueError as err:
            raise InvalidFileNameError(name, BASE_FILE_GRAMMAR, where) from err
        return cls(parts[0], parts[1], instant, ext, size, partition_path)


@dataclass(frozen=True)
class LogFile:
    """A log file ``.{fileId}_{baseInstant}.log.{version}_{writeToken}``."""

    file_id: str
    base_instant: InstantTime
    version: int
    write_token: str | None
    extension: str = "log"
    suffix: str = ""
    size: int = -1
    partition_path: str = ""

    @property
    def name(self) -> str:
        token = f"_{self.write_token}" if self.write_token is not None else ""
        return f".{self.file_id}_{self.base_instant}.{self.extension}.{self.version}{token}{self.suffix}"

    @property
    def relative_path(self) -> str:
        return f"{self.partition_path}/{self.name}" if self.partition_path else self.name

    def sort_key(self) -> tuple[str, int, str]:
        """``HoodieLogFile.LogFileComparator``: base instant, version, write token (missing first)."""
        return (str(self.base_instant), self.version, self.write_token or "")

    @classmethod
    def parse(cls, name: str, *, partition_path: str = "", size: int = -1, where: str = "") -> LogFile:
        """Parse a log file name.

        Raises:
            InvalidFileNameError: the name does not follow ``.<fileId>_<baseInstant>.log.<version>_<token>``.
        """
        m = _LOG_RE.match(name)
        if not m or m.group(3) != "log":
            raise InvalidFileNameError(name, LOG_FILE_GRAMMAR, where)
        try:
            base_instant = InstantTime(m.group(2))
        except ValueError as err:
            raise InvalidFileNameError(name, LOG_FILE_GRAMMAR, where) from err
        return cls(
            file_id=m.group(1),
            base_instant=base_instant,
            version=int(m.group(4)),
            write_token=m.group(6),
            extension="log",
            suffix=m.group(10) or "",
            size=size,
            partition_path=partition_path,
        )


@dataclass(frozen=True)
class FileGroupId:
    """A file group: partition path + file id."""

    partition_path: str
    file_id: str

    def __str__(self) -> str:
        return f"{self.partition_path}/{self.file_id}" if self.partition_path else self.file_id


@dataclass(frozen=True)
class FileSlice:
    """A base instant's slice of a file group: an optional base file and its log files (oldest first)."""

    file_group_id: FileGroupId
    base_instant: InstantTime
    base_file: BaseFile | None = None
    log_files: tuple[LogFile, ...] = ()

    @property
    def partition_path(self) -> str:
        return self.file_group_id.partition_path

    @property
    def file_id(self) -> str:
        return self.file_group_id.file_id

    @property
    def is_empty(self) -> bool:
        return self.base_file is None and not self.log_files


@dataclass(frozen=True)
class FileGroup:
    """All slices of a file group, newest first (as ``HoodieFileGroup`` keeps them)."""

    id: FileGroupId
    slices: tuple[FileSlice, ...] = field(default_factory=tuple)

    @property
    def latest_slice(self) -> FileSlice | None:
        return self.slices[0] if self.slices else None
