"""S3 requests per step, with and without a metadata table (issue 26): what keeping the MDT costs and saves.

Starts moto's S3 server on 127.0.0.1 with the request log of the object-store tests
(``tests/objectstore/conftest.py``: ``RecordingMiddleware``, ``classify``), and builds the same small MERGE_ON_READ
table twice, in two buckets, step by step in lock-step: once with ``hoodie.metadata.enable=true`` on every write and
service (our writer creates the metadata table on the first write, every later instant keeps it), once with
``false`` (no metadata table). 3 partitions x 2 file groups (60 rows, 10 rows per file), a bulk_insert, then:

* upsert (30% of the rows, log files in the touched file groups);
* open table + file-system view (``HudiTable``, its timeline, the listing the reads use: ``file_listing``);
* schedule compaction (``hoodie.compact.inline.max.delta.commits=3``), run compaction (local engine);
* two upserts, then schedule + run log compaction (``hoodie.log.compaction.blocks.threshold=2``);
* clean (``hoodie.cleaner.commits.retained=1``);
* two upserts (the first is the metadata table's 10th deltacommit since it began: it compacts the metadata table;
  the data table's archival never passes that compaction);
* archive (``hoodie.keep.min/max.commits=2/3``);
* an upsert that fails at its commit point (after its MDT deltacommit, before its completed instant: the data
  table's ``transition_to_completed`` raises), then the rollback of that write;
* a snapshot read (open included).

A fresh ``HudiTable`` per step, as a scheduler runs them; requests are counted per bucket at the server. LIST =
ListObjectsV2, GET/HEAD = one object, PUT = an object PUT or one request of a multipart upload (create, part,
complete), DELETE = one object or a DeleteObjects. ``MDT`` columns: the requests under ``.hoodie/metadata/``, and
the metadata-table instants the step completed (a deltacommit at the data instant; ``<ts>001`` compaction,
``<ts>002`` clean, ``<ts>006`` rollback of the MDT's own table services).

After every step both tables read equal (our snapshot reader, data columns) and equal the expected rows, and the MDT
table's metadata-table listing equals its storage listing; at the end hudi-rs (the ``hudi`` wheel) reads both
tables equal too. These checks are not counted.

Usage: python benchmarks/s3_metadata_requests.py [--detail]   (``--detail``: for each step, every key requested
more than once, and the requests under ``.hoodie/metadata/``)
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the tests package

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.metadata.reader import metadata_file_listing
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.archive import run_archive
from lake_orchestration.hudi.services.archive.config import ArchiveConfig
from lake_orchestration.hudi.services.clean import run_clean
from lake_orchestration.hudi.services.clean.config import CleanConfig
from lake_orchestration.hudi.services.compaction import (
    CompactionConfig,
    run_compaction,
    schedule_compaction,
)
from lake_orchestration.hudi.services.log_compaction import run_log_compaction, schedule_log_compaction
from lake_orchestration.hudi.services.rollback.config import RollbackConfig
from lake_orchestration.hudi.services.rollback.service import rollback_write
from lake_orchestration.hudi.table import HudiTable, read_snapshot_table
from lake_orchestration.hudi.table.snapshot import file_listing
from lake_orchestration.hudi.write import WriteOptions, write_table
from tests.objectstore.conftest import RecordingMiddleware, RequestLog, S3Request

KINDS = ("LIST", "GET", "HEAD", "PUT", "DELETE")
KIND_OF = {"MULTIPART": "PUT", "PUT_PART": "PUT", "DELETE_MULTI": "DELETE"}
MDT_PREFIX = "t/.hoodie/metadata/"
SO_KEYS = {"access_key": "k", "secret_key": "s", "region": "us-east-1"}


class Failed(Exception):
    """The write that fails at its commit point."""


@dataclass
class Step:
    name: str
    counts: dict[str, Counter[str]] = field(default_factory=dict)  # "true"/"false" -> kind -> n
    mdt_requests: dict[str, int] = field(default_factory=dict)
    mdt_instants: list[str] = field(default_factory=list)
    requests: dict[str, list[S3Request]] = field(default_factory=dict)


@contextlib.contextmanager
def s3_server() -> Iterator[tuple[str, RequestLog]]:
    """moto's S3 server with the object-store tests' request log (as their ``s3_server`` fixture)."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        log = RequestLog()
        wsgi = server._server
        assert wsgi is not None
        wsgi.app = RecordingMiddleware(wsgi.app, log)
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}", log
    finally:
        server.stop()


def where(r: S3Request) -> str:
    """The object key, or a LIST's prefix (``prefix/ (recursive)`` without a delimiter)."""
    if r.kind != "LIST":
        return r.key
    q = parse_qs(r.query, keep_blank_values=True)
    return (q.get("prefix") or [""])[0] + ("" if "delimiter" in q else " (recursive)")


def label(mdt_instant: str) -> str:
    """``<time>.<action>`` of a metadata-table instant, shortly: ``deltacommit`` (at a data instant),
    ``compaction commit (001)``, ``rollback (006)``, ``deltacommit (010, initialisation)``."""
    time, action = mdt_instant.split(".", 1)
    if time == "00000000000000010":  # a new table's
        return f"{action} (initialisation)"
    if len(time) == 17:
        return action
    suffix = time[17:]
    return (
        f"{'compaction ' if suffix == '001' else ''}{action} ({suffix}{', initialisation' if suffix == '010' else ''})"
    )


def data_rows(t: pa.Table) -> list[tuple[Any, ...]]:
    cols = sorted(c for c in t.column_names if not c.startswith("_hoodie_"))
    return sorted(zip(*(t.column(c).to_pylist() for c in cols), strict=True))


def mdt_instants(uri: str, so: dict[str, str]) -> set[str]:
    from lake_orchestration.errors import TableNotFoundError

    try:
        mdt = HudiTable(f"{uri}/.hoodie/metadata", storage_options=so)
    except TableNotFoundError:
        return set()
    return {f"{i.time}.{i.action.value}" for i in mdt.timeline.completed()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--detail", action="store_true", help="keys requested more than once, MDT requests, per step")
    args = ap.parse_args()
    import pyarrow.fs as pafs

    steps: list[Step] = []
    with s3_server() as (endpoint, log):
        so = {"endpoint_override": endpoint, **SO_KEYS}
        buckets = {md: f"mdt-{md}-{uuid.uuid4().hex[:8]}" for md in ("true", "false")}
        for b in buckets.values():
            pafs.S3FileSystem(**so, allow_bucket_creation=True).create_dir(b)
        uris = {md: f"s3://{b}/t" for md, b in buckets.items()}
        md_opts = {md: {"hoodie.metadata.enable": md} for md in buckets}
        write_opts = {
            md: WriteOptions(
                table_name="t",
                table_type=TableType.MERGE_ON_READ,
                record_key_fields=("uuid",),
                partition_fields=("city",),
                precombine_field="ts",
                max_rows_per_file=10,
                small_file_limit=0,
                options=md_opts[md],
            )
            for md in buckets
        }
        base = generate_trips(60, partitions=3, seed=1)
        expected: dict[Any, dict[str, Any]] = {r["uuid"]: r for r in base.to_pylist()}

        def table(md: str) -> HudiTable:
            return HudiTable(uris[md], storage_options=so)

        def check(what: str, listing: bool = True) -> None:
            want = data_rows(pa.Table.from_pylist(list(expected.values()), schema=base.schema))
            for md in buckets:
                got = data_rows(read_snapshot_table(table(md), options=md_opts[md]))
                assert got == want, f"{what}: hoodie.metadata.enable={md} reads {len(got)} rows, differing"
            if not listing:  # the failed write's files are on storage, not in the metadata table's listing
                return
            t = table("true")
            mdt = metadata_file_listing(t)
            assert mdt is not None, f"{what}: not listed through the metadata table"
            storage = t.partition_listing()

            def names(listing: Any) -> dict[str, dict[str, int]]:
                return {
                    p: {f.name: f.size for f in fs if not f.is_dir and not f.name.startswith(".hoodie_")}
                    for p, fs in listing.items()
                }

            assert names(mdt) == names(storage), f"{what}: the metadata table's listing is not storage's"

        def measure(name: str, action: Callable[[str], None], listing: bool = True) -> None:
            """Run ``action(md)`` on both tables, counting each one's requests."""
            step = Step(name)
            for md in ("true", "false"):
                before = mdt_instants(uris[md], so) if md == "true" else set()
                start = len(log.all())
                action(md)
                reqs = [r for r in log.all()[start:] if r.bucket == buckets[md]]
                step.requests[md] = reqs
                step.counts[md] = Counter(KIND_OF.get(r.kind, r.kind) for r in reqs)
                step.mdt_requests[md] = sum(1 for r in reqs if where(r).startswith(MDT_PREFIX))
                if md == "true":
                    step.mdt_instants = sorted(mdt_instants(uris[md], so) - before)
            steps.append(step)
            check(name, listing)

        n = 0

        def updates() -> pa.Table:
            nonlocal n
            n += 1
            return generate_updates(base, fraction=0.3, seed=n, ts_offset=n * 10**6)

        def upsert(batch: pa.Table) -> Callable[[str], None]:
            for r in batch.to_pylist():
                expected[r["uuid"]] = r
            return lambda md: (
                write_table(uris[md], batch, operation="upsert", options=write_opts[md], storage_options=so) and None
            )

        measure(
            "create (bulk_insert)",
            lambda md: (
                write_table(uris[md], base, operation="bulk_insert", options=write_opts[md], storage_options=so)
                and None
            ),
        )
        for _ in range(2):
            b = updates()
            for md in buckets:
                upsert(b)(md)
        measure("upsert", upsert(updates()))

        def open_view(md: str) -> None:
            t = table(md)
            _ = t.timeline
            t.fs_view(file_listing(t, md_opts[md]))

        measure("open table + file-system view", open_view)

        def compaction_config(md: str, extra: dict[str, str]) -> CompactionConfig:
            return CompactionConfig.from_options({**md_opts[md], **extra})

        def sched(md: str) -> None:
            r = schedule_compaction(
                table(md), config=compaction_config(md, {"hoodie.compact.inline.max.delta.commits": "3"})
            )
            assert r.scheduled, r.reason

        measure("schedule compaction", sched)
        measure(
            "run compaction",
            lambda md: (
                None
                if len(run_compaction(table(md), config=compaction_config(md, {}))) == 1
                else sys.exit("no compaction")
            ),
        )
        for _ in range(2):
            b = updates()
            for md in buckets:
                upsert(b)(md)
        lc: dict[str, str] = {}
        lc_cfg = {"hoodie.log.compaction.blocks.threshold": "2"}

        def sched_lc(md: str) -> None:
            r = schedule_log_compaction(table(md), config=compaction_config(md, lc_cfg))
            assert r.scheduled, r.reason
            lc[md] = str(r.instant)

        measure("schedule log compaction", sched_lc)
        measure(
            "run log compaction",
            lambda md: run_log_compaction(table(md), lc[md], config=compaction_config(md, lc_cfg)) and None,
        )

        def clean(md: str) -> None:
            c = run_clean(table(md), CleanConfig.from_options({**md_opts[md], "hoodie.cleaner.commits.retained": "1"}))
            assert c.deleted and c.file_count == c.deleted, c

        measure("clean", clean)
        # the metadata table compacts itself every 10 deltacommits (``hoodie.metadata.compact.max.delta.commits``),
        # and the data table's archival never passes the metadata table's latest compaction: two more upserts
        measure("upsert (metadata table services due)", upsert(updates()))
        measure("upsert", upsert(updates()))

        def archive(md: str) -> None:
            t = table(md)
            a = run_archive(
                t,
                ArchiveConfig.from_options(
                    {
                        **md_opts[md],
                        "hoodie.cleaner.commits.retained": "1",
                        "hoodie.keep.min.commits": "2",
                        "hoodie.keep.max.commits": "3",
                    },
                    table_properties=t.config.raw,
                ),
            )
            assert a.archive_file, a

        measure("archive", archive)

        failed: dict[str, str] = {}
        failing_batch = updates()  # not in ``expected``: it never commits

        def failing_upsert(md: str) -> None:
            orig = HudiTable.transition_to_completed

            def dying(self: HudiTable, inflight: Any, content: bytes) -> Any:
                if not self.base_uri.rstrip("/").endswith(".hoodie/metadata"):
                    failed[md] = str(inflight.time)
                    raise Failed(str(inflight.time))
                return orig(self, inflight, content)

            HudiTable.transition_to_completed = dying  # type: ignore[method-assign]
            try:
                write_table(uris[md], failing_batch, operation="upsert", options=write_opts[md], storage_options=so)
            except Failed:
                pass
            finally:
                HudiTable.transition_to_completed = orig  # type: ignore[method-assign]
            assert md in failed, "the write did not fail"

        measure("upsert failing at its commit point", failing_upsert, listing=False)
        measure(
            "rollback of the failed write",
            lambda md: rollback_write(table(md), failed[md], config=RollbackConfig.from_options(md_opts[md])) and None,
        )
        measure(
            "snapshot read (open included)", lambda md: read_snapshot_table(table(md), options=md_opts[md]) and None
        )

        from hudi import HudiTableBuilder

        rs_opts = {
            "aws_endpoint_url": endpoint,
            "aws_access_key_id": "k",
            "aws_secret_access_key": "s",
            "aws_region": "us-east-1",
            "aws_allow_http": "true",
        }
        rs = {
            md: data_rows(
                pa.Table.from_batches(
                    HudiTableBuilder.from_base_uri(uris[md]).with_storage_options(rs_opts).build().read()
                )
            )
            for md in buckets
        }
        assert (
            rs["true"] == rs["false"] == data_rows(pa.Table.from_pylist(list(expected.values()), schema=base.schema))
        ), "hudi-rs"

    print(
        "| step | `hoodie.metadata.enable` | "
        + " | ".join(KINDS)
        + " | all requests | under `.hoodie/metadata/` | MDT instants completed |"
    )
    print("|---|---|" + "---:|" * (len(KINDS) + 2) + "---|")
    for s in steps:
        for md in ("false", "true"):
            c = s.counts[md]
            other = sum(v for k, v in c.items() if k not in KINDS)
            total = sum(c.values())
            inst = ", ".join(label(i) for i in s.mdt_instants) if md == "true" else ""
            print(
                f"| {s.name} | {md} | {' | '.join(str(c.get(k, 0)) for k in KINDS)} | {total}"
                f"{f' (+{other} other)' if other else ''} | {s.mdt_requests[md]} | {inst} |"
            )
    print("\nhudi-rs and our reader read both tables equal after every step; the MDT listing equals storage's.")
    if args.detail:
        for s in steps:
            for md in ("true", "false"):
                reqs = s.requests[md]
                print(f"\n== {s.name}, hoodie.metadata.enable={md}")
                rep = Counter((KIND_OF.get(r.kind, r.kind), where(r)) for r in reqs)
                for (k, key), c in sorted(rep.items()):
                    if c > 1:
                        print(f"  {c:3d}x {k:6s} {key}")
                if True:
                    mdt = Counter(
                        (KIND_OF.get(r.kind, r.kind), where(r)) for r in reqs if where(r).startswith(MDT_PREFIX)
                    )
                    lists = Counter(where(r) for r in reqs if r.kind == "LIST")
                    print("  -- LISTs:")
                    for q, c in sorted(lists.items()):
                        print(f"  {c:3d}x {q}")
                    print("  -- under .hoodie/metadata/:")
                    for (k, key), c in sorted(mdt.items()):
                        print(f"  {c:3d}x {k:6s} {key[len(MDT_PREFIX) :]}")


if __name__ == "__main__":
    main()
