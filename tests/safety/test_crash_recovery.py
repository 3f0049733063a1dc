"""Crash tests for rollback and savepoint: a process killed before each of its storage mutations, then rerun, leaves
the table exactly as an uninterrupted run does (hudi-rs snapshot, timeline, data files, rollback metadata).

The crash is injected in a subprocess (a forked child of a fork server that imported lake_orchestration once,
tests/forkserver.py) that runs the real API with the ``Storage`` mutation methods wrapped to
``os._exit(137)`` right before the Nth call (nothing is flushed, no ``finally`` runs: the same as a SIGKILL at that
point). Each step of the uninterrupted run is one crash point.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.model.avro import RollbackMetadata, SavepointMetadata
from lake_orchestration.hudi.model.instant import Action, Instant, State
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.compaction import run_compaction, schedule_compaction
from lake_orchestration.hudi.services.rollback import rollback_write
from lake_orchestration.hudi.table import HudiTable, read_snapshot_table
from lake_orchestration.hudi.write import WriteOptions, write_table
from tests.conftest import REPO_ROOT
from tests.forkserver import ForkServer
from tests.oracle import REWRITTEN_BY_SERVICES, assert_same_rows, hudi_rs_snapshot
from tests.trips import trips_options

# Runs ``sys.argv[2]`` (python code using ``path``) with the storage mutations wrapped: before each one a line
# "OP <method> <path>" is printed; the CRASH_AT-th one (1-based; 0 = never) kills the process instead. CRASH_ON, if
# set, is a regex: the first mutation whose path matches it kills the process.
_HOOK = r"""
import os, re, sys
from lake_orchestration.io.storage import Storage

_n = [0]
_at = int(os.environ.get("CRASH_AT", "0"))
_on = os.environ.get("CRASH_ON")

def _wrap(name):
    orig = getattr(Storage, name)
    def hooked(self, path, *args, **kwargs):
        _n[0] += 1
        if _n[0] == _at or (_on and re.search(_on, path)):
            print(f"CRASH {name} {path}", flush=True)
            os._exit(137)
        print(f"OP {name} {path}", flush=True)
        return orig(self, path, *args, **kwargs)
    setattr(Storage, name, hooked)

for _m in ("create_if_absent", "delete_file", "delete_dir", "write_bytes", "open_output_stream"):
    _wrap(_m)

path = sys.argv[1]
exec(sys.argv[2])
"""

_ROLLBACK = """
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.services.rollback import rollback_write
rollback_write(HudiTable(path), sys.argv[3])
"""

_SP_CREATE = """
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.services.savepoint import create_savepoint
create_savepoint(HudiTable(path), sys.argv[3], user="u", comments="c")
"""

_SP_DELETE = """
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.services.savepoint import delete_savepoint
assert delete_savepoint(HudiTable(path), sys.argv[3])
"""

_UPSERT = """
import pyarrow.parquet as pq
from lake_orchestration.hudi.write import write_table
write_table(path, pq.read_table(sys.argv[3]), operation="upsert")
"""


_FORKS: list[ForkServer] = []
"""The module's fork server (:mod:`tests.forkserver`): lake_orchestration imported once, each run a forked child, a
process of its own that the hook kills with ``os._exit`` as before, without ~2 s of imports per crash point."""


@pytest.fixture(scope="module", autouse=True)
def _fork_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    preload = [x for m in _PRELOAD for x in ("--import", m)]
    _FORKS.append(ForkServer(sys.executable, preload, tmp_path_factory.mktemp("forks") / "server.log", env, REPO_ROOT))
    yield
    _FORKS.pop().close()


_PRELOAD = (
    "pyarrow.parquet",
    "lake_orchestration.io.storage",
    "lake_orchestration.hudi.table",
    "lake_orchestration.hudi.write",
    "lake_orchestration.hudi.services.rollback",
    "lake_orchestration.hudi.services.savepoint",
    "lake_orchestration.hudi.services.compaction",
)


def _run(path: Path, code: str, *args: str, crash_at: int = 0, crash_on: str | None = None) -> tuple[int, list[str]]:
    """``python -c _HOOK path code *args`` (in a child of the fork server)."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "CRASH_AT": str(crash_at)}
    if crash_on:
        env["CRASH_ON"] = crash_on
    (forks,) = _FORKS
    p = forks.run([str(path), code, *args], code=_HOOK, env=env, cwd=REPO_ROOT, timeout=300)
    ops = [line for line in p.stdout.splitlines() if line.startswith(("OP ", "CRASH "))]
    if p.returncode not in (0, 137):
        raise AssertionError(f"subprocess failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    if p.returncode == 137:
        _long_ago(path)
    return p.returncode, ops


def _unlocked(ops: list[str]) -> list[str]:
    """The steps but taking and releasing the table lock (``.hoodie/lock``; crashes there are tested too)."""
    return [op for op in ops if not op.endswith("/.hoodie/lock")]


def _step(ops: list[str], pattern: str) -> int:
    """The 1-based step whose path matches ``pattern`` (the last one)."""
    return max(n for n, op in enumerate(ops, 1) if re.search(pattern, op))


def _crash_points(ops: list[str]) -> list[int]:
    """The steps to crash before: every step, but of a run of steps of one kind (deleting base file after base file,
    writing rollback log file after log file) only the first and the last."""

    def kind(op: str) -> str:
        method, path = op.split(" ", 2)[1:3]
        name = path.rsplit("/", 1)[-1]
        if name.endswith(".parquet"):
            return f"{method} base file"
        if ".log." in name:
            return f"{method} log file"
        return f"{method} {re.sub(r'[0-9]{14,17}', 'T', name)}"

    kinds = [kind(op) for op in ops]
    return [
        n
        for n in range(1, len(ops) + 1)
        if n in (1, len(ops)) or kinds[n - 1] != kinds[n - 2] or kinds[n - 1] != kinds[n]
    ]


def _long_ago(path: Path) -> None:
    """The rerun comes after the killed process's heartbeats and table lock expired (they are judged by mtime)."""
    old = time.time() - 3600
    for f in [path / ".hoodie" / "lock", *(path / ".hoodie" / ".heartbeat").glob("*")]:
        if f.exists():
            os.utime(f, (old, old))


def _opts(table_type: TableType) -> WriteOptions:
    return trips_options(table_type=table_type, max_rows_per_file=100, small_file_limit=0)


def _failed_write(tmp_path: Path, table_type: TableType) -> tuple[Path, str, pa.Table]:
    """A table with a write killed just before its commit point: the failed instant, and the rows before it."""
    path = tmp_path / "template"
    base = generate_trips(400, partitions=3, seed=1)
    write_table(str(path), base, operation="bulk_insert", options=_opts(table_type))
    write_table(
        str(path),
        generate_updates(base, fraction=0.2, seed=2, ts_offset=10**7),
        operation="upsert",
        options=_opts(table_type),
    )
    before = hudi_rs_snapshot(path)
    batch = tmp_path / "batch.parquet"
    import pyarrow.parquet as pq

    pq.write_table(
        pa.concat_tables(
            [generate_updates(base, fraction=0.3, seed=3, ts_offset=10**8), generate_trips(150, partitions=3, seed=9)]
        ),
        batch,
    )
    rc, _ = _run(path, _UPSERT, str(batch), crash_on=r"\.hoodie/\d+\.(delta)?commit$")
    assert rc == 137
    (pending,) = list(HudiTable(str(path)).timeline.pending())
    return path, str(pending.time), before


def _state(path: Path, rollback_time: str | None) -> dict[str, object]:
    """Every file of the table (names with the rollback instant time replaced by R), and the rollback metadata."""
    files = []
    for p in sorted(path.rglob("*")):
        # hoodie.properties aside; a table lock left by a kill while releasing it is taken over once expired
        if p.is_file() and "hoodie.properties" not in p.name and p != path / ".hoodie" / "lock":
            rel = str(p.relative_to(path))
            files.append(rel.replace(rollback_time, "R") if rollback_time else rel)
    out: dict[str, object] = {"files": files}
    if rollback_time:

        def rel(uri: str) -> str:  # the table's own path (with or without a file: scheme) removed
            return uri.split(str(path) + "/", 1)[-1]

        md = RollbackMetadata.from_bytes((path / ".hoodie" / f"{rollback_time}.rollback").read_bytes(), path=str(path))
        out["rollback"] = (
            md.commits_rollback,
            md.total_files_deleted,
            {
                p: (
                    sorted(map(rel, pm.success_delete_files)),
                    sorted(map(rel, pm.rollback_log_files)),
                    sorted(map(rel, pm.log_files_from_failed_commit)),
                )
                for p, pm in md.partition_metadata.items()
            },
        )
    return out


def _rollback_time(path: Path) -> str:
    (rb,) = [p.name.split(".")[0] for p in (path / ".hoodie").glob("*.rollback")]
    return rb


@pytest.mark.parametrize("table_type", [TableType.MERGE_ON_READ, TableType.COPY_ON_WRITE], ids=["mor", "cow"])
def test_rollback_killed_at_every_step_then_rerun_ends_as_uninterrupted(tmp_path: Path, table_type: TableType) -> None:
    template, failed, before = _failed_write(tmp_path, table_type)
    ref = tmp_path / "ref"
    shutil.copytree(template, ref)
    rc, ops = _run(ref, _ROLLBACK, failed)
    assert rc == 0
    assert_same_rows(hudi_rs_snapshot(ref), before)
    expected = _state(ref, _rollback_time(ref))
    # the steps: .rollback.requested, .rollback.inflight, base files deleted, (MOR) rollback log files written,
    # markers deleted, the failed instant's timeline files and heartbeat deleted, .rollback
    kinds = [re.sub(r"\d{14,17}", "T", op.split(" ", 1)[1]) for op in _unlocked(ops)]
    assert kinds[0].endswith(".rollback.requested") and kinds[1].endswith(".rollback.inflight")
    assert kinds[-1].endswith(".rollback")
    assert any(k.startswith("delete_file") and k.endswith(".parquet") for k in kinds)
    assert any(".log." in k for k in kinds) == (table_type is TableType.MERGE_ON_READ)
    assert any(k.startswith("delete_file") and k.endswith(".inflight") and ".rollback" not in k for k in kinds)
    commit = _step(ops, r"\.hoodie/\d+\.rollback$")  # the commit point; after it only the lock is released
    for n in _crash_points(ops):
        run = tmp_path / f"crash{n}"
        shutil.copytree(template, run)
        rc, crashed_ops = _run(run, _ROLLBACK, failed, crash_at=n)
        assert rc == 137 and crashed_ops[-1].startswith("CRASH"), (n, crashed_ops)
        # interrupted: either the failed write is still pending or the rollback is; the snapshot never has its rows
        t = HudiTable(str(run))
        assert_same_rows(hudi_rs_snapshot(run), before)
        if n <= commit:
            assert list(t.timeline.pending()), f"crash at step {n} ({ops[n - 1]}): nothing pending left to resume"
            # rerun: the same command
            done = rollback_write(HudiTable(str(run)), failed)
            assert isinstance(done, Instant) and done.state is State.COMPLETED
        assert not list(HudiTable(str(run)).timeline.pending()), f"crash at step {n}: something left pending"
        assert _state(run, _rollback_time(run)) == expected, f"crash at step {n} ({ops[n - 1]})"
        assert_same_rows(hudi_rs_snapshot(run), before)
        if n != commit:
            shutil.rmtree(run)
    # a later service reads the recovered table right: compaction (MOR) / an upsert keep hudi-rs equal to our read
    last = tmp_path / f"crash{commit}"
    t = HudiTable(str(last))
    if table_type is TableType.MERGE_ON_READ:
        assert schedule_compaction(t, force=True).scheduled
        (res,) = run_compaction(HudiTable(str(last)))
        assert res.operations
        assert_same_rows(hudi_rs_snapshot(last), before, ignore=REWRITTEN_BY_SERVICES)
    upd = generate_updates(generate_trips(400, partitions=3, seed=1), fraction=0.1, seed=11, ts_offset=10**9)
    write_table(str(last), upd, operation="upsert")
    assert_same_rows(read_snapshot_table(HudiTable(str(last))), hudi_rs_snapshot(last))


def test_rollback_killed_after_failed_instant_removed_is_resumed_by_stale_cli(tmp_path: Path) -> None:
    """The crash window Java also has (the failed instant's files are gone, ``.rollback`` not written): ``rollback
    --stale`` (as Java's rollbackFailedWrites) completes the pending rollback instead of leaving it forever."""
    from click.testing import CliRunner

    from lake_orchestration.cli.app import cli

    template, failed, before = _failed_write(tmp_path, TableType.MERGE_ON_READ)
    rc, _ = _run(template, _ROLLBACK, failed, crash_on=r"\.hoodie/\d+\.rollback$")
    assert rc == 137
    t = HudiTable(str(template))
    assert t.timeline.get(failed) is None
    (pending,) = list(t.timeline.pending())
    assert pending.action is Action.ROLLBACK
    r = CliRunner().invoke(cli, ["rollback", str(template), "--stale", "--json"])
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.output)
    assert row["instant"] == failed and row["rollback_instant"] == str(pending.time)
    t = HudiTable(str(template))
    assert not list(t.timeline.pending())
    assert t.timeline.get(str(pending.time), Action.ROLLBACK).state is State.COMPLETED
    assert_same_rows(hudi_rs_snapshot(template), before)
    # and once complete, nothing more to do
    r = CliRunner().invoke(cli, ["rollback", str(template), "--stale", "--json"])
    assert r.exit_code == 0 and json.loads(r.output) == []


def _savepointed_table(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "template"
    base = generate_trips(300, partitions=3, seed=1)
    first = write_table(str(path), base, operation="bulk_insert", options=_opts(TableType.MERGE_ON_READ))
    write_table(
        str(path),
        generate_updates(base, fraction=0.2, seed=2, ts_offset=10**7),
        operation="upsert",
        options=_opts(TableType.MERGE_ON_READ),
    )
    return path, first.instant


def _sp_state(path: Path, instant: str) -> tuple[list[str], dict[str, list[str]] | None]:
    names = sorted(
        p.name for p in (path / ".hoodie").iterdir() if p.is_file() and p.name not in ("hoodie.properties", "lock")
    )
    sp = path / ".hoodie" / f"{instant}.savepoint"
    if not sp.exists():
        return names, None
    md = SavepointMetadata.from_bytes(sp.read_bytes(), path=str(sp))
    assert md.savepointed_by == "u" and md.comments == "c"
    return names, {p: sorted(pm.savepoint_data_file) for p, pm in md.partition_metadata.items()}


def test_savepoint_create_and_delete_killed_at_every_step_then_rerun(tmp_path: Path) -> None:
    from lake_orchestration.hudi.services.clean import run_clean
    from lake_orchestration.hudi.services.savepoint import create_savepoint, delete_savepoint, list_savepoints

    template, instant = _savepointed_table(tmp_path)
    ref = tmp_path / "ref"
    shutil.copytree(template, ref)
    rc, create_ops = _run(ref, _SP_CREATE, instant)
    assert rc == 0 and len(_unlocked(create_ops)) == 2  # .savepoint.inflight, .savepoint
    created = _sp_state(ref, instant)
    assert created[1] and f"{instant}.savepoint.inflight" in created[0]
    saved = tmp_path / "saved"
    shutil.copytree(ref, saved)
    rc, delete_ops = _run(ref, _SP_DELETE, instant)
    assert rc == 0 and len(_unlocked(delete_ops)) == 2  # .savepoint, then .savepoint.inflight
    deleted = _sp_state(ref, instant)
    assert deleted[1] is None and not [n for n in deleted[0] if ".savepoint" in n]
    commit = _step(create_ops, r"\.savepoint$")
    for n in _crash_points(create_ops):
        run = tmp_path / f"create{n}"
        shutil.copytree(template, run)
        assert _run(run, _SP_CREATE, instant, crash_at=n)[0] == 137
        if n <= commit:
            assert list_savepoints(HudiTable(str(run))) == []  # a half-made savepoint protects nothing, reads as none
            create_savepoint(HudiTable(str(run)), instant, user="u", comments="c")
        assert _sp_state(run, instant) == created, f"create crashed at step {n}"
        # a later clean keeps the savepointed files
        run_clean(HudiTable(str(run)))
        assert [s.instant_time for s in list_savepoints(HudiTable(str(run)))] == [instant]
    commit = _step(delete_ops, r"\.savepoint")
    for n in _crash_points(delete_ops):
        run = tmp_path / f"delete{n}"
        shutil.copytree(saved, run)
        assert _run(run, _SP_DELETE, instant, crash_at=n)[0] == 137
        if n <= commit:
            assert delete_savepoint(HudiTable(str(run)), instant)
        assert _sp_state(run, instant) == deleted, f"delete crashed at step {n}"
        assert not delete_savepoint(HudiTable(str(run)), instant)


_COMPACT = """
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.services.compaction import run_compaction
run_compaction(HudiTable(path))
"""


def test_compaction_rollback_killed_at_every_step_then_rerun_and_compaction_recover(tmp_path: Path) -> None:
    """``rollback --instant-time <compaction>`` of an inflight compaction (its base files written, killed before its
    commit), killed before each step. Java's order (rollback completed, then the compaction reverted to requested)
    means a kill between the two leaves the compaction inflight: the rerun rolls it back again (a second, empty
    rollback instant, as Java would). Either way the compaction then runs and hudi-rs reads the same rows."""
    template = tmp_path / "template"
    base = generate_trips(400, partitions=3, seed=1)
    write_table(str(template), base, operation="bulk_insert", options=_opts(TableType.MERGE_ON_READ))
    write_table(
        str(template),
        generate_updates(base, fraction=0.3, seed=2, ts_offset=10**7),
        operation="upsert",
        options=_opts(TableType.MERGE_ON_READ),
    )
    before = hudi_rs_snapshot(template)
    sched = schedule_compaction(HudiTable(str(template)), force=True)
    instant = str(sched.instant)
    rc, _ = _run(template, _COMPACT, crash_on=rf"\.hoodie/{instant}\.commit$")
    assert rc == 137
    assert HudiTable(str(template)).timeline.get(instant).state is State.INFLIGHT  # type: ignore[union-attr]
    attempt = sorted(p.name for p in template.rglob(f"*_{instant}.parquet"))
    assert attempt
    ref = tmp_path / "ref"
    shutil.copytree(template, ref)
    rc, ops = _run(ref, _ROLLBACK, instant)
    assert rc == 0
    kinds = [re.sub(r"\d{14,17}", "T", op.split(" ", 1)[1]) for op in _unlocked(ops)]
    assert kinds[0].endswith(".rollback.requested") and kinds[-1].endswith("T.compaction.inflight")
    assert sum(k.startswith("delete_file") and k.endswith(".parquet") for k in kinds) == len(attempt)
    expected = _state(ref, _rollback_time(ref))
    revert = _step(ops, rf"{instant}\.compaction\.inflight$")  # after it only the lock is released
    for n in _crash_points(ops):
        run = tmp_path / f"crash{n}"
        shutil.copytree(template, run)
        rc, crashed = _run(run, _ROLLBACK, instant, crash_at=n)
        assert rc == 137 and crashed[-1].startswith("CRASH"), (n, crashed)
        assert_same_rows(hudi_rs_snapshot(run), before)
        if n <= revert:
            rollback_write(HudiTable(str(run)), instant)
        t = HudiTable(str(run))
        assert t.timeline.get(instant).state is State.REQUESTED, f"crash at step {n}"  # type: ignore[union-attr]
        assert not list(t.timeline.pending().with_actions(Action.ROLLBACK)), f"crash at step {n}"
        assert not list(run.rglob(f"*_{instant}.parquet")), f"crash at step {n}: attempt files left"
        rollbacks = sorted(p.name.split(".")[0] for p in (run / ".hoodie").glob("*.rollback"))
        if n != revert:
            assert len(rollbacks) == 1 and _state(run, rollbacks[0]) == expected, f"crash at step {n} ({ops[n - 1]})"
        else:  # killed after the rollback completed, before the compaction was reverted: rolled back once more
            assert len(rollbacks) == 2
            md = RollbackMetadata.from_bytes((run / ".hoodie" / f"{rollbacks[1]}.rollback").read_bytes(), path="")
            assert md.commits_rollback == (instant,) and md.total_files_deleted == 0
        (res,) = run_compaction(HudiTable(str(run)))
        assert res.instant == instant and res.rolled_back_attempt is None
        assert_same_rows(hudi_rs_snapshot(run), before, ignore=REWRITTEN_BY_SERVICES)
        shutil.rmtree(run)
