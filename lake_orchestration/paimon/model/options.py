"""Paimon table options (``CoreOptions``) this project reads: a small typed registry of keys and defaults.

Each option is a :class:`ConfigOption` (key, default, doc, parser), like pypaimon's ``ConfigOption`` and Java's
``ConfigOptions.key(...).intType().defaultValue(...)``. :class:`CoreOptions` reads them from a schema's options;
a value that does not parse raises :class:`~lake_orchestration.errors.InvalidOptionError` naming key and value,
never a silent default.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from lake_orchestration.errors import InvalidOptionError

T = TypeVar("T")
E = TypeVar("E", bound=enum.Enum)

_MEMORY = re.compile(r"^\s*(\d+)\s*([a-zA-Z]*)\s*$")
_UNITS = {"": 1, "b": 1, "bytes": 1, "k": 1 << 10, "kb": 1 << 10, "kibibytes": 1 << 10, "m": 1 << 20, "mb": 1 << 20}
_UNITS |= {"mebibytes": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gibibytes": 1 << 30, "t": 1 << 40, "tb": 1 << 40}


def parse_int(value: str) -> int:
    """Java ``Integer.parseInt`` semantics (surrounding blanks tolerated)."""
    return int(value.strip())


def parse_bool(value: str) -> bool:
    """``true``/``false`` (any case), as Java's ``ConfigurationUtils.convertToBoolean``."""
    v = value.strip().lower()
    if v not in ("true", "false"):
        raise ValueError(f"expected true or false, found {value!r}")
    return v == "true"


def parse_memory_size(value: str) -> int:
    """A Paimon ``MemorySize`` (``128 mb``, ``64kb``, ``1024``) in bytes."""
    m = _MEMORY.match(value)
    if m is None or m.group(2).lower() not in _UNITS:
        raise ValueError(f"expected a memory size such as '128 mb', found {value!r}")
    return int(m.group(1)) * _UNITS[m.group(2).lower()]


class MergeEngine(str, enum.Enum):
    """``merge-engine``: how rows with the same primary key merge."""

    DEDUPLICATE = "deduplicate"
    PARTIAL_UPDATE = "partial-update"
    AGGREGATE = "aggregation"
    FIRST_ROW = "first-row"


class ChangelogProducer(str, enum.Enum):
    """``changelog-producer``."""

    NONE = "none"
    INPUT = "input"
    FULL_COMPACTION = "full-compaction"
    LOOKUP = "lookup"


@dataclass(frozen=True)
class ConfigOption(Generic[T]):
    """A table option: its key, default (None = no default), doc and parser."""

    key: str
    """The option key as Paimon spells it."""
    default: T | None
    """Value when the key is absent."""
    doc: str
    """What the option means."""
    parse: Callable[[str], T]
    """Parser of the raw string value; raises ValueError on a bad value."""


def _enum(cls: type[E]) -> Callable[[str], E]:
    def parse(value: str) -> E:
        v = value.strip().lower()
        for member in cls:
            if member.value == v:
                return member
        raise ValueError(f"expected one of {[m.value for m in cls]}, found {value!r}")

    return parse


BUCKET: ConfigOption[int] = ConfigOption("bucket", -1, "Number of buckets; -1 = dynamic bucket mode.", parse_int)
MERGE_ENGINE: ConfigOption[MergeEngine] = ConfigOption(
    "merge-engine",
    MergeEngine.DEDUPLICATE,
    "How rows of the same key merge.",
    _enum(MergeEngine),
)
CHANGELOG_PRODUCER: ConfigOption[ChangelogProducer] = ConfigOption(
    "changelog-producer",
    ChangelogProducer.NONE,
    "Whether and how changelog files are produced.",
    _enum(ChangelogProducer),
)
NUM_SORTED_RUNS_COMPACTION_TRIGGER: ConfigOption[int] = ConfigOption(
    "num-sorted-run.compaction-trigger",
    5,
    "Number of sorted runs that triggers compaction (level-0 files count one run each, higher levels one per level).",
    parse_int,
)
NUM_SORTED_RUNS_STOP_TRIGGER: ConfigOption[int] = ConfigOption(
    "num-sorted-run.stop-trigger",
    None,
    "Sorted runs at which writes stop for compaction; default trigger + 3.",
    parse_int,
)
NUM_LEVELS: ConfigOption[int] = ConfigOption(
    "num-levels", None, "Total number of LSM levels; default compaction trigger + 1.", parse_int
)
COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT: ConfigOption[int] = ConfigOption(
    "compaction.max-size-amplification-percent",
    200,
    "Size amplification (extra storage in percent of the oldest run) that triggers a full compaction.",
    parse_int,
)
COMPACTION_SIZE_RATIO: ConfigOption[int] = ConfigOption(
    "compaction.size-ratio",
    1,
    "Percentage flexibility when comparing sorted-run sizes: a run joins the candidates if their total size is at "
    "most this much smaller.",
    parse_int,
)
FULL_COMPACTION_DELTA_COMMITS: ConfigOption[int] = ConfigOption(
    "full-compaction.delta-commits", None, "Full compaction every this many delta commits.", parse_int
)
TARGET_FILE_SIZE: ConfigOption[int] = ConfigOption(
    "target-file-size", None, "Target size of a data file; default 128 mb for primary-key tables.", parse_memory_size
)
DELETION_VECTORS_ENABLED: ConfigOption[bool] = ConfigOption(
    "deletion-vectors.enabled", False, "Deletion vectors mark deleted rows of higher-level files.", parse_bool
)
FILE_FORMAT: ConfigOption[str] = ConfigOption("file.format", "parquet", "Data file format.", str.strip)
MANIFEST_FORMAT: ConfigOption[str] = ConfigOption("manifest.format", "avro", "Manifest file format.", str.strip)
MANIFEST_COMPRESSION: ConfigOption[str] = ConfigOption(
    "manifest.compression", "zstd", "Compression of manifest files.", str.strip
)
SEQUENCE_FIELD: ConfigOption[str] = ConfigOption(
    "sequence.field", None, "User columns that order rows of the same key before the sequence number.", str.strip
)
WRITE_ONLY: ConfigOption[bool] = ConfigOption(
    "write-only", False, "Writers skip compaction (a dedicated compaction job does it).", parse_bool
)
PK_VECTOR_INDEX_COLUMNS: ConfigOption[str] = ConfigOption(
    "pk-vector.index.columns",
    None,
    "Columns of a primary-key vector (ANN) index, comma-separated; built from compacted files above level 0.",
    str.strip,
)

#: Every option of the registry, by key.
OPTIONS: dict[str, ConfigOption[Any]] = {
    o.key: o
    for o in (
        BUCKET,
        MERGE_ENGINE,
        CHANGELOG_PRODUCER,
        NUM_SORTED_RUNS_COMPACTION_TRIGGER,
        NUM_SORTED_RUNS_STOP_TRIGGER,
        NUM_LEVELS,
        COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT,
        COMPACTION_SIZE_RATIO,
        FULL_COMPACTION_DELTA_COMMITS,
        TARGET_FILE_SIZE,
        DELETION_VECTORS_ENABLED,
        FILE_FORMAT,
        MANIFEST_FORMAT,
        MANIFEST_COMPRESSION,
        SEQUENCE_FIELD,
        WRITE_ONLY,
        PK_VECTOR_INDEX_COLUMNS,
    )
}

_DEFAULT_TARGET_FILE_SIZE_PK = 128 << 20


@dataclass(frozen=True)
class CoreOptions:
    """A typed view over a table's options (``schema-N`` ``options``), with Java ``CoreOptions``' derived values.

    Example:
        >>> o = CoreOptions({"num-sorted-run.compaction-trigger": "2"})
        >>> o.num_sorted_runs_compaction_trigger, o.num_levels, o.num_sorted_runs_stop_trigger
        (2, 3, 5)
    """

    raw: Mapping[str, str]
    """The options as stored."""

    def get(self, option: ConfigOption[T]) -> T | None:
        """The option's value, or its default when absent.

        Raises:
            InvalidOptionError: The value does not parse (the message names key and value).
        """
        value = self.raw.get(option.key)
        if value is None:
            return option.default
        try:
            return option.parse(value)
        except ValueError as err:
            raise InvalidOptionError(f"Invalid Paimon table option {option.key}={value!r}: {err}") from err

    def _required(self, option: ConfigOption[T]) -> T:
        value = self.get(option)
        if value is None:
            raise InvalidOptionError(f"Paimon table option {option.key} has no value and no default")
        return value

    @property
    def bucket(self) -> int:
        """``bucket``."""
        return self._required(BUCKET)

    @property
    def merge_engine(self) -> MergeEngine:
        """``merge-engine``."""
        return self._required(MERGE_ENGINE)

    @property
    def num_sorted_runs_compaction_trigger(self) -> int:
        """``num-sorted-run.compaction-trigger`` (default 5)."""
        return self._required(NUM_SORTED_RUNS_COMPACTION_TRIGGER)

    @property
    def num_sorted_runs_stop_trigger(self) -> int:
        """``num-sorted-run.stop-trigger``; default trigger + 3, never below the trigger (Java ``CoreOptions``)."""
        stop = self.get(NUM_SORTED_RUNS_STOP_TRIGGER)
        trigger = self.num_sorted_runs_compaction_trigger
        return max(trigger, stop if stop is not None else trigger + 3)

    @property
    def num_levels(self) -> int:
        """``num-levels``; default ``num-sorted-run.compaction-trigger + 1`` (Java ``CoreOptions.numLevels``)."""
        levels = self.get(NUM_LEVELS)
        return levels if levels is not None else self.num_sorted_runs_compaction_trigger + 1

    @property
    def max_size_amplification_percent(self) -> int:
        """``compaction.max-size-amplification-percent`` (default 200)."""
        return self._required(COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT)

    @property
    def size_ratio(self) -> int:
        """``compaction.size-ratio`` (default 1)."""
        return self._required(COMPACTION_SIZE_RATIO)

    @property
    def full_compaction_delta_commits(self) -> int | None:
        """``full-compaction.delta-commits`` (no default)."""
        return self.get(FULL_COMPACTION_DELTA_COMMITS)

    @property
    def target_file_size(self) -> int:
        """``target-file-size``; default 128 MiB for primary-key tables."""
        size = self.get(TARGET_FILE_SIZE)
        return size if size is not None else _DEFAULT_TARGET_FILE_SIZE_PK

    @property
    def compaction_file_size(self) -> int:
        """Files below this size are rewritten rather than upgraded: ``target-file-size / 10 * 7`` (Java
        ``CoreOptions.compactionFileSize``; not an option of its own)."""
        return self.target_file_size // 10 * 7

    @property
    def deletion_vectors_enabled(self) -> bool:
        """``deletion-vectors.enabled``."""
        return self._required(DELETION_VECTORS_ENABLED)

    @property
    def primary_key_vector_index_columns(self) -> tuple[str, ...]:
        """``pk-vector.index.columns`` as a tuple (empty when unset)."""
        value = self.get(PK_VECTOR_INDEX_COLUMNS) or ""
        return tuple(c.strip() for c in value.split(",") if c.strip())

    @property
    def changelog_producer(self) -> ChangelogProducer:
        """``changelog-producer``."""
        return self._required(CHANGELOG_PRODUCER)
