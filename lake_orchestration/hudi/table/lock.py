"""The table lock: one ``lock`` file, created with create-if-absent, that every service and writer holds for its
critical section.

It is the lock of Hudi's ``FileSystemBasedLockProvider`` (Java 0.15, read from the class): the file
``<hoodie.base.path>/.hoodie/lock`` (or ``<hoodie.write.lock.filesystem.path>/lock``), created without overwrite and
deleted on release, so a Java writer configured with that provider and this project exclude each other
(``docs/how-to/concurrency.md``, tested against Java in ``tests/java/test_beside_java_writer.py``). What Java does:

- ``tryLock``: if the file exists and is older (mtime) than ``hoodie.write.lock.filesystem.expire`` minutes (``0``,
  the default: never), delete it; if it exists otherwise, fail this try; else ``fs.create(lock, false)`` and hold.
  Its ``LockManager`` retries ``hoodie.write.lock.client.num_retries`` times,
  ``hoodie.write.lock.client.wait_time_ms_between_retry`` apart, then fails the write.
- The create is a check-then-create on Hadoop's local file system (``exists`` then an open without O_EXCL), and the
  ``LockInfo`` JSON is written only ``if (!fs.exists(lock))`` right after the create: Java's lock file is **empty**,
  with Hadoop's checksum file ``.lock.crc`` beside it. Java reads the content back only as a string for its log.
- ``unlock``: delete the file (and its ``.crc``), whoever created it.

Our lock file carries Java's ``LockInfo`` fields (``lockCreateTime``, ``lockThreadName``, ``lockStacksInfo``) plus who
holds it (``lockOwner`` host:pid, ``lockOperation``, ``lockToken``) and how long it stays valid without a heartbeat
(``lockHeartbeatIntervalMs``, ``lockExpireMs``). A lock file without our token (empty: Java's) is judged as Java
judges it, by ``hoodie.write.lock.filesystem.expire``.

Differences from Java, all on the safe side:

- A heartbeat thread touches the file every ``hoodie.write.lock.heartbeat_interval_ms`` while it is held, so a
  live lock is never stale, however long the section runs. A lock of ours is stale once its modification time is
  older than the expiry its holder wrote into it (interval x ``hoodie.client.heartbeat.tolerable.misses``); only
  then may another process take it over. A lock file without those fields (written by Java) is stale after
  ``hoodie.write.lock.filesystem.expire`` minutes, as Java decides; with Java's default ``0`` it never expires.
- A takeover moves the stale file away atomically (rename), checks that what it moved is still the stale lock it
  judged, then creates its own lock and re-reads it to verify ownership; release deletes the file only if it is
  still ours (Java deletes unconditionally). A holder whose heartbeat, check or release finds the file moved aside
  by such a takeover waits for the taker's decision (the file put back, or taken) before judging its lock lost.
- Java's check-then-create can truncate a lock file we have just created (its check ran before our create): we
  create the file with its content at once (a hard link of a written temporary file) and, when a Java writer may
  share the lock (``hoodie.write.concurrency.mode`` other than ``SINGLE_WRITER``, as the Java writer's own), wait
  :data:`RACE_SETTLE_MS` and hold the lock only if the file still has our content; else the Java writer believes
  it holds the lock and we wait for it. Locally every timeline change re-reads the lock file first, so a lock lost
  that way later stops the section before its next change.
- A Java lock's leftover ``.lock.crc`` is deleted once we take over its stale lock or hold the lock ourselves (Java
  would fail to verify our content against it).
- Reentrant per thread: a service that runs another one in the same thread (``compaction run --schedule``) takes
  the lock once; other threads of the same process wait like other processes.
- A lock lost while held (the holder was paused past the expiry and another process took it over) stops the
  section: every timeline file created and every archive change under the lock first calls
  :meth:`HudiTable.check_lock`, which raises :class:`TableLockLostError` once the file is gone or another's (read
  locally before every change, remotely when the heartbeat is late).

With ``hoodie.write.lock.provider=DynamoDBBasedLockProvider`` the lock is instead the DynamoDB lock item of hudi-aws
(Java's provider on S3), see :mod:`~lake_orchestration.hudi.table.dynamodb_lock`; reentrancy, waiting and the
check before every timeline change are the same.

On S3 and GCS the create is a conditional PUT (``If-None-Match: *``, see :meth:`Storage.create_if_absent`): of two
processes creating the lock at the same instant exactly one succeeds. A storage without atomic creates (a store
declared with ``conditional_put=false``, HDFS through pyarrow) is refused, as Java refuses this provider on stores
without atomic creation: use ``InProcessLockProvider`` there, with a single writer. A takeover of a stale lock on an
object store is a read, compare, delete (no conditional delete): if two processes take over the same stale lock
within milliseconds, one can delete the lock the other just created; the one that lost it logs an error and stops
before its next timeline change (:class:`TableLockLostError`).
"""

from __future__ import annotations

import json
import logging
import os
import random
import socket
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.config.options import check_minimums, invalid_option, option, parse_options
from lake_orchestration.errors import (
    FileAlreadyExistsError,
    InvalidOptionError,
    StorageError,
    TableLockedError,
    TableLockLostError,
)
from lake_orchestration.hudi.table.dynamodb_lock import (
    DYNAMODB_LOCK_PROVIDER,
    DynamoDBHeld,
    DynamoDBLockClient,
    DynamoDBLockConfig,
)
from lake_orchestration.hudi.table.hudi_table import HOODIE_DIR, HudiTable
from lake_orchestration.io.storage import Storage

log = logging.getLogger(__name__)

LOCK_FILE_NAME = "lock"
"""``FileSystemBasedLockProvider.LOCK_FILE_NAME``."""
FILESYSTEM_LOCK_PROVIDER = "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"
IN_PROCESS_LOCK_PROVIDER = "org.apache.hudi.client.transaction.lock.InProcessLockProvider"
_ALL_PROVIDERS = (FILESYSTEM_LOCK_PROVIDER, DYNAMODB_LOCK_PROVIDER, IN_PROCESS_LOCK_PROVIDER)
_PROVIDERS = {p.rsplit(".", 1)[-1].lower(): p for p in _ALL_PROVIDERS}
_PROVIDERS_TEXT = f"{FILESYSTEM_LOCK_PROVIDER}, {DYNAMODB_LOCK_PROVIDER} or {IN_PROCESS_LOCK_PROVIDER}"
JAVA_EMPTY_LOCK_OWNER = "a Java writer (FileSystemBasedLockProvider: empty lock file)"
"""Owner named for an empty lock file: what Java 0.15's ``FileSystemBasedLockProvider`` leaves while it holds the
lock (``acquireLock`` writes ``LockInfo`` only ``if (!fs.exists(lockFile))`` right after creating that file)."""
RACE_SETTLE_MS = 200
"""After creating the lock file locally, how long to wait before checking that it is still ours: a Java writer
whose check (``fs.exists``) ran before our create opens the same file without O_EXCL and truncates it (Hadoop's
``RawLocalFileSystem.create`` is check-then-open), believing it holds the lock. Its window is the few
milliseconds between its check and its open; a file found empty (or changed) after this pause is not ours."""
_JAVA_TIME_FORMAT = "%Y-%m-%d %H:%M:%S.%f"  # Java's SimpleDateFormat("yyyy-MM-dd HH:mm:ss.SSS"), cut to ms
_MAX_STACK_FRAMES = 30


def _provider(name: str) -> str:
    """The provider class of a full or short (any case) provider name."""
    return _PROVIDERS[name.rsplit(".", 1)[-1].lower()]


@dataclass(frozen=True, kw_only=True)
class LockConfig:
    """Table-lock settings, under Hudi's ``hoodie.write.lock.*`` key names.

    Defaults: wait up to 60 s (Java's ``hoodie.write.lock.wait_time_ms``), polling every second (Java's
    ``hoodie.write.lock.wait_time_ms_between_retry``); heartbeat every 10 s, so a lock whose holder died is taken
    over 20 s after its last heartbeat (2 tolerable misses); Java lock files never expire (Java's default).
    """

    provider: str = option(HoodieKey.LOCK_PROVIDER, FILESYSTEM_LOCK_PROVIDER, parse=_provider, expected=_PROVIDERS_TEXT)
    """``hoodie.write.lock.provider``: ``FileSystemBasedLockProvider`` (the lock file) or ``InProcessLockProvider``
    (threads of one process only: for a table only ever changed by that process); short names are accepted."""
    path: str | None = option(HoodieKey.LOCK_FILESYSTEM_PATH, None)
    """``hoodie.write.lock.filesystem.path``: directory (path or URI) holding the ``lock`` file; default
    ``<base>/.hoodie`` as in Java. Every process (Java included) must use the same one."""
    expire_minutes: int = option(HoodieKey.LOCK_FILESYSTEM_EXPIRE, 0, minimum=0)
    """``hoodie.write.lock.filesystem.expire``: minutes after which a lock file without our heartbeat fields (one
    written by Java) is stale; ``0`` = never (Java's default)."""
    wait_time_ms: int = option(HoodieKey.LOCK_WAIT_TIME_MS, 60_000, minimum=0)
    """``hoodie.write.lock.wait_time_ms``: how long to wait for a held lock before :class:`TableLockedError`."""
    retry_wait_ms: int = option(HoodieKey.LOCK_RETRY_WAIT_TIME_MS, 1_000, minimum=0)
    """``hoodie.write.lock.wait_time_ms_between_retry``: pause between two attempts while waiting."""
    heartbeat_interval_ms: int = option(HoodieKey.LOCK_HEARTBEAT_INTERVAL_MS, 10_000, minimum=1)
    """``hoodie.write.lock.heartbeat_interval_ms``: how often the holder refreshes the lock file's mtime."""
    tolerable_misses: int = option(HoodieKey.HEARTBEAT_TOLERABLE_MISSES, 2, minimum=1)
    """``hoodie.client.heartbeat.tolerable.misses``: missed heartbeats after which the lock is stale."""
    concurrency_mode: str = option(HoodieKey.WRITE_CONCURRENCY_MODE, "SINGLE_WRITER", parse=str.upper)
    """``hoodie.write.concurrency.mode`` of the table's writers. A Java writer takes the lock file only in a
    multi-writer mode (``OPTIMISTIC_CONCURRENCY_CONTROL``), and docs/how-to/concurrency.md asks for the same mode on
    our side beside it: only then is a lock we create locally checked again after :data:`RACE_SETTLE_MS` against
    Java's check-then-create (with ``SINGLE_WRITER`` no Java writer shares the lock, so no process truncates it)."""
    dynamodb: DynamoDBLockConfig = field(default_factory=DynamoDBLockConfig)
    """``hoodie.write.lock.dynamodb.*``: the lock item of ``DynamoDBBasedLockProvider`` (its lease is
    ``hoodie.write.lock.wait_time_ms``, as in Java)."""

    def __post_init__(self) -> None:
        check_minimums(self)
        if self.provider not in _PROVIDERS.values():
            raise invalid_option(HoodieKey.LOCK_PROVIDER.key, self.provider, _PROVIDERS_TEXT)

    @property
    def expiry_ms(self) -> int:
        """A lock of ours is stale when its mtime is older than this (heartbeat interval x tolerable misses)."""
        return self.heartbeat_interval_ms * self.tolerable_misses

    @property
    def shared_with_java(self) -> bool:
        """A Java writer may take the same lock file (any mode but ``SINGLE_WRITER``, see :attr:`concurrency_mode`)."""
        return self.concurrency_mode != "SINGLE_WRITER"

    @property
    def uses_file(self) -> bool:
        return self.provider == FILESYSTEM_LOCK_PROVIDER

    @property
    def uses_dynamodb(self) -> bool:
        return self.provider == DYNAMODB_LOCK_PROVIDER

    def to_options(self) -> dict[str, str]:
        """The Hudi keys of these settings, for a callee that takes an option map: ``from_options(to_options())``
        gives the same config, so a nested service locks the same file with the same settings."""
        out = {
            HoodieKey.LOCK_PROVIDER.key: self.provider,
            HoodieKey.LOCK_FILESYSTEM_EXPIRE.key: str(self.expire_minutes),
            HoodieKey.LOCK_WAIT_TIME_MS.key: str(self.wait_time_ms),
            HoodieKey.LOCK_RETRY_WAIT_TIME_MS.key: str(self.retry_wait_ms),
            HoodieKey.LOCK_HEARTBEAT_INTERVAL_MS.key: str(self.heartbeat_interval_ms),
            HoodieKey.HEARTBEAT_TOLERABLE_MISSES.key: str(self.tolerable_misses),
            HoodieKey.WRITE_CONCURRENCY_MODE.key: self.concurrency_mode,
        }
        if self.path:
            out[HoodieKey.LOCK_FILESYSTEM_PATH.key] = self.path
        d = self.dynamodb
        for key, value in (
            (HoodieKey.LOCK_DYNAMODB_TABLE, d.table),
            (HoodieKey.LOCK_DYNAMODB_PARTITION_KEY, d.partition_key),
            (HoodieKey.LOCK_DYNAMODB_REGION, d.region),
            (HoodieKey.LOCK_DYNAMODB_ENDPOINT_URL, d.endpoint_url),
            (HoodieKey.LOCK_DYNAMODB_BILLING_MODE, d.billing_mode),
        ):
            if value:
                out[key.key] = value
        return out

    @classmethod
    def from_options(cls, options: Mapping[str, str] | None, *, service: str = "") -> LockConfig:
        """Parse the ``hoodie.write.lock.*`` keys (and ``hoodie.client.heartbeat.tolerable.misses``) of an option
        map; other keys are ignored.

        Raises:
            InvalidOptionError: a value does not parse or is out of range (the message names the key and value).
        """
        dynamodb = parse_options(DynamoDBLockConfig, options, service=service)
        return parse_options(cls, options, service=service, dynamodb=dynamodb)


@dataclass(frozen=True, kw_only=True)
class LockInfo:
    """A lock as found in (or written to) the lock file."""

    path: str
    """User-facing path of the lock file."""
    owner: str
    """``host:pid`` of the holder, or Java's ``lockThreadName`` for a lock written by Java."""
    operation: str
    """What the holder is doing (``archive``, ``clean commit`` ...); empty for a Java lock."""
    since: str
    """``lockCreateTime`` as written (local time ``yyyy-MM-dd HH:mm:ss.SSS``)."""
    token: str = ""
    """Unique id of one acquisition; empty for a Java lock."""
    mtime_ms: int = 0
    """Last heartbeat (modification time of the file), epoch ms."""
    expire_ms: int | None = None
    """Age of the mtime after which the lock is stale; None = never."""
    foreign: bool = False
    """True if the file does not carry our fields (written by Java or by hand)."""
    raw: str = field(default="", repr=False, compare=False)
    """The file's content."""

    def is_stale(self, now_ms: int) -> bool:
        return self.expire_ms is not None and now_ms - self.mtime_ms > self.expire_ms

    def expires_text(self) -> str:
        if self.expire_ms is None:
            return "never expires (hoodie.write.lock.filesystem.expire=0)"
        at = datetime.fromtimestamp((self.mtime_ms + self.expire_ms) / 1000).strftime(_JAVA_TIME_FORMAT)[:-3]
        return f"expires at {at} unless its holder's heartbeat refreshes it"


def lock_storage(table: HudiTable, config: LockConfig) -> tuple[Storage, str]:
    """The storage and the path of the lock file for ``table``."""
    if config.path:
        st = Storage(config.path, options=table.storage.options)
        return st, st.join(LOCK_FILE_NAME)
    return table.storage, table.storage.join(HOODIE_DIR, LOCK_FILE_NAME)


def read_lock(table: HudiTable, config: LockConfig | None = None) -> LockInfo | None:
    """The lock currently held on ``table`` (None if the lock file does not exist)."""
    cfg = config or LockConfig()
    storage, path = lock_storage(table, cfg)
    return _read(storage, path, cfg)


def _read(storage: Storage, path: str, cfg: LockConfig) -> LockInfo | None:
    mtime = storage.mtime_ms(path)
    if mtime is None:
        return None
    try:
        raw = storage.read_bytes(path).decode("utf-8", errors="replace")
    except StorageError:
        if not storage.exists(path):
            return None  # released between the stat and the read
        raise
    try:
        obj = json.loads(raw)
    except ValueError:
        obj = None
    java_expire = cfg.expire_minutes * 60_000 if cfg.expire_minutes > 0 else None
    if not isinstance(obj, dict):
        # Java 0.15 creates the file and writes LockInfo only if the file does not exist yet, which it always does
        # by then: a Java writer's lock file is empty.
        owner = JAVA_EMPTY_LOCK_OWNER if not raw else "unknown (lock file is not LockInfo JSON)"
        return LockInfo(
            path=storage.uri(path),
            owner=owner,
            operation="",
            since=datetime.fromtimestamp(mtime / 1000).strftime(_JAVA_TIME_FORMAT)[:-3],
            mtime_ms=mtime,
            expire_ms=java_expire,
            foreign=True,
            raw=raw,
        )
    token = str(obj.get("lockToken") or "")
    expire: int | None = java_expire
    foreign = True
    if token:
        try:
            expire = int(obj["lockExpireMs"])
            foreign = False
        except (KeyError, TypeError, ValueError):
            expire = cfg.expiry_ms
            foreign = False
    owner = str(obj.get("lockOwner") or "") or f"a Java writer (thread {obj.get('lockThreadName', '?')})"
    return LockInfo(
        path=storage.uri(path),
        owner=owner,
        operation=str(obj.get("lockOperation") or ""),
        since=str(obj.get("lockCreateTime") or ""),
        token=token,
        mtime_ms=mtime,
        expire_ms=expire,
        foreign=foreign,
        raw=raw,
    )


def _content(table: HudiTable, operation: str, token: str, cfg: LockConfig) -> tuple[bytes, str]:
    since = datetime.now().strftime(_JAVA_TIME_FORMAT)[:-3]
    stack = [
        f"{f.filename.rsplit('/', 1)[-1].removesuffix('.py')}.{f.name} ({f.filename.rsplit('/', 1)[-1]}:{f.lineno})"
        for f in reversed(traceback.extract_stack()[-_MAX_STACK_FRAMES:])
    ]
    obj = {
        "lockCreateTime": since,
        "lockThreadName": threading.current_thread().name,
        "lockStacksInfo": stack,
        "lockOwner": f"{socket.gethostname()}:{os.getpid()}",
        "lockOperation": operation,
        "lockTable": table.base_uri,
        "lockToken": token,
        "lockHeartbeatIntervalMs": cfg.heartbeat_interval_ms,
        "lockExpireMs": cfg.expiry_ms,
    }
    # Jackson's default pretty printer, as Java's LockInfo.toString() writes it.
    return json.dumps(obj, indent=2, separators=(",", " : ")).encode("utf-8"), since


def _now_ms() -> int:
    return int(time.time() * 1000)


class _Held:
    """One lock held by this process (per lock path)."""

    def __init__(self, storage: Storage, path: str, info: LockInfo, content: bytes, cfg: LockConfig) -> None:
        self.storage = storage
        self.path = path
        self.info = info
        self.content = content
        self.cfg = cfg
        self.thread = threading.get_ident()
        self.pid = os.getpid()
        self.depth = 1
        self.lost = False
        self.lost_detail = ""
        self.confirmed = time.monotonic()
        """When the lock file was last seen to be ours (monotonic s): acquisition or a heartbeat."""
        self._stop = threading.Event()
        self._beat_thread: threading.Thread | None = None

    def start_heartbeat(self) -> None:
        if not self.cfg.uses_file:
            return
        name = f"hudi-table-lock-heartbeat-{self.info.token[:8]}"
        self._beat_thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._beat_thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.cfg.heartbeat_interval_ms / 1000):
            try:
                self.beat()
            except Exception:  # boundary of a daemon thread: never die silently, keep beating
                log.exception("Heartbeat of table lock %s failed", self.info.path)

    def _read_current(self) -> LockInfo | None:
        """The lock file as its holder must judge it. Locally a takeover attempt moves the file aside to judge it
        (:func:`_try_take_over`) and puts it back if it was refreshed: while such a moved file exists the lock is
        neither ours nor gone, so wait until the taker decided (bounded by the heartbeat interval), then read."""
        current = _read(self.storage, self.path, self.cfg)
        if current is not None or not self.storage.is_local:
            return current
        deadline = time.monotonic() + max(1.0, self.cfg.heartbeat_interval_ms / 1000)
        while _takeover_in_progress(self.path) and time.monotonic() < deadline:
            time.sleep(0.005)
        return _read(self.storage, self.path, self.cfg)

    def beat(self) -> None:
        """Refresh the lock file's mtime if it is still ours; otherwise record that the lock was lost."""
        current = self._read_current()
        if current is not None and current.token == self.info.token and self.storage.is_local:
            try:
                os.utime(self.path, None)
            except FileNotFoundError:
                # moved aside by a takeover attempt right after our read: judge it once the taker decided
                current = self._read_current()
                if current is not None and current.token == self.info.token:
                    os.utime(self.path, None)
        if current is None or current.token != self.info.token:
            if not self.lost:
                holder = "deleted" if current is None else f"now held by {current.owner} ({current.operation})"
                self.lost_detail = f"the lock file was {holder}"
                self.lost = True
                log.error(
                    "Table lock %s of this process (%s) was lost: the file was %s. The section it protects may "
                    "have overlapped with another process; check the timeline",
                    self.info.path,
                    self.info.operation,
                    holder,
                )
            return
        if not self.storage.is_local:
            self.storage.write_bytes(self.path, self.content)
        self.confirmed = time.monotonic()

    def ensure_held(self) -> None:
        """Raise :class:`TableLockLostError` if this lock was lost; called by the holding thread before each change
        of the timeline or the archive. Locally the lock file is read (and refreshed if still ours) every time;
        remotely no request while the heartbeat is on time, and when it is late (the process was paused, the
        heartbeat thread starved), another process may have judged the lock stale: the file is read then."""
        if not self.cfg.uses_file or threading.get_ident() != self.thread or os.getpid() != self.pid:
            return
        # Locally a read of the lock file costs microseconds: check it before every change, so a lock lost to a
        # Java writer's racing create (see RACE_SETTLE_MS) stops the section at once; remotely only when the
        # heartbeat is late.
        late = (time.monotonic() - self.confirmed) * 1000 > self.cfg.heartbeat_interval_ms
        if not self.lost and (late or self.storage.is_local):
            self.beat()
        if self.lost:
            raise TableLockLostError(
                path=self.info.path, operation=self.info.operation, since=self.info.since, holder=self.lost_detail
            )

    def release(self) -> None:
        self._stop.set()
        if self._beat_thread is not None:
            self._beat_thread.join(timeout=10)
        if not self.cfg.uses_file:
            return
        current = self._read_current()
        if current is not None and current.token == self.info.token:
            self.storage.delete_file(self.path, missing_ok=True)
        elif not self.lost:
            log.error("Table lock %s was no longer held by this process at release; left untouched", self.info.path)


_HELD: dict[str, _Held] = {}
_HELD_GUARD = threading.Lock()


def _takeover_in_progress(path: str) -> bool:
    """True while a local takeover attempt holds the lock file moved aside (``<lock>.<uuid>.tmp``) to judge it."""
    folder, name = os.path.split(path)
    try:
        names = os.listdir(folder or ".")
    except OSError:
        return False
    return any(n.startswith(f"{name}.") and n.endswith(".tmp") and len(n) == len(name) + 37 for n in names)


def _try_take_over(storage: Storage, path: str, stale: LockInfo, cfg: LockConfig) -> bool:
    """Move a stale lock out of the way; True if the lock path is now free of it."""
    now = _now_ms()
    log.warning(
        "Taking over stale table lock %s held by %s (%s) since %s: no heartbeat for %.1f s (expiry %.1f s)",
        stale.path,
        stale.owner,
        stale.operation or "?",
        stale.since,
        (now - stale.mtime_ms) / 1000,
        (stale.expire_ms or 0) / 1000,
    )
    if not storage.is_local:
        again = _read(storage, path, cfg)
        if again is None:
            return True
        if again.raw != stale.raw or not again.is_stale(_now_ms()):
            return False
        storage.delete_file(path, missing_ok=True)
        return True
    # rename is atomic: of several processes taking over the same stale lock exactly one moves it.
    moved = f"{path}.{uuid.uuid4().hex}.tmp"
    try:
        os.rename(path, moved)
    except FileNotFoundError:
        return True
    try:
        with open(moved, encoding="utf-8", errors="replace") as f:
            raw = f.read()
        mtime_ms = os.stat(moved).st_mtime_ns // 1_000_000
        if raw != stale.raw or now - mtime_ms <= (stale.expire_ms or 0):
            # It was refreshed or replaced between our check and the rename: put it back, never take a live lock.
            try:
                os.link(moved, path)
            except FileExistsError:
                log.error("Could not restore table lock %s after a takeover race; its holder will see it lost", path)
            return False
        _remove_checksum_sidecar(storage, path)  # Java's fs.delete of an expired lock removes its .crc too
        return True
    finally:
        os.unlink(moved)


def _attempt(table: HudiTable, storage: Storage, path: str, operation: str, cfg: LockConfig) -> _Held | LockInfo:
    """One try: the held lock on success, else the lock that blocks us."""
    token = uuid.uuid4().hex
    existing = _read(storage, path, cfg)
    if existing is not None:
        if not existing.is_stale(_now_ms()) or not _try_take_over(storage, path, existing, cfg):
            return existing
    content, _ = _content(table, operation, token, cfg)
    try:
        _create_lock_file(storage, path, content)
    except FileAlreadyExistsError:
        blocker = _read(storage, path, cfg)
        return blocker if blocker is not None else existing or _placeholder(storage, path)
    if storage.is_local and cfg.shared_with_java:
        time.sleep(RACE_SETTLE_MS / 1000)
    mine = _read(storage, path, cfg)
    if mine is None or mine.token != token:
        # a Java writer truncated our file in its check-then-create window and believes it holds the lock: it is
        # its lock now (it deletes the file when done); never delete it, wait like for any holder
        if mine is not None and mine.raw == "":
            log.warning("Table lock %s: a Java writer created the lock at the same moment; leaving it to it", path)
        return mine if mine is not None else _placeholder(storage, path)
    _remove_checksum_sidecar(storage, path)
    return _Held(storage, path, mine, content, cfg)


def checksum_sidecar(path: str) -> str:
    """The ``.<name>.crc`` file Hadoop's ``LocalFileSystem`` (a ``ChecksumFileSystem``) writes beside a file it
    creates, and verifies when it reads the file back: Java's lock file comes with ``.lock.crc``."""
    folder, _, name = path.rpartition("/")
    return f"{folder}/.{name}.crc" if folder else f".{name}.crc"


def _remove_checksum_sidecar(storage: Storage, path: str) -> None:
    """Delete a Java lock's leftover ``.lock.crc`` once the lock file is ours (or gone): against our content it
    would fail Java's checksum verification when Java reads the current owner. Java's create makes the ``.crc``
    only after its own create of the lock file succeeded, so while the lock file is ours, a ``.crc`` is stale."""
    if not storage.is_local:
        return
    try:
        os.unlink(checksum_sidecar(path))
    except FileNotFoundError:
        pass
    except OSError as err:
        log.warning("Could not delete the stale checksum file of table lock %s: %s", path, err)


def _create_lock_file(storage: Storage, path: str, content: bytes) -> None:
    """Create the lock file with its content, never overwriting one.

    Locally the content goes to a hidden temporary file beside it (``.lock.<uuid>.tmp``, which no timeline
    reader lists) that is then hard-linked to the lock path: the link fails if the lock exists (as an exclusive
    create would), and the lock file never exists without its content. An exclusive create followed by a write
    would leave a moment in which a Java writer's truncating open (its check-then-create) goes unnoticed: its
    truncation would precede our write, both would believe they hold the lock, and the content check after
    :data:`RACE_SETTLE_MS` would see ours. With the link, any truncation by Java comes after our content and
    that check sees the file emptied.
    """
    if not storage.is_local:
        storage.create_if_absent(path, content)
        return
    folder, name = os.path.split(path)
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as err:  # a file in the way, an unwritable place: never taken for a held lock
        raise StorageError(
            f"Cannot create the folder of the lock file ({err}); check {HoodieKey.LOCK_FILESYSTEM_PATH.key}",
            path=storage.uri(path),
        ) from err
    tmp = os.path.join(folder, f".{name}.{uuid.uuid4().hex}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, content)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.link(tmp, path)
    except FileExistsError as err:
        raise FileAlreadyExistsError(storage.uri(path)) from err
    except OSError as err:
        raise StorageError(f"Cannot create the lock file ({err})", path=storage.uri(path)) from err
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass


def _placeholder(storage: Storage, path: str) -> LockInfo:
    return LockInfo(path=storage.uri(path), owner="another process", operation="", since="just now")


def _in_process(storage: Storage, path: str, other: _Held) -> LockInfo:
    return LockInfo(
        path=storage.uri(path),
        owner=f"another thread of this process ({socket.gethostname()}:{os.getpid()})",
        operation=other.info.operation,
        since=other.info.since,
        mtime_ms=_now_ms(),
        expire_ms=other.cfg.expiry_ms,
    )


@contextmanager
def table_lock(table: HudiTable, *, operation: str, config: LockConfig | None = None) -> Iterator[LockInfo]:
    """Hold the table lock for a critical section.

    Waits up to ``config.wait_time_ms`` for another holder, polling every ``config.retry_wait_ms``; takes over a
    lock only once it is stale (see the module doc). Reentrant within one thread. Once acquired, the table's cached
    timeline is dropped, so the section sees the timeline as of the lock. While held, a heartbeat thread keeps the
    file's mtime fresh; on exit the file is deleted if it is still ours.

    Args:
        table: the table to lock.
        operation: what the section does, for the lock file and error messages (``archive``, ``clean commit``).
        config: lock settings; default :class:`LockConfig()`.

    Yields:
        The lock as written to the lock file.

    Raises:
        TableLockedError: the lock is held by someone else and did not become free within the wait time.

    Example:
        >>> with table_lock(table, operation="archive"):   # doctest: +SKIP
        ...     archive(table)
    """
    cfg = config or LockConfig()
    if cfg.uses_dynamodb:
        with _dynamodb_lock(table, operation, cfg) as info:
            yield info
        return
    if cfg.uses_file:
        storage, path = lock_storage(table, cfg)
        if not storage.atomic_create:
            raise InvalidOptionError(
                f"{HoodieKey.LOCK_PROVIDER.key}={FILESYSTEM_LOCK_PROVIDER} needs atomic creates, which "
                f"{storage.uri(path)} does not offer (storage option conditional_put=false, or HDFS): set "
                f"{HoodieKey.LOCK_PROVIDER.key}={IN_PROCESS_LOCK_PROVIDER} if this process is the only writer"
            )
    else:
        storage, path = table.storage, table.storage.join(HOODIE_DIR, LOCK_FILE_NAME)
    key = storage.uri(path)
    me = threading.get_ident()
    with _HELD_GUARD:
        held = _HELD.get(key)
        if held is not None and held.pid == os.getpid() and held.thread == me:
            held.depth += 1
            reentered = held
        else:
            reentered = None
    if reentered is not None:
        try:
            yield reentered.info
        finally:
            with _HELD_GUARD:
                reentered.depth -= 1
        return

    deadline = time.monotonic() + cfg.wait_time_ms / 1000
    waited = False
    while True:
        with _HELD_GUARD:
            other = _HELD.get(key)
            if other is not None and other.pid != os.getpid():
                _HELD.pop(key)  # inherited through fork: not ours
                other = None
        if other is not None:
            result: _Held | LockInfo = _in_process(storage, path, other)
        elif cfg.uses_file:
            # create-if-absent decides between the threads of this process too; register the winner afterwards
            result = _attempt(table, storage, path, operation, cfg)
            if isinstance(result, _Held):
                with _HELD_GUARD:
                    _HELD[key] = result
        else:
            with _HELD_GUARD:
                taken = _HELD.get(key)
                if taken is not None:
                    result = _in_process(storage, path, taken)
                else:
                    token = uuid.uuid4().hex
                    content, since = _content(table, operation, token, cfg)
                    info = LockInfo(
                        path=storage.uri(path),
                        owner=f"{socket.gethostname()}:{os.getpid()}",
                        operation=operation,
                        since=since,
                        token=token,
                    )
                    result = _Held(storage, path, info, content, cfg)
                    _HELD[key] = result
        if isinstance(result, _Held):
            break
        blocker = result
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TableLockedError(
                table_uri=table.base_uri,
                path=blocker.path,
                owner=blocker.owner,
                operation=blocker.operation,
                since=blocker.since,
                expires=blocker.expires_text(),
                waited_ms=cfg.wait_time_ms,
            )
        if not waited:
            log.info(
                "Table %s is locked by %s (%s) since %s; waiting up to %g s",
                table.base_uri,
                blocker.owner,
                blocker.operation or "?",
                blocker.since,
                cfg.wait_time_ms / 1000,
            )
            waited = True
        pause = cfg.retry_wait_ms / 1000 * random.uniform(0.8, 1.2)  # jitter: waiters do not retry in lockstep
        time.sleep(max(0.0, min(pause, remaining)))

    held = result
    guards = table.__dict__.setdefault("_lock_guards", {})
    try:
        held.start_heartbeat()
        guards[key] = held.ensure_held  # HudiTable.check_lock: timeline and archive changes check the lock first
        table.refresh()  # what the section reads of the timeline must be current as of the lock
        yield held.info
    finally:
        if guards.get(key) == held.ensure_held:
            guards.pop(key, None)
        with _HELD_GUARD:
            _HELD.pop(key, None)
        if sys.exc_info()[1] is None:
            held.release()
        else:
            # the section failed: its error is what the caller must see, not a failure to delete the lock file
            # (which then expires after the heartbeat stops)
            try:
                held.release()
            except Exception:
                log.exception("Could not release the table lock %s after a failed %s", held.info.path, operation)


_DYNAMO_HELD: dict[str, tuple[DynamoDBHeld, int, int, LockInfo]] = {}
"""uri -> (held lock, pid, thread, info) of the DynamoDB locks this process holds."""


@contextmanager
def _dynamodb_lock(table: HudiTable, operation: str, cfg: LockConfig) -> Iterator[LockInfo]:
    """:func:`table_lock` with ``DynamoDBBasedLockProvider``: the Hudi table's item in the lock table (see
    :mod:`~lake_orchestration.hudi.table.dynamodb_lock`); reentrant per thread, waiting, heartbeat and loss detection
    as for the lock file."""
    partition = cfg.dynamodb.partition_key or table.config.name
    client = DynamoDBLockClient(cfg.dynamodb, partition, lease_ms=cfg.wait_time_ms)
    key, me = client.uri, threading.get_ident()
    with _HELD_GUARD:
        mine = _DYNAMO_HELD.get(key)
        reentered = mine is not None and mine[1] == os.getpid() and mine[2] == me
    if reentered and mine is not None:
        yield mine[3]
        return
    client.ensure_table()
    deadline = time.monotonic() + cfg.wait_time_ms / 1000
    waited_ms = cfg.wait_time_ms
    extended = False
    while True:
        with _HELD_GUARD:
            other = _DYNAMO_HELD.get(key)
            busy = other is not None and other[1] == os.getpid()
        result = None if busy else client.try_acquire()
        if isinstance(result, str):
            break
        if result is not None and not result.released and not extended:
            # as Java's lock client (acquireLock): a held item is waited for once its own lease on top of the wait
            # time, the time it takes to judge the item expired; else a dead holder's item whose lease is at least
            # our wait (both default to wait_time_ms) would never be taken over
            deadline += result.lease_ms / 1000
            waited_ms += result.lease_ms
            extended = True
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            owner = result.owner if result is not None else f"another thread of this process ({os.getpid()})"
            raise TableLockedError(
                table_uri=table.base_uri,
                path=key,
                owner=owner,
                operation="",
                since="",
                expires=f"expires {result.lease_ms if result is not None else cfg.wait_time_ms} ms after its holder's "
                "last heartbeat (its lease)",
                waited_ms=waited_ms,
            )
        time.sleep(max(0.0, min(cfg.retry_wait_ms / 1000 * random.uniform(0.8, 1.2), remaining)))
    since = datetime.now().strftime(_JAVA_TIME_FORMAT)[:-3]
    info = LockInfo(path=key, owner=client.owner, operation=operation, since=since, token=result)
    held = DynamoDBHeld(client, result)
    held.start()

    held_pid = os.getpid()

    def ensure_held() -> None:
        if threading.get_ident() != me or os.getpid() != held_pid:
            return
        held.beat()  # one conditional UpdateItem: the item is still ours (and its lease renewed)
        if held.lost:
            raise TableLockLostError(path=key, operation=operation, since=since, holder="taken over or deleted")

    with _HELD_GUARD:
        _DYNAMO_HELD[key] = (held, held_pid, me, info)
    guards = table.__dict__.setdefault("_lock_guards", {})
    failed = False
    try:
        guards[key] = ensure_held
        table.refresh()
        yield info
    except BaseException:
        failed = True
        raise
    finally:
        guards.pop(key, None)
        with _HELD_GUARD:
            _DYNAMO_HELD.pop(key, None)
        try:
            held.release()
        except Exception:
            if not failed:
                raise
            # the section's error is what the caller must see; the item expires after its lease
            log.exception("Could not release the DynamoDB table lock %s after a failed %s", key, operation)
