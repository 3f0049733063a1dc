"""Storage over ``pyarrow.fs``: local by default, ``s3://`` (``s3a://``), ``gs://`` and ``hdfs://`` URIs with options.

Every timeline file is written with :meth:`Storage.create_if_absent`, which never overwrites:

- local: a unique temporary file with ``O_CREAT|O_EXCL``, hard-linked to the final name (atomic);
- S3 and GCS: one conditional PUT through ``obstore`` (``If-None-Match: *`` / ``x-goog-if-generation-match: 0``,
  atomic on the store's side, see :mod:`lake_orchestration.io.object_store`); a store without conditional writes
  raises :class:`ConditionalWriteUnsupportedError` unless the user declared it with ``conditional_put=false``;
- HDFS: pyarrow exposes no exclusive create there, so creates raise :class:`ConditionalWriteUnsupportedError`
  unless ``conditional_put=false`` declares it; they are then a check followed by a write (not atomic).

``conditional_put=false`` is for a single writer only: the file-based table lock refuses such a storage.
"""

from __future__ import annotations

import functools
import logging
import os
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.fs as pafs

if TYPE_CHECKING:
    import pyarrow.parquet as pq

from lake_orchestration.errors import (
    AmbiguousWriteError,
    CommitStateUnknownError,
    ConditionalWriteUnsupportedError,
    CorruptFileError,
    FileAlreadyExistsError,
    StorageError,
)
from lake_orchestration.io.object_store import (
    GCS_SCHEMES,
    PROJECT_OPTIONS,
    S3_SCHEMES,
    AtomicCreator,
    conditional_put_mode,
    s3_filesystem_options,
)

log = logging.getLogger(__name__)

_CREATE_ATTEMPTS = 3
"""Conditional PUTs of one create: the first, and again after a failure that left the object absent."""
_READ_BACK_ATTEMPTS = 3
"""Tries to read an object back after an ambiguous create."""
_UNREADABLE = object()
""":meth:`Storage._read_back`: the object could not be read (its existence is unknown)."""


@dataclass(frozen=True, kw_only=True)
class FileInfo:
    """One listed file."""

    path: str
    """Full path in the storage's own form (no scheme for object stores, absolute for local)."""
    name: str
    """Base name of the file."""
    size: int
    """Size in bytes."""
    mtime_ms: int
    """Modification time in epoch milliseconds (0 if the store does not report it)."""
    is_dir: bool = False
    """True for directories."""


class Storage:
    """A file system rooted at a table's base URI.

    Args:
        base_uri: ``/local/path``, ``file:///path``, ``s3://bucket/prefix``, ``gs://bucket/prefix`` or
            ``hdfs://host:port/path``.
        options: storage options passed to the pyarrow file system (``region``, ``endpoint_override``,
            ``access_key``, ``secret_key`` ...; for S3 whatever they leave out comes from the standard AWS
            environment) and mapped to obstore for atomic creates, plus ``conditional_put`` (``auto``, ``true``,
            ``false``: see :mod:`lake_orchestration.io.object_store`). Never logged.

    Example:
        >>> s = Storage("/tmp/tbl")
        >>> s.join(".hoodie", "hoodie.properties")
        '/tmp/tbl/.hoodie/hoodie.properties'
    """

    def __init__(self, base_uri: str, *, options: Mapping[str, str] | None = None) -> None:
        self.base_uri = base_uri.rstrip("/") or "/"
        self._options = dict(options or {})
        self.scheme = urlparse(self.base_uri).scheme.lower()
        self.fs, self.base_path = _make_filesystem(self.base_uri, self._options)
        self.is_local = isinstance(self.fs, pafs.LocalFileSystem)
        self._conditional_put = conditional_put_mode(self._options, uri=self.base_uri)
        self._creator: AtomicCreator | None = None
        if self.scheme in S3_SCHEMES or self.scheme in GCS_SCHEMES:
            bucket = urlparse(self.base_uri).netloc
            self._creator = AtomicCreator(self.scheme, bucket, self._options, uri=self.base_uri)

    @property
    def atomic_create(self) -> bool:
        """True if :meth:`create_if_absent` is atomic: local disk, and S3/GCS unless ``conditional_put=false``
        declared the store has no conditional writes. HDFS: False (pyarrow has no exclusive create there)."""
        if self.is_local:
            return True
        return self._creator is not None and self._conditional_put != "false"

    @property
    def options(self) -> dict[str, str]:
        """The storage options (to hand to executors; never log them)."""
        return dict(self._options)

    # -- paths -------------------------------------------------------------------------------------------------
    def join(self, *parts: str) -> str:
        """Path of ``parts`` relative to the base path (empty parts are skipped)."""
        segs = [p.strip("/") for p in parts if p and p.strip("/")]
        return "/".join([self.base_path.rstrip("/"), *segs]) if segs else self.base_path

    def uri(self, path: str) -> str:
        """A user-facing URI for a storage path (for messages)."""
        if self.is_local:
            return path
        scheme = urlparse(self.base_uri).scheme
        return f"{scheme}://{path}"

    def relative(self, path: str) -> str:
        """``path`` relative to the base path."""
        base = self.base_path.rstrip("/") + "/"
        return path[len(base) :] if path.startswith(base) else path

    # -- reading -----------------------------------------------------------------------------------------------
    def exists(self, path: str) -> bool:
        return self._info(path).type != pafs.FileType.NotFound

    def is_dir(self, path: str) -> bool:
        return self._info(path).type == pafs.FileType.Directory

    def read_bytes(self, path: str) -> bytes:
        """Whole file content."""
        try:
            with self.fs.open_input_stream(path) as f:
                return bytes(f.read())
        except FileNotFoundError as err:
            raise StorageError("File not found", path=self.uri(path)) from err
        except OSError as err:
            raise StorageError(f"Cannot read file ({err})", path=self.uri(path)) from err

    def open_input_file(self, path: str) -> pa.NativeFile:
        """A random-access file (for parquet)."""
        try:
            return self.fs.open_input_file(path)
        except FileNotFoundError as err:
            raise StorageError("File not found", path=self.uri(path)) from err
        except OSError as err:
            raise StorageError(f"Cannot open file ({err})", path=self.uri(path)) from err

    def open_parquet(self, path: str) -> pq.ParquetFile:
        """A parquet file opened for reading (footer read). A file that is not valid parquet (empty, truncated,
        garbage) raises :class:`CorruptFileError` naming it, never pyarrow's own error; so do its ``read``,
        ``read_row_group`` and ``iter_batches`` when a page does not decode (a read error of a remote store is a
        :class:`StorageError`)."""
        f = self.open_input_file(path)
        try:
            return _checked_parquet_file_class()(f, storage=self, path=path)
        except (pa.ArrowException, OSError) as err:
            f.close()
            raise self.parquet_error(path, err) from err

    def parquet_error(self, path: str, err: Exception) -> StorageError | CorruptFileError:
        """The project error for pyarrow's ``err`` reading the parquet file ``path``."""
        detail = str(err).splitlines()[0] if str(err) else type(err).__name__
        decode = isinstance(err, pa.ArrowInvalid) or any(w in str(err).lower() for w in ("deserializ", "corrupt"))
        if decode or self.is_local:
            return CorruptFileError(self.uri(path), f"not a readable Parquet file ({detail})")
        return StorageError(f"Cannot read Parquet file ({detail})", path=self.uri(path))

    def size(self, path: str) -> int:
        info = self._info(path)
        if info.type == pafs.FileType.NotFound:
            raise StorageError("File not found", path=self.uri(path))
        return int(info.size or 0)

    def list_dir(self, path: str, *, missing_ok: bool = True) -> list[FileInfo]:
        """Entries directly under ``path`` (not recursive)."""
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(path, recursive=False, allow_not_found=missing_ok))
        except FileNotFoundError as err:
            raise StorageError("Directory not found", path=self.uri(path)) from err
        except OSError as err:
            raise StorageError(f"Cannot list directory ({err})", path=self.uri(path)) from err
        return [_to_file_info(i) for i in infos]

    def walk_files(self, path: str) -> Iterator[FileInfo]:
        """Every file under ``path``, recursively."""
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(path, recursive=True, allow_not_found=True))
        except OSError as err:
            raise StorageError(f"Cannot list directory ({err})", path=self.uri(path)) from err
        for i in infos:
            if i.type == pafs.FileType.File:
                yield _to_file_info(i)

    def mtime_ms(self, path: str) -> int | None:
        info = self._info(path)
        if info.type == pafs.FileType.NotFound:
            return None
        return _to_file_info(info).mtime_ms

    # -- writing -----------------------------------------------------------------------------------------------
    def write_bytes(self, path: str, data: bytes) -> None:
        """Write (or overwrite) a file. Data files only: timeline files use :meth:`create_if_absent`."""
        self._make_parent(path)
        try:
            with self.fs.open_output_stream(path) as f:
                f.write(data)
        except OSError as err:
            raise StorageError(f"Cannot write file ({err})", path=self.uri(path)) from err

    def open_output_stream(self, path: str) -> pa.NativeFile:
        self._make_parent(path)
        try:
            return self.fs.open_output_stream(path)
        except OSError as err:
            raise StorageError(f"Cannot create file ({err})", path=self.uri(path)) from err

    def create_if_absent(self, path: str, data: bytes) -> None:
        """Create ``path`` with ``data`` only if it does not exist; raise :class:`FileAlreadyExistsError` if it does.

        Local: ``O_CREAT | O_EXCL`` on a temp file, then ``link`` (atomic, never overwrites, never leaves a
        partial file under the final name). S3/GCS: one conditional PUT through obstore (atomic on the store).
        With ``conditional_put=false`` (a store declared without conditional writes) and on HDFS: an existence
        check, then a write (not atomic; see :attr:`atomic_create`).

        On S3/GCS an ambiguous failure (a ``412`` answering a retried PUT, a transport error) is decided by reading
        the object back (:meth:`_create_on_store`).

        Raises:
            FileAlreadyExistsError: the file exists (another writer's).
            ConditionalWriteUnsupportedError: the object store turned out to have no conditional writes.
            CommitStateUnknownError: S3/GCS: the create failed ambiguously and reading back could not decide it.
        """
        self._make_parent(path)
        if self.is_local:
            tmp = f"{path}.{uuid.uuid4().hex}.tmp"
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                try:
                    os.write(fd, data)
                    os.fsync(fd)
                finally:
                    os.close(fd)
                try:
                    os.link(tmp, path)
                except FileExistsError as err:
                    raise FileAlreadyExistsError(self.uri(path)) from err
            except OSError as err:
                if isinstance(err, FileExistsError):
                    raise FileAlreadyExistsError(self.uri(path)) from err
                raise StorageError(f"Cannot create file ({err})", path=self.uri(path)) from err
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
            return
        if self._creator is not None and self._conditional_put != "false":
            self._create_on_store(path, data)
            return
        if self._conditional_put != "false":
            raise ConditionalWriteUnsupportedError(
                self.uri(path), f"pyarrow's {self.scheme} client has no exclusive create"
            )
        # conditional_put=false: the user declared a single writer; not atomic
        if self.exists(path):
            raise FileAlreadyExistsError(self.uri(path))
        self.write_bytes(path, data)

    def _create_on_store(self, path: str, data: bytes) -> None:
        """The conditional PUT, with the ambiguous-write rule (pyiceberg's and Paimon's "unknown commit state").

        A conditional PUT the store applied but whose response was lost is retried by the client and answered
        ``412``; a transport error leaves it unknown whether the store applied it. Neither is a lost race by
        itself, so the object is read back and decided by its content: what this attempt wrote (its content is the
        attempt token: commit metadata naming this attempt's files, an archive file's records, a lock's owner
        token, a Paimon snapshot naming this attempt's manifest lists) means created by us; other content means
        another writer won; absent means not created, and the create is sent again. Undecidable (the object
        cannot be read back, or the store keeps failing) raises :class:`CommitStateUnknownError`: the caller must
        leave everything in place.
        """
        _, _, key = path.partition("/")  # bucket/key
        display = self.uri(path)
        assert self._creator is not None
        first: StorageError | None = None
        why = "the store kept failing the create and the object stayed absent"
        for attempt in range(1, _CREATE_ATTEMPTS + 1):
            try:
                self._creator.create(key, data, display=display)
                if attempt > 1:
                    log.warning("Created %s on attempt %d after an ambiguous failure (%s)", display, attempt, first)
                return
            except FileAlreadyExistsError as err:
                if first is None and not err.ambiguous:
                    raise  # answered to our first request: another writer's object, a plain lost race
                first = first or err
                current = err
            except AmbiguousWriteError as err:  # a transport or server error: applied or not, unknown
                first = first or err
                current = err
            except StorageError:
                if first is None:
                    raise  # refused before or by the store (configuration, permission): nothing was created
                why = "a later create was refused"
                break
            if not data:
                why = "an empty object's content cannot tell whether this attempt created it"
                break
            found = self._read_back(path)
            if found is _UNREADABLE:
                why = "the object could not be read back to decide whether this attempt created it"
                break
            if found is None:
                if isinstance(current, FileAlreadyExistsError):
                    # 412 and then absent: created by someone and deleted since; not ours (ours is never deleted
                    # by us before the caller knows it was created)
                    raise current
                continue  # the PUT did not apply: send it again (a late copy of it would be answered 412)
            if found == data:
                log.warning(
                    "The create of %s was answered ambiguously (%s) but the object holds exactly what this attempt "
                    "wrote: it was created by this attempt (its response was lost)",
                    display,
                    current,
                )
                return
            if isinstance(current, FileAlreadyExistsError):
                raise current  # a lost race: another writer's content
            raise FileAlreadyExistsError(display) from current
        raise CommitStateUnknownError(
            f"The create of {display} failed ambiguously ({first}) and {why}; expected an answer, or an object to "
            "read back and compare with this attempt's content. Nothing was cleaned up: check whether the object "
            "exists and holds this attempt's content before retrying",
            path=display,
        )

    def _read_back(self, path: str) -> bytes | object | None:
        """The object's content, None if absent, :data:`_UNREADABLE` if it cannot be read (a few tries)."""
        for i in range(_READ_BACK_ATTEMPTS):
            try:
                info = self.fs.get_file_info(path)
                if info.type == pafs.FileType.NotFound:
                    return None
                with self.fs.open_input_stream(path) as f:
                    return bytes(f.read())
            except FileNotFoundError:
                return None
            except OSError as err:
                log.warning(
                    "Reading back %s failed (%s), try %d of %d", self.uri(path), err, i + 1, _READ_BACK_ATTEMPTS
                )
                time.sleep(0.2 * (i + 1))
        return _UNREADABLE

    def delete_file(self, path: str, *, missing_ok: bool = False) -> None:
        try:
            self.fs.delete_file(path)
        except FileNotFoundError as err:
            if not missing_ok:
                raise StorageError("Cannot delete, file not found", path=self.uri(path)) from err
        except OSError as err:
            raise StorageError(f"Cannot delete file ({err})", path=self.uri(path)) from err

    def delete_dir(self, path: str, *, missing_ok: bool = True) -> None:
        try:
            self.fs.delete_dir(path)
        except FileNotFoundError as err:
            if not missing_ok:
                raise StorageError("Cannot delete, directory not found", path=self.uri(path)) from err
        except OSError as err:
            raise StorageError(f"Cannot delete directory ({err})", path=self.uri(path)) from err

    def make_dirs(self, path: str) -> None:
        try:
            self.fs.create_dir(path, recursive=True)
        except OSError as err:
            raise StorageError(f"Cannot create directory ({err})", path=self.uri(path)) from err

    # -- internals ---------------------------------------------------------------------------------------------
    def _info(self, path: str) -> pafs.FileInfo:
        try:
            return self.fs.get_file_info(path)
        except OSError as err:
            raise StorageError(f"Cannot stat ({err})", path=self.uri(path)) from err

    def _make_parent(self, path: str) -> None:
        parent = path.rsplit("/", 1)[0]
        if parent and self.is_local:
            self.make_dirs(parent)

    def __repr__(self) -> str:
        return f"Storage({self.base_uri!r})"


@functools.cache
def _checked_parquet_file_class() -> type[pq.ParquetFile]:
    """``pq.ParquetFile`` whose reads raise :meth:`Storage.parquet_error` (built on first use: pyarrow.parquet is
    imported lazily)."""
    import pyarrow.parquet as pq

    class CheckedParquetFile(pq.ParquetFile):
        def __init__(self, source: pa.NativeFile, *, storage: Storage, path: str) -> None:
            self._storage = storage
            self._path = path
            super().__init__(source)

        def read(self, *args: Any, **kwargs: Any) -> pa.Table:
            try:
                return super().read(*args, **kwargs)
            except (pa.ArrowException, OSError) as err:
                raise self._storage.parquet_error(self._path, err) from err

        def read_row_group(self, *args: Any, **kwargs: Any) -> pa.Table:
            try:
                return super().read_row_group(*args, **kwargs)
            except (pa.ArrowException, OSError) as err:
                raise self._storage.parquet_error(self._path, err) from err

        def iter_batches(self, *args: Any, **kwargs: Any) -> Iterator[pa.RecordBatch]:
            batches = super().iter_batches(*args, **kwargs)
            while True:
                try:
                    batch = next(batches)
                except StopIteration:
                    return
                except (pa.ArrowException, OSError) as err:
                    raise self._storage.parquet_error(self._path, err) from err
                yield batch

    return CheckedParquetFile


def _to_file_info(i: pafs.FileInfo) -> FileInfo:
    mtime = i.mtime_ns // 1_000_000 if i.mtime_ns is not None else 0
    return FileInfo(
        path=i.path,
        name=i.base_name,
        size=int(i.size or 0),
        mtime_ms=mtime,
        is_dir=i.type == pafs.FileType.Directory,
    )


def _make_filesystem(uri: str, options: dict[str, str]) -> tuple[pafs.FileSystem, str]:
    parsed = urlparse(uri)
    scheme = parsed.scheme.lower()
    if scheme in ("", "file") or (len(scheme) == 1 and os.name == "nt"):
        path = parsed.path if scheme == "file" else uri
        return pafs.LocalFileSystem(), os.path.abspath(path)
    if parsed.password is not None or (scheme in S3_SCHEMES + GCS_SCHEMES and "@" in parsed.netloc):
        # s3://KEY:SECRET@bucket/... : a secret on the command line and in every message naming the table
        host = parsed.netloc.rpartition("@")[2]
        raise StorageError(
            "Credentials in the URI are refused (they would show in shell history, ps output, logs and error "
            "messages): give the URI without them and put the credentials in the standard AWS environment "
            "(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_PROFILE) or in a storage options file",
            path=f"{parsed.scheme}://***@{host}{parsed.path}",
        )
    conditional_put_mode(options, uri=uri)  # a bad value fails here, before anything is written
    fs_options = {k: v for k, v in options.items() if k not in PROJECT_OPTIONS}
    try:
        if scheme in S3_SCHEMES:
            # s3a:// (what Java Hudi writes) is the same store; endpoint and region also come from AWS_* variables
            return pafs.S3FileSystem(**s3_filesystem_options(options)), f"{parsed.netloc}{parsed.path}".rstrip("/")
        if scheme in GCS_SCHEMES:
            return pafs.GcsFileSystem(**fs_options), f"{parsed.netloc}{parsed.path}".rstrip("/")
        if scheme == "hdfs":
            host = parsed.hostname or "default"
            port = parsed.port or 8020
            return pafs.HadoopFileSystem(host, port, **fs_options), parsed.path.rstrip("/")
    except (TypeError, ValueError, OSError) as err:
        detail = str(err).splitlines()[0][:300] if str(err) else type(err).__name__
        raise StorageError(
            f"Cannot open {scheme} file system with the given storage options ({detail})", path=uri
        ) from err
    raise StorageError(
        "Unsupported URI scheme (expected a local path, file://, s3://, s3a://, gs:// or hdfs://)", path=uri
    )
