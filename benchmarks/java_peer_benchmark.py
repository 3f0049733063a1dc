"""Ours against Java Hudi 0.15 on the same machine, the same cores, the same tables and the same input.

Java Hudi runs in one long-lived Spark 3.5.1 ``local[2]`` session (``tests/java/harness.py``; the JVM start and a
warm-up round are not timed); its wall time is measured inside the JVM's driver process around the datasource write
or the Spark SQL procedure call (``timed_write`` / ``timed_sql`` of ``tests/java/hudi_java_driver.py``). Ours runs in
this process (the default local engine: one task after the other), timed around the call; ``--local-threads 2``
(our local engine with two task threads, the same two cores Java's ``local[2]`` uses) or ``--spark`` (our Spark
engine on ``local[2]``) adds a second column of ours for bulk_insert, upsert and compaction.
Each operation runs ``--rounds`` times, ours and Java's interleaved (A B, then B A ...), each on its own fresh copy
of the same table state; the table prints medians. Beside wall time, CPU seconds (user + system, all threads): of
this process for ours, of Java's driver process tree (the JVM) for Java; on a loaded machine they compare the work
done better than wall time does. Hudi's defaults on both sides (gzip, 120 MB base files, the
default index), with Java's metadata table and inline/automatic services off (we do not write the metadata table).

* bulk_insert: the same parquet input (``--bulk-rows`` trips, 4 cities) into a new MERGE_ON_READ table; ours
  ``write_table`` (reading the input file included), Java the datasource (``hoodie.datasource.write.operation``).
* upsert: ``--update-fraction`` of those rows (same keys, new values) into copies of Java's bulk_insert table.
* compaction: a MERGE_ON_READ table of ``--compaction-rows`` rows and ``--deltacommits`` upsert deltacommits
  (written by Java); schedule + execute + commit: ours ``run_compaction(schedule=True)``, Java
  ``call run_compaction(op => 'run')`` (with no pending plan it schedules one), trigger at 1 delta commit on both.
* clean: a COPY_ON_WRITE table of ``--clean-groups`` file groups rewritten ``--clean-versions`` times (written by
  us), ``KEEP_LATEST_COMMITS`` with 10 retained (Hudi's default); ours ``run_clean``, Java ``call run_clean``.
* archive: a MERGE_ON_READ timeline of ``--archive-instants`` completed deltacommits (written by us, then the last
  one's timeline files copied to new instant times as ``archive_benchmark.py`` does); Hudi's default 20..30 kept;
  ours ``run_archive``, Java ``call archive_commits``.

Correctness, checked every round (a fast wrong answer is no win): both tables after the operation read the same
rows (count and a checksum of the data columns, our reader); in the first round also Java's reader on both tables;
compaction: a completed compaction on both, the same number of base files; clean: the same files left; archive:
the same active instants left.

Usage: python benchmarks/java_peer_benchmark.py [--quick] [--rounds 3] [--bulk-rows 500000]
       [--compaction-rows 1000000] [--deltacommits 2] [--update-fraction 0.1] [--clean-groups 100]
       [--clean-versions 15] [--archive-instants 1000] [--ops bulk_insert,upsert,compaction,clean,archive]
       [--local-threads 2 | --spark] [--java-memory 4g] [--profile compaction,...] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pendulum
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lake_orchestration.datagen import TRIPS_SCHEMA, generate_trips, generate_updates
from lake_orchestration.engines.base import Engine
from lake_orchestration.engines.local import LocalEngine
from lake_orchestration.hudi.model.instant import INSTANT_FORMAT
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.archive import run_archive
from lake_orchestration.hudi.services.clean import run_clean
from lake_orchestration.hudi.services.compaction import CompactionConfig, run_compaction
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.snapshot import read_snapshot_table
from lake_orchestration.hudi.write import WriteOptions, write_table
from tests.java.harness import JavaHudi, start_java_hudi

DATA_COLUMNS = TRIPS_SCHEMA.names
KEYGEN = "org.apache.hudi.keygen.SimpleKeyGenerator"
OPS = ("bulk_insert", "upsert", "compaction", "clean", "archive")
TARGETS = {"compaction": 0.5}
"""ours/Java targets (1.0 for the rest)."""


def java_options(table_type: TableType, operation: str) -> dict[str, str]:
    """Java's datasource options: the shape ours writes, Hudi's defaults otherwise, metadata table and inline or
    automatic table services off (ours writes no metadata table and runs no service after a write)."""
    return {
        "hoodie.table.name": "bench",
        "hoodie.datasource.write.table.type": table_type.value,
        "hoodie.datasource.write.operation": operation,
        "hoodie.datasource.write.recordkey.field": "uuid",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.keygenerator.class": KEYGEN,
        "hoodie.datasource.write.hive_style_partitioning": "false",
        "hoodie.metadata.enable": "false",
        "hoodie.clean.automatic": "false",
        "hoodie.archive.automatic": "false",
        "hoodie.compact.inline": "false",
        "hoodie.datasource.compaction.async.enable": "false",
    }


def our_options(table_type: TableType = TableType.MERGE_ON_READ, **extra: Any) -> WriteOptions:
    """Our writer's options for the same shape (Hudi's defaults otherwise: gzip, 120 MB files)."""
    return WriteOptions(
        table_name="bench",
        table_type=table_type,
        record_key_fields=("uuid",),
        partition_fields=("city",),
        precombine_field="ts",
        key_generator=KEYGEN,
        **extra,
    )


# ---------------------------------------------------------------------------------------------------- correctness


def digest(rows: pa.Table) -> tuple[int, str]:
    """Row count and a checksum of the data columns (rows sorted by key: independent of file layout and order)."""
    data = rows.select(DATA_COLUMNS).cast(TRIPS_SCHEMA)
    hashes = pl.from_arrow(data).sort("uuid").hash_rows(seed=0).to_numpy()
    return data.num_rows, hashlib.sha256(hashes.tobytes()).hexdigest()[:12]


def our_read(path: Path) -> tuple[int, str]:
    """Our merged snapshot read of the table."""
    return digest(read_snapshot_table(HudiTable(str(path))))


def java_read(java: JavaHudi, path: Path) -> tuple[int, str]:
    """Java's snapshot read of the table (written to a parquet folder beside it, then digested)."""
    out = path.parent / f"{path.name}.java-read"
    shutil.rmtree(out, ignore_errors=True)
    java.call("read", path=str(path), options={"hoodie.datasource.query.type": "snapshot"}, output=str(out))
    try:
        return digest(pq.read_table(out))
    finally:
        shutil.rmtree(out, ignore_errors=True)


def data_files(path: Path) -> list[str]:
    """The table's data files (base and log files), relative, sorted; not the ``.crc`` files of Hadoop's local file
    system (Java writes one beside each file)."""
    return sorted(
        str(p.relative_to(path))
        for p in path.rglob("*")
        if p.is_file() and ".hoodie" not in p.parts and not p.name.endswith(".crc")
    )


def active_instants(path: Path) -> list[str]:
    """The completed instants' file names on the active timeline (no requested/inflight files)."""
    return sorted(
        p.name
        for p in (path / ".hoodie").iterdir()
        if p.is_file() and p.name[:1].isdigit() and not p.name.endswith((".requested", ".inflight"))
    )


class CheckFailed(AssertionError):
    """Ours and Java's results differ."""


def same(what: str, ours: Any, java: Any) -> None:
    """Raise :class:`CheckFailed` unless ``ours == java``."""
    if ours != java:
        raise CheckFailed(f"{what}: ours {ours!r} != Java {java!r}")


# ---------------------------------------------------------------------------------------------------- the runs

Timing = tuple[float, float]
"""Wall seconds and CPU seconds of one run."""


class Clock:
    """Wall time and this process's CPU time (user + system, all threads) from its creation to :meth:`stop`."""

    def __init__(self) -> None:
        self._cpu = self._cpu_now()
        self._t0 = time.perf_counter()

    @staticmethod
    def _cpu_now() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    def stop(self) -> Timing:
        """(wall seconds, CPU seconds) since creation."""
        return time.perf_counter() - self._t0, self._cpu_now() - self._cpu


@dataclass
class Op:
    """One operation's measurements."""

    name: str
    rows: int = 0
    ours: list[float] = field(default_factory=list)
    alt: list[float] = field(default_factory=list)
    java: list[float] = field(default_factory=list)
    ours_cpu: list[float] = field(default_factory=list)
    alt_cpu: list[float] = field(default_factory=list)
    java_cpu: list[float] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)


@dataclass
class Bench:
    """The shared state of one benchmark run."""

    java: JavaHudi
    root: Path
    rounds: int
    alt: Engine | None
    """Ours on a second engine (``--local-threads`` or ``--spark``)."""
    alt_label: str = ""
    alt_cpu_counted: bool = True
    """False for our Spark engine: its work runs in its JVM and Python workers, not in this process."""
    profile: set[str] = field(default_factory=set)
    results: dict[str, Op] = field(default_factory=dict)
    _names: int = 0

    def fresh(self, stem: str) -> Path:
        """A new path under the work folder."""
        self._names += 1
        return self.root / f"{stem}-{self._names}"

    def copy(self, src: Path, stem: str) -> Path:
        """A private copy of a table state."""
        dest = self.fresh(stem)
        shutil.copytree(src, dest)
        return dest

    def register(self, path: Path) -> str:
        """A catalog name for ``path`` in Java's session (``run_clean`` takes a table name only)."""
        name = f"bench_{path.name.replace('-', '_').replace('.', '_')}"
        self.java.call("register", name=name, path=str(path))
        return name

    def interleaved(
        self,
        op: Op,
        ours: Callable[[], tuple[Timing, Path]],
        java: Callable[[], tuple[Timing, Path]],
        check: Callable[[Path, Path, bool], str],
        alt: Callable[[], tuple[Timing, Path]] | None = None,
    ) -> None:
        """``rounds`` rounds of ours and Java's run (alternating which goes first), each checked."""
        for r in range(self.rounds):
            order = [("ours", ours), ("java", java)]
            if alt is not None:
                order.insert(1, ("alt", alt))
            if r % 2:
                order.reverse()
            paths: dict[str, Path] = {}
            for who, run in order:
                (seconds, cpu), paths[who] = run()
                getattr(op, who).append(seconds)
                getattr(op, f"{who}_cpu").append(cpu)
            note = check(paths["ours"], paths["java"], r == 0)
            if "alt" in paths:
                check(paths["alt"], paths["java"], False)
            op.checks.append(note)
            figures = "  ".join(
                f"{self.alt_label if w == 'alt' else w} {getattr(op, w)[-1]:7.2f} s"
                + (f" ({getattr(op, f'{w}_cpu')[-1]:.1f} cpu-s)" if w != "alt" or self.alt_cpu_counted else "")
                for w, _ in order
            )
            print(f"  {op.name:<11} round {r + 1}: {figures}  | {note}", flush=True)
            for p in paths.values():
                shutil.rmtree(p, ignore_errors=True)
        self.results[op.name] = op
        if op.name in self.profile:
            self.profiled(op.name, ours)

    def profiled(self, name: str, ours: Callable[[], tuple[Timing, Path]]) -> None:
        """One more run of ours under pyinstrument (installed separately: not a project dependency), printed."""
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.002)
        profiler.start()
        _, path = ours()
        profiler.stop()
        print(f"\n--- pyinstrument: ours, {name} (the table copy before the clock starts included) ---")
        print(profiler.output_text(unicode=False, color=False, show_all=False))
        shutil.rmtree(path, ignore_errors=True)

    def rows_check(self, ours: Path, java: Path, with_java: bool, expected: int | None = None) -> str:
        """Both tables read the same rows (our reader; on ``with_java`` Java's reader too, on both tables)."""
        a, b = our_read(ours), our_read(java)
        same("rows read by our reader", a, b)
        if expected is not None:
            same("row count", a[0], expected)
        note = f"{a[0]:,} rows, checksum {a[1]} equal"
        if with_java:
            ja, jb = java_read(self.java, ours), java_read(self.java, java)
            same("Java's read of our table vs our read", ja, a)
            same("Java's read of Java's table vs our read", jb, a)
            note += " (our and Java's readers)"
        return note


def bulk_insert(b: Bench, rows: int) -> Path:
    """bulk_insert of the same input into new tables; returns the input's Java table (the upsert's start)."""
    src = b.fresh("bulk-input").with_suffix(".parquet")
    pq.write_table(generate_trips(rows, partitions=4, seed=1), src)
    op = Op("bulk_insert", rows)
    keep = b.fresh("bulk-java-table")

    def ours(engine: Engine | None = None) -> tuple[Timing, Path]:
        path = b.fresh("bulk-ours")
        clock = Clock()
        write_table(str(path), pq.read_table(src), operation="bulk_insert", options=our_options(), engine=engine)
        return clock.stop(), path

    def java() -> tuple[Timing, Path]:
        path = b.fresh("bulk-java")
        res = b.java.call(
            "timed_write", path=str(path), input=str(src), options=java_options(TableType.MERGE_ON_READ, "bulk_insert")
        )
        if not keep.exists():
            shutil.copytree(path, keep)
        return (res["seconds"], res["cpu"]), path

    def check(o: Path, j: Path, with_java: bool) -> str:
        note = b.rows_check(o, j, with_java, expected=rows)
        files = [sum(f.endswith(".parquet") for f in data_files(p)) for p in (o, j)]
        return f"{note}; base files ours/Java {files[0]}/{files[1]}"

    alt = (lambda: ours(b.alt)) if b.alt is not None else None
    b.interleaved(op, ours, java, check, alt)
    return keep


def upsert(b: Bench, start: Path, fraction: float) -> None:
    """The same updates upserted into copies of Java's bulk_insert table."""
    base = read_snapshot_table(HudiTable(str(start))).select(DATA_COLUMNS).cast(TRIPS_SCHEMA)
    updates = generate_updates(base, fraction=fraction, seed=2)
    src = b.fresh("upsert-input").with_suffix(".parquet")
    pq.write_table(updates, src)
    op = Op("upsert", updates.num_rows)

    def ours(engine: Engine | None = None) -> tuple[Timing, Path]:
        path = b.copy(start, "upsert-ours")
        clock = Clock()
        write_table(str(path), pq.read_table(src), operation="upsert", options=our_options(), engine=engine)
        return clock.stop(), path

    def java() -> tuple[Timing, Path]:
        path = b.copy(start, "upsert-java")
        res = b.java.call(
            "timed_write", path=str(path), input=str(src), options=java_options(TableType.MERGE_ON_READ, "upsert")
        )
        return (res["seconds"], res["cpu"]), path

    def check(o: Path, j: Path, with_java: bool) -> str:
        note = b.rows_check(o, j, with_java, expected=base.num_rows)
        logs = (sum(".log." in f for f in data_files(o)), sum(".log." in f for f in data_files(j)))
        return f"{note}; log files ours/Java {logs[0]}/{logs[1]}"

    alt = (lambda: ours(b.alt)) if b.alt is not None else None
    b.interleaved(op, ours, java, check, alt)


def compaction(b: Bench, rows: int, deltacommits: int, fraction: float) -> None:
    """Schedule + execute + commit a compaction of the same Java-written MERGE_ON_READ table."""
    state = b.fresh("compaction-table")
    base = generate_trips(rows, partitions=4, seed=11)
    src = b.fresh("compaction-input").with_suffix(".parquet")
    t0 = time.perf_counter()
    pq.write_table(base, src)
    b.java.call("write", path=str(state), input=str(src), options=java_options(TableType.MERGE_ON_READ, "bulk_insert"))
    for k in range(deltacommits):
        pq.write_table(generate_updates(base, fraction=fraction, seed=20 + k, ts_offset=(k + 1) * 10**7), src)
        b.java.call("write", path=str(state), input=str(src), options=java_options(TableType.MERGE_ON_READ, "upsert"))
    logs = sum(".log." in f for f in data_files(state))
    print(
        f"  compaction table: Java wrote {rows:,} rows + {deltacommits} upserts ({logs} log files) "
        f"in {time.perf_counter() - t0:.0f} s",
        flush=True,
    )
    op = Op("compaction", rows)
    config = CompactionConfig.from_options({"hoodie.compact.inline.max.delta.commits": "1"})
    java_opts = "hoodie.compact.inline.max.delta.commits=1,hoodie.metadata.enable=false"

    def ours(engine: Engine | None = None) -> tuple[Timing, Path]:
        path = b.copy(state, "compaction-ours")
        clock = Clock()
        (result,) = run_compaction(HudiTable(str(path)), schedule=True, config=config, engine=engine)
        timing = clock.stop()
        same("rows written by our compaction", result.rows_written, rows)
        return timing, path

    def java() -> tuple[Timing, Path]:
        path = b.copy(state, "compaction-java")
        res = b.java.call(
            "timed_sql", query=f"call run_compaction(op => 'run', path => '{path}', options => '{java_opts}')"
        )
        return (res["seconds"], res["cpu"]), path

    def check(o: Path, j: Path, with_java: bool) -> str:
        for who, p in (("ours", o), ("Java", j)):
            if not any(n.endswith(".commit") for n in active_instants(p)):
                raise CheckFailed(f"{who}: no completed compaction on the timeline of {p}")
        same("metadata table written", (o / ".hoodie" / "metadata").exists(), (j / ".hoodie" / "metadata").exists())
        base_o = sorted(f.split("/")[0] for f in data_files(o) if f.endswith(".parquet"))
        base_j = sorted(f.split("/")[0] for f in data_files(j) if f.endswith(".parquet"))
        same("base files per partition after compaction", base_o, base_j)
        return b.rows_check(o, j, with_java, expected=rows) + f"; {len(base_o)} base files on both"

    alt = (lambda: ours(b.alt)) if b.alt is not None else None
    b.interleaved(op, ours, java, check, alt)


def clean(b: Bench, groups: int, versions: int) -> None:
    """KEEP_LATEST_COMMITS (10 retained) clean of the same COPY_ON_WRITE table with many file versions."""
    state = b.fresh("clean-table")
    opts = our_options(TableType.COPY_ON_WRITE, max_rows_per_file=20, small_file_limit=0)
    base = generate_trips(groups * 20, partitions=4, seed=31)
    write_table(str(state), base, operation="bulk_insert", options=opts)
    for n in range(versions):
        updates = generate_updates(base, fraction=1.0, seed=40 + n, ts_offset=(n + 1) * 10**6)
        write_table(str(state), updates, operation="upsert", options=opts)
    op = Op("clean", len(data_files(state)))

    def ours() -> tuple[Timing, Path]:
        path = b.copy(state, "clean-ours")
        clock = Clock()
        result = run_clean(HudiTable(str(path)))
        timing = clock.stop()
        if not result.deleted:
            raise CheckFailed("our clean deleted nothing")
        return timing, path

    def java() -> tuple[Timing, Path]:
        path = b.copy(state, "clean-java")
        name = b.register(path)
        res = b.java.call(
            "timed_sql", query=f"call run_clean(table => '{name}', options => 'hoodie.metadata.enable=false')"
        )
        return (res["seconds"], res["cpu"]), path

    def check(o: Path, j: Path, with_java: bool) -> str:
        left_o, left_j = data_files(o), data_files(j)
        same("files left after clean", left_o, left_j)
        note = b.rows_check(o, j, with_java)
        return f"{len(data_files(state)) - len(left_o)} of {len(data_files(state))} files deleted on both; {note}"

    b.interleaved(op, ours, java, check)


def archive(b: Bench, instants: int) -> None:
    """Archival (Hudi's default 20..30 kept) of the same long MERGE_ON_READ timeline."""
    state = b.fresh("archive-table")
    opts = our_options()
    base = generate_trips(2000, partitions=4, seed=51)
    write_table(str(state), base, operation="bulk_insert", options=opts)
    for i in range(3):
        updates = generate_updates(base, fraction=0.1, seed=60 + i, ts_offset=(i + 1) * 10**6)
        write_table(str(state), updates, operation="upsert", options=opts)
    hoodie = state / ".hoodie"
    last = sorted(p.name.split(".")[0] for p in hoodie.glob("*.deltacommit"))[-1]
    start = pendulum.from_format(last, INSTANT_FORMAT, tz="UTC")
    for k in range(1, instants + 1):
        dt = start.add(seconds=k)
        ts = f"{dt.format('YYYYMMDDHHmmss')}{dt.microsecond // 1000:03d}"
        for suffix in ("deltacommit.requested", "deltacommit.inflight", "deltacommit"):
            shutil.copyfile(hoodie / f"{last}.{suffix}", hoodie / f"{ts}.{suffix}")
    op = Op("archive", len(active_instants(state)))

    def ours() -> tuple[Timing, Path]:
        path = b.copy(state, "archive-ours")
        clock = Clock()
        run_archive(HudiTable(str(path)))
        return clock.stop(), path

    def java() -> tuple[Timing, Path]:
        path = b.copy(state, "archive-java")
        res = b.java.call("timed_sql", query=f"call archive_commits(path => '{path}', enable_metadata => false)")
        return (res["seconds"], res["cpu"]), path

    def check(o: Path, j: Path, with_java: bool) -> str:
        left_o, left_j = active_instants(o), active_instants(j)
        same("active instants left after archival", left_o, left_j)
        if len(left_o) >= op.rows:
            raise CheckFailed("nothing archived")
        note = b.rows_check(o, j, with_java)
        return f"{op.rows - len(left_o)} of {op.rows} instants archived on both; {note}"

    b.interleaved(op, ours, java, check)


def warm_up(b: Bench, ops: list[str]) -> None:
    """One small untimed round of each of ``ops`` on both sides (JIT, class loading, imports, Spark workers)."""
    rounds, b.rounds = b.rounds, 1
    results, b.results = b.results, {}
    profile, b.profile = b.profile, set()
    try:
        start = bulk_insert(b, 2000)
        if "upsert" in ops:
            upsert(b, start, 0.1)
        if "compaction" in ops:
            compaction(b, 2000, 1, 0.1)
        if "clean" in ops:
            clean(b, 5, 12)
        if "archive" in ops:
            archive(b, 40)
    finally:
        b.rounds, b.results, b.profile = rounds, results, profile


def print_table(b: Bench) -> None:
    """The medians: operation, rows, wall seconds of ours, Java and the ratio with its target, then CPU seconds of
    ours and Java and their ratio; with a second engine of ours its wall seconds, ratio and CPU seconds too (not for
    our Spark engine: its CPU is in its JVM and workers)."""
    alt = any(op.alt for op in b.results.values())
    label = b.alt_label
    head = f"{'operation':<12}{'rows/files/instants':>20}{'ours (s)':>10}{'Java (s)':>10}{'ours/Java':>11}{'target':>8}"
    head += f"{'ours cpu-s':>12}{'Java cpu-s':>12}{'cpu ours/Java':>15}"
    if alt:
        head += f"{f'{label} (s)':>{len(label) + 6}}{f'{label}/Java':>{len(label) + 7}}"
        head += f"{f'{label} cpu-s':>{len(label) + 8}}" if b.alt_cpu_counted else ""
    print(f"\nmedians of {b.rounds} interleaved rounds\n{head}")
    for op in b.results.values():
        ours, java = statistics.median(op.ours), statistics.median(op.java)
        cpu_ours, cpu_java = statistics.median(op.ours_cpu), statistics.median(op.java_cpu)
        line = f"{op.name:<12}{op.rows:>20,}{ours:>10.2f}{java:>10.2f}{ours / java:>11.2f}"
        line += f"{TARGETS.get(op.name, 1.0):>8.1f}{cpu_ours:>12.2f}{cpu_java:>12.2f}{cpu_ours / cpu_java:>15.2f}"
        if alt and op.alt:
            wall = statistics.median(op.alt)
            line += f"{wall:>{len(label) + 6}.2f}{wall / java:>{len(label) + 7}.2f}"
            line += f"{statistics.median(op.alt_cpu):>{len(label) + 8}.2f}" if b.alt_cpu_counted else ""
        print(line)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a smoke run: small tables, 1 round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--bulk-rows", type=int, default=500_000)
    ap.add_argument("--compaction-rows", type=int, default=1_000_000)
    ap.add_argument("--deltacommits", type=int, default=2)
    ap.add_argument("--update-fraction", type=float, default=0.1)
    ap.add_argument("--clean-groups", type=int, default=100)
    ap.add_argument("--clean-versions", type=int, default=15)
    ap.add_argument("--archive-instants", type=int, default=1000)
    ap.add_argument("--ops", default=",".join(OPS))
    alt = ap.add_mutually_exclusive_group()
    alt.add_argument("--local-threads", type=int, default=0, help="also our local engine with this many task threads")
    alt.add_argument("--spark", action="store_true", help="also our Spark engine (local[2]) for the writes/compaction")
    ap.add_argument("--profile", default="", help="comma-separated ops to run once more (ours) under pyinstrument")
    ap.add_argument("--java-memory", default="4g", help="Java's driver memory (local mode: its executor too)")
    ap.add_argument("--workdir", type=Path, default=None)
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.bulk_rows, args.compaction_rows = 1, 20_000, 40_000
        args.clean_groups, args.clean_versions, args.archive_instants = 20, 12, 100
    ops = [o for o in args.ops.split(",") if o]
    unknown = set(ops) - set(OPS)
    if unknown:
        ap.error(f"unknown --ops {sorted(unknown)}; expected some of {OPS}")
    if "upsert" in ops and "bulk_insert" not in ops:
        ops.insert(0, "bulk_insert")  # the upsert's start is Java's bulk_insert table
    root = Path(tempfile.mkdtemp(prefix="java-peer-", dir=args.workdir))
    os.environ.setdefault("JAVA_HUDI_MASTER", "local[2]")
    os.environ["JAVA_HUDI_DRIVER_MEMORY"] = args.java_memory
    print(
        f"{os.cpu_count()} cores, load average {'/'.join(f'{x:.2f}' for x in os.getloadavg())} at start; "
        f"Java: Spark {os.environ['JAVA_HUDI_MASTER']}, driver memory {args.java_memory}; work folder {root}"
    )

    def missing(reason: str) -> Any:
        sys.exit(f"Java Hudi is not available: {reason}")

    java = start_java_hudi(root / "java", on_missing=missing)
    engine: Engine | None = None
    label, counted = "", True
    if args.local_threads:
        engine, label = LocalEngine(threads=args.local_threads), f"ours {args.local_threads} thr"
    elif args.spark:
        from lake_orchestration.engines.spark import SparkEngine
        from lake_orchestration.engines.spark import warm_up as spark_warm_up
        from lake_orchestration.engines.spark_session import local_spark_session

        engine = SparkEngine(local_spark_session(master="local[2]"))
        compaction_module = "lake_orchestration.hudi.services.compaction.executor"
        engine.map_tasks(spark_warm_up, [compaction_module] * 4, description="warm up")
        label, counted = "ours Spark", False
    b = Bench(java, root, args.rounds, engine, label, counted, profile={o for o in args.profile.split(",") if o})
    try:
        t0 = time.perf_counter()
        warm_up(b, ops)
        print(f"warm-up round done in {time.perf_counter() - t0:.0f} s; timed rounds:", flush=True)
        start = None
        for name in ops:
            if name == "bulk_insert":
                start = bulk_insert(b, args.bulk_rows)
            elif name == "upsert":
                assert start is not None
                upsert(b, start, args.update_fraction)
            elif name == "compaction":
                compaction(b, args.compaction_rows, args.deltacommits, args.update_fraction)
            elif name == "clean":
                clean(b, args.clean_groups, args.clean_versions)
            elif name == "archive":
                archive(b, args.archive_instants)
        print_table(b)
        print(
            f"load average {'/'.join(f'{x:.2f}' for x in os.getloadavg())} at the end; "
            f"total {time.perf_counter() - t0:.0f} s"
        )
    finally:
        java.close()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
