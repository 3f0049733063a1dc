"""Paths as Java Hudi writes them into plans and metadata, and back.

Java Hudi puts Hadoop ``Path.toString()`` values into rollback and clean plans and metadata, in two forms (checked
against the Java-written rollback fixture ``sample_table/mor/parquet/v6_nonpartitioned_rollback``):

* **qualified** — a path that came from a file-system listing: ``file:/tmp/t/p/f.log.1_0-1-1`` for a local table,
  ``s3a://bucket/t/p/f.parquet`` on S3 (the scheme the table was opened with), ``hdfs://nn:8020/t/p/f`` on HDFS.
  Rollback ``logBlocksToBeDeleted``, ``rollbackLogFiles``, ``logFilesFromFailedCommit`` and clean plan
  ``filePath`` values have this form.
* **base-path form** — ``new Path(basePath, relativePath)``: the table's base path as it was given, plus the
  relative path: ``/tmp/t/p/f.parquet`` for a table opened as ``/tmp/t``, ``file:/tmp/t/p/f.parquet`` for
  ``file:///tmp/t``, ``s3a://bucket/t/p/f.parquet`` on S3. Rollback ``filesToBeDeleted`` (from CREATE/MERGE
  markers) and ``successDeleteFiles`` have this form.

:func:`storage_path_of` reads any of these forms back (and the bare storage paths older releases of this project
wrote), so plans written by Java, by this release or by an older one all resolve to the same file.
"""

from __future__ import annotations

from urllib.parse import urlparse

from lake_orchestration.io.storage import Storage


def qualified_path(storage: Storage, path: str) -> str:
    """The fully qualified Hadoop form of the storage path ``path`` (``file:/…``, ``s3a://bucket/…``)."""
    if storage.is_local:
        return "file:" + path
    parsed = urlparse(storage.base_uri)
    if parsed.scheme.lower() == "hdfs":
        return f"{parsed.scheme}://{parsed.netloc}{path}"
    return f"{parsed.scheme}://{path.lstrip('/')}"


def base_path_form(storage: Storage, path: str) -> str:
    """``new Path(basePath, relative).toString()`` for the storage path ``path`` of a file under the table."""
    if storage.is_local:
        return qualified_path(storage, path) if urlparse(storage.base_uri).scheme.lower() == "file" else path
    return qualified_path(storage, path)


def storage_path_of(storage: Storage, full: str) -> str | None:
    """The storage path of ``full`` (a qualified, base-path form or bare storage path of a file under the table);
    ``None`` if it does not name a file under the table's base path."""
    path = full
    scheme = urlparse(full).scheme.lower() if "://" in full or full.startswith("file:") else ""
    if storage.is_local:
        if scheme not in ("", "file"):
            return None
        if scheme == "file":
            path = "/" + urlparse(full).path.lstrip("/")
        candidates = [path]
    elif scheme:
        rest = full.split("://", 1)[1] if "://" in full else full.split(":", 1)[1]
        # s3a://bucket/key -> bucket/key; hdfs://namenode:8020/path -> /path (the authority is not in the path)
        candidates = [rest, "/" + rest.partition("/")[2]]
    else:
        candidates = [path]
    base = storage.base_path.rstrip("/") + "/"
    for c in candidates:
        if c.startswith(base) and len(c) > len(base) and not _escapes(c[len(base) :]):
            return c
    return None


def _escapes(relative: str) -> bool:
    """True if ``relative`` has a ``.`` or ``..`` segment (or an empty one): such a path may name a file outside the
    table although it starts with the base path, and no path Hudi writes has one."""
    return any(seg in ("", ".", "..") for seg in relative.split("/"))
