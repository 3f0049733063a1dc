"""The active timeline as an immutable, sorted collection of instants (timeline layout version 1).

Mirrors ``HoodieDefaultTimeline`` and ``TimelineLayoutV1``: all state files of an instant stay on disk; the
timeline keeps, per (time, comparable action), the instant in its latest state.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from lake_orchestration.config.keys import PROPERTIES_BACKUP_FILE, PROPERTIES_FILE
from lake_orchestration.hudi.model.instant import (
    WRITE_ACTIONS,
    Action,
    Instant,
    InstantTime,
    State,
    is_instant_file_suffix,
)

# Names in .hoodie/ that are not instants and are expected there ("lock": the table lock of
# FileSystemBasedLockProvider, see hudi/table/lock.py).
_KNOWN_NON_INSTANT = {PROPERTIES_FILE, PROPERTIES_BACKUP_FILE, "lock"}


@dataclass(frozen=True)
class Timeline:
    """A sorted, immutable sequence of instants.

    Attributes:
        instants: instants in timeline order (time, then action, then state).
        ignored_files: files found in ``.hoodie/`` that are not timeline files (reported, never touched).
    """

    instants: tuple[Instant, ...] = ()
    ignored_files: tuple[str, ...] = field(default=(), compare=False)

    @classmethod
    def from_file_names(cls, names: Iterable[str], *, where: str = "") -> Timeline:
        """Build the timeline from the file names of ``.hoodie/`` (non-recursive listing).

        Names with a timeline suffix but an invalid instant raise :class:`InvalidFileNameError`; other
        unknown names are kept in ``ignored_files``.
        """
        latest: dict[tuple[str, str], Instant] = {}
        ignored: list[str] = []
        for name in names:
            suffix = name.partition(".")[2]
            if name in _KNOWN_NON_INSTANT or name.startswith("."):
                continue  # hoodie.properties, Hadoop .crc side files, hidden temp files
            if not is_instant_file_suffix(suffix):
                ignored.append(name)
                continue
            inst = Instant.from_file_name(name, where=where)
            key = (str(inst.time), inst.action.comparable.value)
            cur = latest.get(key)
            if cur is None or inst.state > cur.state:
                latest[key] = inst
        return cls(tuple(sorted(latest.values())), tuple(sorted(ignored)))

    @classmethod
    def of(cls, instants: Iterable[Instant]) -> Timeline:
        return cls(tuple(sorted(instants)))

    # -- filters -------------------------------------------------------------------------------------------------
    def filter(self, pred) -> Timeline:  # type: ignore[no-untyped-def]
        return Timeline(tuple(i for i in self.instants if pred(i)), self.ignored_files)

    def with_actions(self, *actions: Action) -> Timeline:
        s = set(actions)
        return self.filter(lambda i: i.action in s)

    def completed(self) -> Timeline:
        return self.filter(lambda i: i.state is State.COMPLETED)

    def pending(self) -> Timeline:
        return self.filter(lambda i: i.state is not State.COMPLETED)

    def commits(self) -> Timeline:
        """The write timeline: commit, deltacommit, replacecommit, compaction, logcompaction."""
        return self.filter(lambda i: i.action in WRITE_ACTIONS)

    def completed_commits(self) -> Timeline:
        return self.commits().completed()

    def pending_compactions(self) -> Timeline:
        return self.filter(lambda i: i.action is Action.COMPACTION and not i.is_completed)

    def pending_log_compactions(self) -> Timeline:
        return self.filter(lambda i: i.action is Action.LOG_COMPACTION and not i.is_completed)

    def completed_and_compactions(self) -> Timeline:
        """``filterCompletedAndCompactionInstants`` of the write timeline: what file slices may be read from."""
        return self.commits().filter(lambda i: i.is_completed or i.action is Action.COMPACTION)

    # -- queries -------------------------------------------------------------------------------------------------
    def __iter__(self) -> Iterator[Instant]:
        return iter(self.instants)

    def __len__(self) -> int:
        return len(self.instants)

    def __bool__(self) -> bool:
        return bool(self.instants)

    @property
    def first(self) -> Instant | None:
        return self.instants[0] if self.instants else None

    @property
    def last(self) -> Instant | None:
        return self.instants[-1] if self.instants else None

    def times(self) -> set[str]:
        return {str(i.time) for i in self.instants}

    def get(self, time: str, action: Action | None = None) -> Instant | None:
        for i in self.instants:
            if i.time == time and (action is None or i.action.comparable is action.comparable):
                return i
        return None

    def contains(self, time: str) -> bool:
        return any(i.time == time for i in self.instants)

    def is_before_start(self, time: str) -> bool:
        """True if ``time`` precedes the first instant (so it was archived and counts as committed)."""
        return bool(self.instants) and time < self.instants[0].time

    def contains_or_before_start(self, time: str) -> bool:
        """``containsOrBeforeTimelineStarts``."""
        return self.contains(time) or self.is_before_start(time)

    def after(self, time: str) -> Timeline:
        return self.filter(lambda i: i.time > time)

    def latest_completed_commit_time(self) -> InstantTime | None:
        last = self.completed_commits().last
        return last.time if last else None
