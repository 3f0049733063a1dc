"""Two writers on one table: Hudi's optimistic concurrency check at commit, with real concurrent processes.

Two ``lake-orch write --operation upsert`` processes update and insert into the same file group. A file barrier
(each process, once its instant is requested and its rows are tagged, waits for the other) makes both tag against
the same base file version before either commits. Without the check the second commit rewrites the file group from
the old base and silently drops the first one's rows; with it, exactly one commits and the other fails with
:class:`WriteConflictError`, is rolled back (no rows, no files left) and succeeds when run again.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.model.instant import Action, State
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.write import write_table
from tests.conftest import REPO_ROOT
from tests.oracle import hudi_rs_snapshot
from tests.trips import trips_options

# The child: the real CLI, with one barrier before its first data file (after its instant is requested and its rows
# are tagged against the table as of then): both writers have tagged before either writes or commits.
_CHILD = r"""
import os, sys, time
from pathlib import Path
from lake_orchestration.hudi.table.hudi_table import HudiTable

barrier, me = Path(sys.argv[1]), sys.argv[2]
original = HudiTable.transition_to_inflight

def at_barrier(self, requested, content=b""):
    if (barrier / me).exists():  # once: the write's own instant (a rollback's later is not held)
        return original(self, requested, content)
    (barrier / me).write_text(str(requested.time))
    deadline = time.monotonic() + 60
    while len(list(barrier.iterdir())) < 2:
        if time.monotonic() > deadline:
            raise SystemExit("barrier: the other writer never arrived")
        time.sleep(0.02)
    return original(self, requested, content)

HudiTable.transition_to_inflight = at_barrier
from lake_orchestration.cli.app import cli
cli(sys.argv[3:], prog_name="lake-orch")
"""


def _write_args(table: Path, rows: Path) -> list[str]:
    return [
        "write",
        str(table),
        "--input",
        str(rows),
        "--operation",
        "upsert",
        "--record-key",
        "uuid",
        "--precombine-field",
        "ts",
        "--partition-field",
        "city",
    ]


def _batch(base: pa.Table, *, part: int, new_rows: int) -> pa.Table:
    """Updates of a disjoint slice of the base rows (``part`` 0 or 1: rows 30*part..30*part+29, all in the one file
    group) plus ``new_rows`` rows with keys of their own."""
    upd = generate_updates(base.slice(30 * part, 30), fraction=1.0, seed=part, ts_offset=10**7)
    fresh = generate_trips(new_rows, partitions=1, seed=1000 + part, ts_offset=10**7)
    return pa.concat_tables([upd, fresh])


@pytest.mark.parametrize("table_type", [TableType.COPY_ON_WRITE, TableType.MERGE_ON_READ])
def test_two_concurrent_upserts_one_fails_with_conflict_and_is_rolled_back(
    tmp_path: Path, table_type: TableType
) -> None:
    table_path = tmp_path / "t"
    base = generate_trips(300, partitions=1, seed=3)
    write_table(str(table_path), base, operation="bulk_insert", options=trips_options(table_type=table_type))
    before = {str(p.relative_to(table_path)) for p in table_path.rglob("*") if p.is_file() and ".hoodie" not in p.parts}

    batches = {"a": _batch(base, part=0, new_rows=25), "b": _batch(base, part=1, new_rows=25)}
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    procs = {}
    for name, rows in batches.items():
        pq.write_table(rows, tmp_path / f"{name}.parquet")
        procs[name] = subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(barrier), name, *_write_args(table_path, tmp_path / f"{name}.parquet")],
            env=env,
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    out = {name: (p.wait(timeout=240), *p.communicate()) for name, p in procs.items()}
    codes = {name: o[0] for name, o in out.items()}
    assert sorted(codes.values()) == [0, 1], f"expected exactly one writer to fail: {out}"
    loser = next(n for n, c in codes.items() if c != 0)
    winner = next(n for n, c in codes.items() if c == 0)
    loser_instant = (barrier / loser).read_text()
    stderr = out[loser][2]
    assert "Write conflict" in stderr and loser_instant in stderr and table_path.as_posix() in stderr, stderr
    assert "rolled back" in stderr, stderr

    # the table: base rows with the winner's upserts, nothing of the loser's
    expected = {r["uuid"]: r["fare"] for r in base.to_pylist()}
    expected.update({r["uuid"]: r["fare"] for r in batches[winner].to_pylist()})
    snap = hudi_rs_snapshot(table_path)
    assert snap is not None
    got = dict(zip(snap.column("uuid").to_pylist(), snap.column("fare").to_pylist(), strict=True))
    assert len(got) == snap.num_rows, "a key is read twice"
    assert got == expected

    # the loser left no files: only the base's and the winner's data files exist, and its instant is rolled back
    table = HudiTable(str(table_path))
    tl = table.timeline
    assert tl.get(loser_instant) is None or tl.get(loser_instant).action is Action.ROLLBACK  # type: ignore[union-attr]
    rolled = [i for i in tl if i.action is Action.ROLLBACK and i.state is State.COMPLETED]
    assert len(rolled) == 1
    after = {str(p.relative_to(table_path)) for p in table_path.rglob("*") if p.is_file() and ".hoodie" not in p.parts}
    assert not [f for f in after - before if loser_instant in f], f"files of {loser_instant} left: {after - before}"
    assert not (table_path / ".hoodie" / ".temp" / loser_instant).exists()

    # running the loser again succeeds, and then every row of both is there once
    rerun = subprocess.run(
        [sys.executable, "-m", "lake_orchestration.cli.app", *_write_args(table_path, tmp_path / f"{loser}.parquet")],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert rerun.returncode == 0, rerun.stderr
    expected.update({r["uuid"]: r["fare"] for r in batches[loser].to_pylist()})
    snap = hudi_rs_snapshot(table_path)
    assert snap is not None
    got = dict(zip(snap.column("uuid").to_pylist(), snap.column("fare").to_pylist(), strict=True))
    assert len(got) == snap.num_rows and got == expected
    assert pc.count_distinct(snap.column("uuid")).as_py() == snap.num_rows
