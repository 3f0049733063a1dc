"""Concurrent services and writers in REAL separate processes (issue 11 item 5): two archivals with merge, N
compaction schedulers, N lock holders, N create-if-absent calls, a clean racing a writer.

Each child is ``python -c`` started from the repository root; children wait on a start file so their critical
sections overlap, and every outcome is read back from the table (archived timeline, plans, hudi-rs snapshot).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from lake_orchestration.datagen import generate_updates
from lake_orchestration.hudi.model.avro import CompactionPlan
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.archive import run_archive
from lake_orchestration.hudi.services.archive.config import ArchiveConfig
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.archived_timeline import ArchivedTimeline
from tests.oracle import assert_same_rows, hudi_rs_snapshot
from tests.tables import trips_table

REPO = Path(__file__).resolve().parents[2]
# Waiting for the other process is the point here: allow for a loaded 2-core machine.
LOCK_OPTS = {"hoodie.write.lock.wait_time_ms": "60000", "hoodie.write.lock.wait_time_ms_between_retry": "20"}

_PRELUDE = """
import json, sys, time
from pathlib import Path
ready, go = Path(sys.argv[1]), Path(sys.argv[2])
args = json.loads(sys.argv[3])
"""
_BARRIER = """
ready.write_text("1")
deadline = time.monotonic() + 60
while not go.exists() and time.monotonic() < deadline:
    time.sleep(0.001)
"""
_IMPORTS = """
import lake_orchestration.hudi.services.archive, lake_orchestration.hudi.services.clean
import lake_orchestration.hudi.services.compaction, lake_orchestration.hudi.write
"""


def _wait_for(cond: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.01)


def _race(tmp_path: Path, body: str, args: list[object], *, timeout: float = 120.0) -> list[tuple[int, str, str]]:
    """Start one process per element of ``args`` running ``body`` (with ``args`` bound to its element), release
    them together once all are ready, and return (returncode, stdout, stderr) of each."""
    # the package is imported before the start line, so the children's work (not their imports) overlaps
    code = textwrap.dedent(_PRELUDE) + textwrap.dedent(_IMPORTS) + textwrap.dedent(_BARRIER) + textwrap.dedent(body)
    go = tmp_path / "go"
    procs = []
    for n, a in enumerate(args):
        ready = tmp_path / f"ready-{n}"
        cmd = [sys.executable, "-c", code, str(ready), str(go), json.dumps(a)]
        procs.append(
            (ready, subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        )
    _wait_for(lambda: all(r.exists() or p.poll() is not None for r, p in procs), "the processes to start")
    go.write_text("1")
    out = []
    for _, p in procs:
        stdout, stderr = p.communicate(timeout=timeout)
        out.append((p.returncode, stdout, stderr))
    return out


def _state_files(path: Path) -> set[str]:
    """Timeline state files of the active timeline (``<ts>.<action>[.<state>]``)."""
    return {
        p.name
        for p in (path / ".hoodie").iterdir()
        if p.is_file() and p.name[:1].isdigit() and not p.name.endswith(".tmp")
    }


def _archived_names(path: Path) -> list[str]:
    return [e.instant.file_name for e in ArchivedTimeline.load(HudiTable(str(path)).storage)]


_ARCHIVE = """
from lake_orchestration.hudi.services.archive import ArchiveConfig, run_archive
from lake_orchestration.hudi.table import HudiTable
r = run_archive(HudiTable(args["path"]), ArchiveConfig.from_options(args["options"]))
print(json.dumps({"archived": [i.file_name for i in r.archived_instants], "merged": r.merge.merged_file}))
"""


def test_two_archive_runs_with_merge_at_once_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    path, _ = trips_table(tmp_path, 25, TableType.COPY_ON_WRITE)
    # two earlier runs leave two small archive files
    for lo in (21, 17):
        run_archive(
            HudiTable(str(path)),
            ArchiveConfig.from_options({"hoodie.keep.min.commits": str(lo), "hoodie.keep.max.commits": str(lo + 1)}),
        )
    active_before = _state_files(path)
    archived_before = _archived_names(path)
    assert len(archived_before) == 24 and len(set(archived_before)) == 24
    snapshot = hudi_rs_snapshot(path)
    # both archive 4 more commits, then merge the 3 small archive files (batch size 2)
    options = {
        "hoodie.keep.min.commits": "13",
        "hoodie.keep.max.commits": "14",
        "hoodie.archive.merge.enable": "true",
        "hoodie.archive.merge.files.batch.size": "2",
        **LOCK_OPTS,
    }

    results = _race(tmp_path, _ARCHIVE, [{"path": str(path), "options": options}] * 2)

    assert [rc for rc, _, _ in results] == [0, 0], [err[-2000:] for _, _, err in results]
    runs = [json.loads(out.strip().splitlines()[-1]) for _, out, _ in results]
    # one run archived and merged; the other, serialized behind it, found nothing left to do
    assert sorted(len(r["archived"]) for r in runs) == [0, 4]
    assert sorted(bool(r["merged"]) for r in runs) == [False, True]
    archived_after = _archived_names(path)
    assert len(archived_after) == len(set(archived_after)) == 36, "duplicated archived entries"
    active_after = _state_files(path)
    # nothing lost: every state file is still active or archived, exactly once
    assert set(archived_after) | active_after == set(archived_before) | active_before
    assert not set(archived_after) & active_after
    assert sorted(p.name for p in (path / ".hoodie" / "archived").iterdir()) == [".commits_.archive.4_1-0-1"]
    assert_same_rows(hudi_rs_snapshot(path), snapshot)


_SCHEDULE = """
from lake_orchestration.hudi.services.compaction import CompactionConfig, schedule_compaction
from lake_orchestration.hudi.table import HudiTable
r = schedule_compaction(HudiTable(args["path"]), config=CompactionConfig.from_options(args["options"]), force=True)
print(json.dumps({"instant": str(r.instant) if r.instant else None, "reason": r.reason}))
"""


def test_compaction_schedulers_racing_schedule_exactly_one_plan_per_file_group(tmp_path: Path) -> None:
    path, _ = trips_table(tmp_path, 3, TableType.MERGE_ON_READ)

    results = _race(tmp_path, _SCHEDULE, [{"path": str(path), "options": LOCK_OPTS}] * 4)

    assert [rc for rc, _, _ in results] == [0] * 4, [err[-2000:] for _, _, err in results]
    scheduled = [json.loads(out.strip().splitlines()[-1])["instant"] for _, out, _ in results]
    assert sum(1 for s in scheduled if s) == 1, scheduled
    plans = sorted((path / ".hoodie").glob("*.compaction.requested"))
    assert [p.name.split(".")[0] for p in plans] == [s for s in scheduled if s]
    plan = CompactionPlan.from_bytes(plans[0].read_bytes(), path=str(plans[0]))
    groups = [(op.partition_path, op.file_id) for op in plan.operations]
    assert groups and len(groups) == len(set(groups))


_HOLD = """
import os
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.lock import LockConfig, table_lock
cfg = LockConfig.from_options(args["options"])
for i in range(args["rounds"]):
    with table_lock(HudiTable(args["path"]), operation=f"round {i}", config=cfg):
        with open(args["log"], "a") as f:
            f.write(f"in {os.getpid()}\\n")
        time.sleep(0.02)
        with open(args["log"], "a") as f:
            f.write(f"out {os.getpid()}\\n")
"""


def test_table_lock_processes_racing_hold_it_one_at_a_time(tmp_path: Path) -> None:
    path, _ = trips_table(tmp_path, 1, TableType.COPY_ON_WRITE)
    log = tmp_path / "sections.log"
    args = {"path": str(path), "options": LOCK_OPTS, "log": str(log), "rounds": 5}

    results = _race(tmp_path, _HOLD, [args] * 4)

    assert [rc for rc, _, _ in results] == [0] * 4, [err[-2000:] for _, _, err in results]
    lines = log.read_text().splitlines()
    assert len(lines) == 4 * 5 * 2
    for enter, leave in zip(lines[::2], lines[1::2], strict=True):  # never two holders at once
        assert enter.startswith("in ") and leave == "out " + enter[3:], lines
    assert not (path / ".hoodie" / "lock").exists()


_CREATE = """
from lake_orchestration.errors import FileAlreadyExistsError
from lake_orchestration.io.storage import Storage
st = Storage(args["dir"])
try:
    st.create_if_absent(st.join("target"), args["me"].encode())
    print("won")
except FileAlreadyExistsError:
    print("lost")
"""


def test_create_if_absent_race_between_processes_has_exactly_one_winner(tmp_path: Path) -> None:
    target_dir = tmp_path / "race"
    target_dir.mkdir()

    results = _race(tmp_path, _CREATE, [{"dir": str(target_dir), "me": f"writer-{n}"} for n in range(6)])

    assert [rc for rc, _, _ in results] == [0] * 6, [err[-2000:] for _, _, err in results]
    outcomes = [out.strip() for _, out, _ in results]
    assert sorted(outcomes) == ["lost"] * 5 + ["won"]
    assert (target_dir / "target").read_text() == f"writer-{outcomes.index('won')}"
    assert sorted(p.name for p in target_dir.iterdir()) == ["target"]  # no temp file left behind


_WRITER = """
import pyarrow.parquet as pq
from lake_orchestration.hudi.write import WriteOptions, write_table
opts = WriteOptions.from_hudi_options({**args["options"], "hoodie.table.name": "t",
    "hoodie.datasource.write.table.type": args["type"], "hoodie.datasource.write.recordkey.field": "uuid",
    "hoodie.datasource.write.partitionpath.field": "city", "hoodie.datasource.write.precombine.field": "ts"})
for f in args["batches"]:
    write_table(args["path"], pq.read_table(f), operation="upsert", options=opts)
Path(args["done"]).write_text("1")
"""

_CLEANER = """
from lake_orchestration.hudi.services.clean import CleanConfig, run_clean
from lake_orchestration.hudi.table import HudiTable
cleans = 0
while True:
    finished = Path(args["done"]).exists()
    r = run_clean(HudiTable(args["path"]), CleanConfig.from_options(args["options"]))
    cleans += len(r.instants)
    if finished:
        break
print(json.dumps({"cleans": cleans}))
"""


def test_clean_racing_a_writer_keeps_every_row(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    path, base = trips_table(tmp_path, 2, TableType.COPY_ON_WRITE)
    expected = base.to_pandas().set_index("uuid")
    first = generate_updates(base, fraction=0.1, seed=0, ts_offset=10**6)
    expected.update(first.to_pandas().set_index("uuid"))
    batches = []
    for i in range(1, 9):
        upd = generate_updates(base, fraction=0.3, seed=100 + i, ts_offset=(i + 10) * 10**6)
        f = tmp_path / f"batch-{i}.parquet"
        pq.write_table(upd, f)
        batches.append(str(f))
        expected.update(upd.to_pandas().set_index("uuid"))
    done = tmp_path / "writer-done"
    clean_opts = {"hoodie.cleaner.commits.retained": "1", "hoodie.clean.max.commits": "1", **LOCK_OPTS}

    writer_args = {
        "role": "writer",
        "path": str(path),
        "type": "COPY_ON_WRITE",
        "batches": batches,
        "done": str(done),
        "options": LOCK_OPTS,
    }
    cleaner_args = {"role": "cleaner", "path": str(path), "done": str(done), "options": clean_opts}
    body = (
        "\nif args['role'] == 'writer':\n"
        + textwrap.indent(textwrap.dedent(_WRITER), "    ")
        + "\nelse:\n"
        + textwrap.indent(textwrap.dedent(_CLEANER), "    ")
    )

    results = _race(tmp_path, body, [writer_args, cleaner_args])

    assert [rc for rc, _, _ in results] == [0, 0], [err[-2000:] for _, _, err in results]
    assert json.loads(results[1][1].strip().splitlines()[-1])["cleans"] >= 1  # the cleaner did clean meanwhile
    got = hudi_rs_snapshot(path)
    assert got is not None
    cols = [c for c in base.column_names if c != "uuid"]
    ours = got.to_pandas().set_index("uuid")[cols].sort_index()
    want = expected[cols].sort_index()
    assert list(ours.index) == list(want.index)
    pd.testing.assert_frame_equal(ours, want, check_dtype=False)


_COMPACTOR = """
from lake_orchestration.errors import PlanError
from lake_orchestration.hudi.services.compaction import CompactionConfig, run_compaction, schedule_compaction
from lake_orchestration.hudi.table import HudiTable
cfg = CompactionConfig.from_options(args["options"])
scheduled = 0
while True:
    finished = Path(args["done"]).exists()
    try:
        r = schedule_compaction(HudiTable(args["path"]), config=cfg, force=True)
        scheduled += r.instant is not None
    except PlanError:
        pass  # a write is inflight with an earlier instant: Hudi schedules no compaction then
    run_compaction(HudiTable(args["path"]), config=cfg, max_plans=10)
    if finished:
        break
print(json.dumps({"scheduled": scheduled}))
"""


def test_compaction_scheduled_while_a_writer_writes_keeps_every_row(tmp_path: Path) -> None:
    """A plan scheduled between a writer's file lookup and its instant: the writer's log files must go to the new
    slice of the file groups under compaction, or the compaction hides them."""
    import pyarrow.parquet as pq

    path, base = trips_table(tmp_path, 2, TableType.MERGE_ON_READ)
    expected = base.to_pandas().set_index("uuid")
    expected.update(generate_updates(base, fraction=0.1, seed=0, ts_offset=10**6).to_pandas().set_index("uuid"))
    batches = []
    for i in range(1, 11):
        upd = generate_updates(base, fraction=0.3, seed=200 + i, ts_offset=(i + 10) * 10**6)
        f = tmp_path / f"batch-{i}.parquet"
        pq.write_table(upd, f)
        batches.append(str(f))
        expected.update(upd.to_pandas().set_index("uuid"))
    done = tmp_path / "writer-done"
    writer_args = {
        "role": "writer",
        "path": str(path),
        "type": "MERGE_ON_READ",
        "batches": batches,
        "done": str(done),
        "options": LOCK_OPTS,
    }
    compactor_args = {"role": "compactor", "path": str(path), "done": str(done), "options": LOCK_OPTS}
    body = (
        "\nif args['role'] == 'writer':\n"
        + textwrap.indent(textwrap.dedent(_WRITER), "    ")
        + "\nelse:\n"
        + textwrap.indent(textwrap.dedent(_COMPACTOR), "    ")
    )

    results = _race(tmp_path, body, [writer_args, compactor_args])

    assert [rc for rc, _, _ in results] == [0, 0], [err[-2000:] for _, _, err in results]
    assert json.loads(results[1][1].strip().splitlines()[-1])["scheduled"] >= 1
    assert not list((path / ".hoodie").glob("*.compaction.requested")) or all(
        (path / ".hoodie" / p.name.replace(".compaction.requested", ".commit")).exists()
        for p in (path / ".hoodie").glob("*.compaction.requested")
    ), "a compaction plan was left pending"
    got = hudi_rs_snapshot(path)
    assert got is not None
    cols = [c for c in base.column_names if c != "uuid"]
    ours = got.to_pandas().set_index("uuid")[cols].sort_index()
    want = expected[cols].sort_index()
    assert list(ours.index) == list(want.index)
    pd.testing.assert_frame_equal(ours, want, check_dtype=False)
