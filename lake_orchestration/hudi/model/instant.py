"""Instant times, actions, states and timeline file names (table version 6, timeline layout 1).

Mirrors ``HoodieInstant`` / ``HoodieInstantTimeGenerator`` of Hudi 0.14/0.15.
"""

from __future__ import annotations

import enum
import re
import threading
from dataclasses import dataclass
from functools import total_ordering

import pendulum

from lake_orchestration.errors import InvalidFileNameError, InvalidInstantTimeError

# yyyyMMddHHmmss, + SSS, + a 3-digit operation suffix: Java 0.14 names metadata-table instants
# ``<data instant> + 001`` (compaction), ``002`` (clean), ``010``... (initialization), see
# ``HoodieTableMetadataUtil.createCompactionTimestamp``. Right after the metadata table's initialisation at
# ``<L>010`` its table services are named after that instant (``<L>010002``: Java's clean finds nothing to clean
# then, but the name is asked for).
_INSTANT_RE = re.compile(r"^\d{14}(\d{3}){0,3}$")
INIT_INSTANT = "00000000000000"
METADATA_BOOTSTRAP_INSTANT = "00000000000001"
FULL_BOOTSTRAP_INSTANT = "00000000000002"
_SPECIAL = {INIT_INSTANT, METADATA_BOOTSTRAP_INSTANT, FULL_BOOTSTRAP_INSTANT}
INSTANT_FORMAT = "YYYYMMDDHHmmssSSS"


class InstantTime(str):
    """A Hudi instant time: ``yyyyMMddHHmmssSSS`` (or legacy 14-digit ``yyyyMMddHHmmss``; 20 digits = a
    metadata-table instant with an operation suffix, ``00000000000000`` + suffix = its initial commits).

    A validated ``str`` so it sorts, hashes and serializes exactly like Hudi's string instants
    (Hudi compares instant times as strings).

    Raises:
        InvalidInstantTimeError: not 14, 17, 20 or 23 digits, or not a calendar time (special bootstrap instants and
            ``00000000000000`` + suffix excepted).
    """

    __slots__ = ()

    def __new__(cls, value: str, *, where: str = "") -> InstantTime:
        if isinstance(value, InstantTime):
            return value
        if not isinstance(value, str) or not _INSTANT_RE.match(value):
            raise InvalidInstantTimeError(str(value), where)
        if value not in _SPECIAL and not value.startswith(INIT_INSTANT):
            try:
                pendulum.datetime(
                    int(value[0:4]),
                    int(value[4:6]),
                    int(value[6:8]),
                    int(value[8:10]),
                    int(value[10:12]),
                    int(value[12:14]),
                )
            except ValueError as err:
                raise InvalidInstantTimeError(value, where) from err
        return super().__new__(cls, value)

    def to_datetime(self, tz: str = "UTC") -> pendulum.DateTime:
        """The instant as a datetime in ``tz`` (14-digit instants get ``.999`` like Hudi).

        ``00000000000000`` to ``00000000000002`` (initial and bootstrap instants) are not dates: they read as
        ``new Date(Integer.parseInt(ts))``, 0 to 2 ms after the epoch, as Java's
        ``HoodieActiveTimeline.parseDateFromInstantTimeSafely`` reads them; a metadata table's initial instants
        (``00000000000000`` + suffix, e.g. ``00000000000000010``), which Java cannot parse, read the same way.
        """
        if self in _SPECIAL or self.startswith(INIT_INSTANT):
            return pendulum.from_timestamp(int(self) / 1000, tz=tz)
        v = self[:17] if len(self) >= 17 else self + "999"
        return pendulum.from_format(v, INSTANT_FORMAT, tz=tz)

    @classmethod
    def from_datetime(cls, dt: pendulum.DateTime) -> InstantTime:
        return cls(_format_instant(dt))


def _format_instant(dt: pendulum.DateTime) -> str:
    """``yyyyMMddHHmmssSSS`` with a zero-padded 4-digit year (pendulum's YYYY is not padded)."""
    date_part = f"{dt.year:04d}{dt.month:02d}{dt.day:02d}"
    return f"{date_part}{dt.hour:02d}{dt.minute:02d}{dt.second:02d}{dt.microsecond // 1000:03d}"


class InstantTimeGenerator:
    """Generates strictly increasing instant times in the table's timeline timezone.

    Like Hudi, the new time is ``max(now, last + 1 ms)`` for this process, and callers pass a ``floor`` (the
    latest instant on the timeline) so a new instant always sorts after every existing one.
    """

    _lock = threading.Lock()
    _last: str = ""

    def __init__(self, timezone: str = "LOCAL") -> None:
        self.tz = "UTC" if timezone.upper() == "UTC" else pendulum.local_timezone()

    def new_instant_time(self, *, floor: str | None = None) -> InstantTime:
        with InstantTimeGenerator._lock:
            now = pendulum.now(self.tz)
            candidate = _format_instant(now)
            for lower in (InstantTimeGenerator._last, floor or ""):
                if lower and len(lower) >= 17 and candidate <= lower:
                    candidate = _format_instant(
                        pendulum.from_format(lower[:17], INSTANT_FORMAT, tz=self.tz).add(microseconds=1000)
                    )
            InstantTimeGenerator._last = candidate
            return InstantTime(candidate)


class Action(str, enum.Enum):
    """Timeline actions of table version 6."""

    COMMIT = "commit"
    DELTA_COMMIT = "deltacommit"
    COMPACTION = "compaction"
    LOG_COMPACTION = "logcompaction"
    REPLACE_COMMIT = "replacecommit"
    CLEAN = "clean"
    ROLLBACK = "rollback"
    SAVEPOINT = "savepoint"
    RESTORE = "restore"
    INDEXING = "indexing"

    @property
    def comparable(self) -> Action:
        """Hudi orders a compaction like the commit it becomes, a log compaction like a deltacommit."""
        if self is Action.COMPACTION:
            return Action.COMMIT
        if self is Action.LOG_COMPACTION:
            return Action.DELTA_COMMIT
        return self


class State(enum.IntEnum):
    """Instant states, in transition order."""

    REQUESTED = 0
    INFLIGHT = 1
    COMPLETED = 2


# Actions that write data files: the "commits timeline".
WRITE_ACTIONS = frozenset(
    {Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.COMPACTION, Action.LOG_COMPACTION}
)

# file-name suffix -> (action, state); mirrors HoodieTimeline's extension constants.
_SUFFIXES: dict[str, tuple[Action, State]] = {
    "commit": (Action.COMMIT, State.COMPLETED),
    "inflight": (Action.COMMIT, State.INFLIGHT),
    "commit.requested": (Action.COMMIT, State.REQUESTED),
    "deltacommit": (Action.DELTA_COMMIT, State.COMPLETED),
    "deltacommit.inflight": (Action.DELTA_COMMIT, State.INFLIGHT),
    "deltacommit.requested": (Action.DELTA_COMMIT, State.REQUESTED),
    "compaction.requested": (Action.COMPACTION, State.REQUESTED),
    "compaction.inflight": (Action.COMPACTION, State.INFLIGHT),
    "logcompaction.requested": (Action.LOG_COMPACTION, State.REQUESTED),
    "logcompaction.inflight": (Action.LOG_COMPACTION, State.INFLIGHT),
    "replacecommit": (Action.REPLACE_COMMIT, State.COMPLETED),
    "replacecommit.inflight": (Action.REPLACE_COMMIT, State.INFLIGHT),
    "replacecommit.requested": (Action.REPLACE_COMMIT, State.REQUESTED),
    "clean": (Action.CLEAN, State.COMPLETED),
    "clean.inflight": (Action.CLEAN, State.INFLIGHT),
    "clean.requested": (Action.CLEAN, State.REQUESTED),
    "rollback": (Action.ROLLBACK, State.COMPLETED),
    "rollback.inflight": (Action.ROLLBACK, State.INFLIGHT),
    "rollback.requested": (Action.ROLLBACK, State.REQUESTED),
    "savepoint": (Action.SAVEPOINT, State.COMPLETED),
    "savepoint.inflight": (Action.SAVEPOINT, State.INFLIGHT),
    "restore": (Action.RESTORE, State.COMPLETED),
    "restore.inflight": (Action.RESTORE, State.INFLIGHT),
    "restore.requested": (Action.RESTORE, State.REQUESTED),
    "indexing": (Action.INDEXING, State.COMPLETED),
    "indexing.inflight": (Action.INDEXING, State.INFLIGHT),
    "indexing.requested": (Action.INDEXING, State.REQUESTED),
}
_BY_ACTION_STATE = {v: k for k, v in _SUFFIXES.items()}
INSTANT_FILE_GRAMMAR = "<yyyyMMddHHmmss[SSS[NNN]]>.<action>[.requested|.inflight] (or <ts>.inflight for a commit)"


def is_instant_file_suffix(suffix: str) -> bool:
    return suffix in _SUFFIXES


@total_ordering
@dataclass(frozen=True)
class Instant:
    """One instant on the timeline: time, action and state.

    A completed compaction is a ``commit`` and a completed log compaction a ``deltacommit``, as in Hudi.
    """

    time: InstantTime
    action: Action
    state: State

    def __post_init__(self) -> None:
        if self.state is State.COMPLETED and self.action in (Action.COMPACTION, Action.LOG_COMPACTION):
            raise ValueError(
                f"A completed {self.action.value} is a commit/deltacommit instant, not {self.action.value}"
            )
        if (self.action, self.state) not in _BY_ACTION_STATE:
            raise ValueError(f"Action {self.action.value} has no {self.state.name} state")

    @property
    def file_name(self) -> str:
        """The v6 timeline file name, e.g. ``20250121000547796.deltacommit.inflight``."""
        return f"{self.time}.{_BY_ACTION_STATE[(self.action, self.state)]}"

    @classmethod
    def from_file_name(cls, name: str, *, where: str = "") -> Instant:
        """Parse a timeline file name.

        Raises:
            InvalidFileNameError: not ``<instant>.<known action>[.<state>]``.
        """
        ts, _, suffix = name.partition(".")
        if suffix not in _SUFFIXES:
            raise InvalidFileNameError(name, INSTANT_FILE_GRAMMAR, where)
        try:
            t = InstantTime(ts)
        except InvalidInstantTimeError as err:
            raise InvalidFileNameError(name, INSTANT_FILE_GRAMMAR, where) from err
        action, state = _SUFFIXES[suffix]
        return cls(t, action, state)

    def with_state(self, state: State) -> Instant:
        action = self.action
        if state is State.COMPLETED:
            action = action.comparable
        return Instant(self.time, action, state)

    @property
    def is_completed(self) -> bool:
        return self.state is State.COMPLETED

    @property
    def is_requested(self) -> bool:
        return self.state is State.REQUESTED

    @property
    def is_inflight(self) -> bool:
        return self.state is State.INFLIGHT

    def _key(self) -> tuple[str, str, int]:
        return (str(self.time), self.action.comparable.value, int(self.state))

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Instant):
            return NotImplemented
        return self._key() < other._key()

    def __str__(self) -> str:
        return f"[{self.time}__{self.action.value}__{self.state.name}]"
