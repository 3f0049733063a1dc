"""S3 requests per table service: what a service costs on an object store that bills per request.

Starts moto's S3 server on 127.0.0.1 (``moto[server]``, the test extra), builds a MERGE_ON_READ table on it with
this project's writer (3 partitions x 2 file groups, a bulk_insert and upserts, so every file group has a base file
and log files), then runs each service the way a scheduler would (a fresh ``HudiTable`` per step, default options
otherwise) and counts the HTTP requests the server answered during the step, by S3 operation:

* open table: ``HudiTable(...)`` (``hoodie.properties``), its timeline and its file-system view;
* schedule compaction (trigger ``hoodie.compact.inline.max.delta.commits=3``, met);
* run compaction (local engine, the plan just scheduled);
* clean (``hoodie.cleaner.commits.retained=1``, after two more upserts);
* archive (``hoodie.keep.min/max.commits=2/3``, merge enabled with a batch of 2): a first run writes the first
  archive file, a second one (after three more upserts) writes a second and merges the two.

LIST = ListObjectsV2 (one page each), HEAD/GET/DELETE = one object each (DELETE also counts a DeleteObjects), PUT = an
object PUT or one request of a multipart upload (create, part, complete: pyarrow writes small files that way);
``LIST .hoodie/`` counts the listings of ``.hoodie/`` itself (the timeline), ``LIST whole table`` the recursive
listings (no delimiter) of the table's base path: every object of the table, ``.hoodie/`` included.

Usage: python benchmarks/s3_requests.py [--detail]   (``--detail``: every request of every step)
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qs, unquote

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.archive import run_archive
from lake_orchestration.hudi.services.archive.config import ArchiveConfig
from lake_orchestration.hudi.services.clean import run_clean
from lake_orchestration.hudi.services.clean.config import CleanConfig
from lake_orchestration.hudi.services.compaction import CompactionConfig, run_compaction, schedule_compaction
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.write import WriteOptions, write_table

KINDS = ("LIST", "HEAD", "GET", "PUT", "DELETE")
COMPACTION = {"hoodie.compact.inline.max.delta.commits": "3"}
CLEAN = {"hoodie.cleaner.commits.retained": "1"}
ARCHIVE = {
    "hoodie.cleaner.commits.retained": "1",
    "hoodie.keep.min.commits": "2",
    "hoodie.keep.max.commits": "3",
    "hoodie.archive.merge.enable": "true",
    "hoodie.archive.merge.files.batch.size": "2",
}


class Recorder:
    """WSGI middleware in front of moto's app: one (kind, key, query) per request answered."""

    def __init__(self, app: Callable[..., Any]) -> None:
        self.app = app
        self.lock = threading.Lock()
        self.items: list[tuple[str, str, str]] = []

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        method = environ.get("REQUEST_METHOD", "")
        _, _, key = unquote(environ.get("PATH_INFO", "")).lstrip("/").partition("/")
        qs = environ.get("QUERY_STRING", "")
        query = parse_qs(qs, keep_blank_values=True)
        if not key and method == "GET" and "location" not in query:
            kind = "LIST"
            key = (query.get("prefix") or [""])[0]
            if "delimiter" not in query:
                qs += " (recursive)"
        elif not key and method == "POST" and "delete" in query:
            kind = "DELETE"  # DeleteObjects (several keys in one request)
        elif "uploadId" in query or "uploads" in query:
            kind = "PUT"  # a multipart upload's create / part / complete: each billed as a PUT
        else:
            kind = method
        with self.lock:
            self.items.append((kind, key, qs))
        return self.app(environ, start_response)

    def take(self) -> list[tuple[str, str, str]]:
        with self.lock:
            out, self.items = self.items, []
        return out


@contextlib.contextmanager
def s3_server() -> Iterator[tuple[str, Recorder]]:
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        wsgi = server._server  # the werkzeug server: wrap its app to count requests
        rec = Recorder(wsgi.app)
        wsgi.app = rec
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}", rec
    finally:
        server.stop()


def scenario(uri: str, so: dict[str, str], measure: Callable[[str], contextlib.AbstractContextManager[None]]) -> None:
    opts = WriteOptions(
        table_name="t",
        table_type=TableType.MERGE_ON_READ,
        record_key_fields=("uuid",),
        partition_fields=("city",),
        precombine_field="ts",
        max_rows_per_file=10,
        small_file_limit=0,
    )
    base = generate_trips(60, partitions=3, seed=1)
    n = 0

    def upsert() -> None:
        nonlocal n
        n += 1
        write_table(
            uri,
            generate_updates(base, fraction=0.3, seed=n, ts_offset=n * 10**6),
            operation="upsert",
            options=opts,
            storage_options=so,
        )

    write_table(uri, base, operation="bulk_insert", options=opts, storage_options=so)
    for _ in range(3):
        upsert()
    with measure("open table (properties, timeline, fs view)"):
        t = HudiTable(uri, storage_options=so)
        _ = t.timeline
        t.fs_view()
    t = HudiTable(uri, storage_options=so)
    with measure("schedule compaction"):
        r = schedule_compaction(t, config=CompactionConfig.from_options(COMPACTION))
    assert r.scheduled, r.reason
    t = HudiTable(uri, storage_options=so)
    with measure("run compaction (local engine)"):
        assert len(run_compaction(t)) == 1
    for _ in range(2):
        upsert()
    t = HudiTable(uri, storage_options=so)
    with measure("clean"):
        c = run_clean(t, CleanConfig.from_options(CLEAN))
    assert c.deleted and c.file_count == c.deleted, c
    t = HudiTable(uri, storage_options=so)
    with measure("archive (first archive file)"):
        a = run_archive(t, ArchiveConfig.from_options(ARCHIVE))
    assert a.archive_file, a
    for _ in range(3):
        upsert()
    t = HudiTable(uri, storage_options=so)
    with measure("archive (second file + merge of 2)"):
        a = run_archive(t, ArchiveConfig.from_options(ARCHIVE))
    assert a.archive_file and a.merge.merged_file, a


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--detail", action="store_true", help="print every request of every step")
    args = ap.parse_args()
    import pyarrow.fs as pafs

    rows: list[tuple[str, Counter[str], int, int]] = []
    with s3_server() as (endpoint, rec):
        so = {"endpoint_override": endpoint, "region": "us-east-1", "access_key": "k", "secret_key": "s"}
        bucket = f"bench-{uuid.uuid4().hex[:12]}"
        pafs.S3FileSystem(**so, allow_bucket_creation=True).create_dir(bucket)
        uri = f"s3://{bucket}/t"

        @contextlib.contextmanager
        def measure(name: str) -> Iterator[None]:
            rec.take()
            yield
            items = rec.take()
            counts = Counter(k for k, _, _ in items)
            hoodie = sum(1 for k, key, qs in items if k == "LIST" and key.rstrip("/") == "t/.hoodie")
            recursive = sum(1 for k, key, qs in items if k == "LIST" and key == "t/" and qs.endswith("(recursive)"))
            rows.append((name, counts, hoodie, recursive))
            if args.detail:
                print(f"== {name}")
                for (k, key, qs), c in sorted(Counter(items).items()):
                    print(f"  {c:3d} {k:8s} {key} {qs if k == 'LIST' else ''}")

        scenario(uri, so, measure)
    head = f"| step | {' | '.join(KINDS)} | total | LIST .hoodie/ | LIST whole table |"
    print(head)
    print("|---|" + "---:|" * (len(KINDS) + 3))
    for name, c, hoodie, recursive in rows:
        total = sum(c.values())
        print(f"| {name} | {' | '.join(str(c.get(k, 0)) for k in KINDS)} | {total} | {hoodie} | {recursive} |")


if __name__ == "__main__":
    main()
