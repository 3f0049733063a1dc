"""Two processes on one compaction plan, a crashed attempt, a clean while a compaction runs — with real processes.

Process 1 executes a plan and is held inside its first task (a test hook in its own interpreter waits for a gate
file after the task wrote its base file), so the second process finds the plan inflight with a live heartbeat and
must refuse (``--instant-time``) or skip (``--seq`` loop) it instead of rolling the running attempt back. A killed
attempt is rolled back and re-executed once its heartbeat expired. Every table is compared with hudi-rs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.model.instant import Action, State
from lake_orchestration.hudi.services.clean.config import CleanConfig
from lake_orchestration.hudi.services.compaction import CompactionConfig, run_compaction, schedule_compaction
from lake_orchestration.hudi.table import HudiTable, read_snapshot_table
from lake_orchestration.hudi.table.heartbeat import heartbeat_path
from lake_orchestration.hudi.write import write_table
from tests.forkserver import ForkServer
from tests.oracle import REWRITTEN_BY_SERVICES, assert_same_rows, hudi_rs_snapshot
from tests.trips import trips_options

REPO_ROOT = Path(__file__).resolve().parents[2]
SHORT = {"hoodie.client.heartbeat.interval_in_ms": "500", "hoodie.client.heartbeat.tolerable.misses": "2"}
PATIENT = {"hoodie.client.heartbeat.interval_in_ms": "500", "hoodie.client.heartbeat.tolerable.misses": "40"}
"""How process 2 judges process 1: 20 s without a heartbeat, so a loaded box never makes process 1 look dead."""

_HELD = """
import json, os, sys, time
from lake_orchestration.hudi.services.compaction import CompactionConfig, executor, run_compaction
from lake_orchestration.hudi.table import HudiTable

path, gate, instant, opts = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
real = executor.execute_operation

def held(task, **kw):  # test hook: the first task writes its file, then waits for the gate
    stat = real(task, **kw)
    open(os.path.join(gate, f"done-{task.attempt.partition_id}"), "w").close()
    deadline = time.monotonic() + 120
    while not os.path.exists(os.path.join(gate, "go")) and time.monotonic() < deadline:
        time.sleep(0.02)
    return stat

executor.execute_operation = held
res = run_compaction(HudiTable(path), instant_time=instant, config=CompactionConfig.from_options(opts))
print(json.dumps([r.instant for r in res]))
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO_ROOT)}


def _table(tmp_path: Path) -> Path:
    """A MERGE_ON_READ table with 8 file groups, each with a base file and log files."""
    path = tmp_path / "t"
    opts = trips_options(max_rows_per_file=100, small_file_limit=0)
    base = generate_trips(400, partitions=4, seed=1)
    write_table(str(path), base, operation="bulk_insert", options=opts)
    for n in range(2):
        upd = pa.concat_tables(
            [
                generate_updates(base, fraction=0.3, seed=n, ts_offset=(n + 1) * 10**7),
                generate_trips(8, partitions=4, seed=50 + n),
            ]
        )
        write_table(str(path), upd, operation="upsert", options=opts)
    return path


def _start_held(path: Path, gate: Path, instant: str, opts: dict[str, str]) -> subprocess.Popen:  # type: ignore[type-arg]
    gate.mkdir(exist_ok=True)
    return subprocess.Popen(
        [sys.executable, "-c", _HELD, str(path), str(gate), instant, json.dumps(opts)],
        env=_env(),
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_first_task(proc: subprocess.Popen, gate: Path) -> None:  # type: ignore[type-arg]
    deadline = time.monotonic() + 60
    while not (gate / "done-0").exists():
        if proc.poll() is not None:
            raise AssertionError(f"process 1 ended early ({proc.returncode}): {proc.stderr.read()}")  # type: ignore[union-attr]
        assert time.monotonic() < deadline, "process 1 never reached its first task"
        time.sleep(0.02)


_FORKS: list[ForkServer] = []


@pytest.fixture(scope="module", autouse=True)
def _fork_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The module's :mod:`tests.forkserver` for process 2 (the CLI): its imports paid once, each run a forked child
    (process 1, held at its gate, is a subprocess of its own as before)."""
    log = tmp_path_factory.mktemp("forks") / "log"
    forks = ForkServer(sys.executable, ["--import", "lake_orchestration.cli.app"], log, _env(), REPO_ROOT)
    _FORKS.append(forks)
    yield
    _FORKS.remove(forks)
    forks.close()


def _cli(*args: str) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
    """``python -c "from lake_orchestration.cli.app import main; main()" ARGS``, a forked child of the fork server."""
    (forks,) = _FORKS
    code = "from lake_orchestration.cli.app import main; main()"
    return forks.run(args, code=code, env=_env(), cwd=REPO_ROOT, timeout=120)


def _options(opts: dict[str, str]) -> list[str]:
    return [a for k, v in opts.items() for a in ("--option", f"{k}={v}")]


def _assert_compacted_once(path: Path, instant: str, before: pa.Table) -> None:
    t = HudiTable(str(path))
    assert t.timeline.get(instant, Action.COMMIT) is not None, "the plan was not committed"
    names = [p.name for p in path.rglob(f"*_{instant}.parquet")]
    per_group = Counter(n.split("_")[0] for n in names)
    assert names and all(c == 1 for c in per_group.values()), f"duplicate base files in a file slice: {names}"
    assert_same_rows(hudi_rs_snapshot(path), before, ignore=REWRITTEN_BY_SERVICES)
    assert_same_rows(read_snapshot_table(t), before, ignore=REWRITTEN_BY_SERVICES)


def test_second_process_refuses_or_skips_a_plan_another_process_executes(tmp_path: Path) -> None:
    path = _table(tmp_path)
    before = hudi_rs_snapshot(path)
    instant = str(schedule_compaction(HudiTable(str(path)), force=True).instant)
    gate = tmp_path / "gate"
    p1 = _start_held(path, gate, instant, SHORT)
    try:
        _wait_first_task(p1, gate)
        written = sorted(p.name for p in path.rglob(f"*_{instant}.parquet"))
        # --instant-time: a clear refusal naming the heartbeat and its expiry
        r = _cli("compaction", "run", str(path), "--engine", "local", "--instant-time", instant, *_options(PATIENT))
        assert r.returncode == 1, r.stdout + r.stderr
        assert f"compaction {instant} is being executed by another process: heartbeat" in r.stderr
        assert "expires" in r.stderr
        # the --seq loop skips the plan with a message and commits nothing
        r = _cli("compaction", "run", str(path), "--engine", "local", "--seq", "FIFO", "--json", *_options(PATIENT))
        assert r.returncode == 0, r.stdout + r.stderr
        assert json.loads(r.stdout) == [] and f"Skipping compaction {instant}" in r.stderr
        # rollback --stale (even judging every heartbeat older than 1 ms stale) leaves a compaction alone
        r = _cli(
            "rollback",
            str(path),
            "--stale",
            "--timeout",
            "1s",
            "--option",
            "hoodie.client.heartbeat.interval_in_ms=1",
            "--option",
            "hoodie.client.heartbeat.tolerable.misses=1",
        )
        assert r.returncode == 0, r.stdout + r.stderr
        # nothing of process 1 was touched
        assert sorted(p.name for p in path.rglob(f"*_{instant}.parquet")) == written
        assert HudiTable(str(path)).timeline.get(instant, Action.COMPACTION).state is State.INFLIGHT
        (gate / "go").touch()
        out, err = p1.communicate(timeout=120)
    finally:
        if p1.poll() is None:
            p1.kill()
            p1.wait()
    assert p1.returncode == 0, err
    assert json.loads(out.strip().splitlines()[-1]) == [instant]
    _assert_compacted_once(path, instant, before)
    assert not HudiTable(str(path)).timeline.with_actions(Action.ROLLBACK), "a live attempt was rolled back"
    assert not (path / ".hoodie" / ".heartbeat" / instant).exists()


def test_killed_attempt_is_rolled_back_and_re_executed_once_its_heartbeat_expired(tmp_path: Path) -> None:
    path = _table(tmp_path)
    before = hudi_rs_snapshot(path)
    instant = str(schedule_compaction(HudiTable(str(path)), force=True).instant)
    gate = tmp_path / "gate"
    p1 = _start_held(path, gate, instant, SHORT)
    try:
        _wait_first_task(p1, gate)
        r = _cli("rollback", str(path), "--instant-time", instant, *_options(PATIENT))
        assert r.returncode == 1 and "is being executed by another process" in r.stderr, r.stdout + r.stderr
        p1.send_signal(signal.SIGKILL)
        p1.wait(timeout=30)
    finally:
        if p1.poll() is None:
            p1.kill()
            p1.wait()
    assert list(path.rglob(f"*_{instant}.parquet")), "the killed attempt left no file to roll back"
    assert_same_rows(hudi_rs_snapshot(path), before)
    t = HudiTable(str(path))
    hb = heartbeat_path(t.storage, instant)
    deadline = time.monotonic() + 30
    while time.time() * 1000 - (t.storage.mtime_ms(hb) or 0) <= 1000 + 300:  # SHORT expiry, with a margin
        assert time.monotonic() < deadline
        time.sleep(0.1)
    (result,) = run_compaction(HudiTable(str(path)), config=CompactionConfig.from_options(SHORT))
    assert result.instant == instant and result.rolled_back_attempt is not None
    _assert_compacted_once(path, instant, before)


def _table_with_two_slices(tmp_path: Path) -> tuple[Path, str]:
    """File groups with an older slice (compacted once) and a newer one, and a second plan pending."""
    path = _table(tmp_path)
    (_first,) = run_compaction(
        HudiTable(str(path)),
        schedule=True,
        config=CompactionConfig.from_options({"hoodie.compact.inline.max.delta.commits": "1"}),
    )
    opts = trips_options(max_rows_per_file=100, small_file_limit=0)
    rows = read_snapshot_table(HudiTable(str(path)))
    for n in range(2):
        upd = generate_updates(
            rows.select([c for c in rows.column_names if not c.startswith("_hoodie")]),
            fraction=0.3,
            seed=10 + n,
            ts_offset=(n + 5) * 10**7,
        )
        write_table(str(path), upd, operation="upsert", options=opts)
    return path, str(schedule_compaction(HudiTable(str(path)), force=True).instant)


def test_clean_while_a_compaction_executes_keeps_every_row(tmp_path: Path) -> None:
    path, instant = _table_with_two_slices(tmp_path)
    before = hudi_rs_snapshot(path)
    gate = tmp_path / "gate"
    p1 = _start_held(path, gate, instant, SHORT)
    try:
        _wait_first_task(p1, gate)
        r = _cli(
            "clean",
            str(path),
            "--engine",
            "local",
            "--json",
            "--option",
            "hoodie.cleaner.commits.retained=1",
            *_options(PATIENT),
        )
        assert r.returncode == 0, r.stdout + r.stderr
        assert json.loads(r.stdout)["deleted"] > 0, "the clean deleted nothing: the test would prove nothing"
        assert_same_rows(hudi_rs_snapshot(path), before)
        (gate / "go").touch()
        _, err = p1.communicate(timeout=120)
    finally:
        if p1.poll() is None:
            p1.kill()
            p1.wait()
    assert p1.returncode == 0, err
    _assert_compacted_once(path, instant, before)


_HELD_CLEAN = """
import os, sys, time
from lake_orchestration.hudi.services.clean import execute_clean, executor
from lake_orchestration.hudi.table import HudiTable

path, gate, instant = sys.argv[1], sys.argv[2], sys.argv[3]
real = executor.delete_files

def held(*args, **kw):  # test hook: delete, then wait for the gate before the commit
    out = real(*args, **kw)
    open(os.path.join(gate, "done-0"), "w").close()
    deadline = time.monotonic() + 120
    while not os.path.exists(os.path.join(gate, "go")) and time.monotonic() < deadline:
        time.sleep(0.02)
    return out

executor.delete_files = held
md = execute_clean(HudiTable(path), instant)
print(md.total_files_deleted)
"""


def test_a_pending_clean_is_not_executed_twice_at_once(tmp_path: Path) -> None:
    from lake_orchestration.hudi.services.clean import schedule_clean

    path, _ = _table_with_two_slices(tmp_path)
    before = hudi_rs_snapshot(path)
    inst, planning, reason = schedule_clean(
        HudiTable(str(path)), CleanConfig.from_options({"hoodie.cleaner.commits.retained": "1"})
    )
    assert inst is not None and planning is not None and planning.file_count, reason
    instant = str(inst.time)
    gate = tmp_path / "gate"
    gate.mkdir()
    p1 = subprocess.Popen(
        [sys.executable, "-c", _HELD_CLEAN, str(path), str(gate), instant],
        env=_env(),
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_first_task(p1, gate)
        r = _cli(
            "clean",
            str(path),
            "--engine",
            "local",
            "--json",
            "--option",
            "hoodie.cleaner.commits.retained=1",
            *_options(PATIENT),
        )
        assert r.returncode == 0, r.stdout + r.stderr
        assert instant not in json.loads(r.stdout)["instants"] and f"Skipping clean {instant}" in r.stderr, r.stderr
        assert HudiTable(str(path)).timeline.get(instant, Action.CLEAN).state is State.INFLIGHT
        (gate / "go").touch()
        out, err = p1.communicate(timeout=120)
    finally:
        if p1.poll() is None:
            p1.kill()
            p1.wait()
    assert p1.returncode == 0, err
    assert int(out.strip().splitlines()[-1]) == planning.file_count
    assert HudiTable(str(path)).timeline.get(instant, Action.CLEAN).is_completed
    assert_same_rows(hudi_rs_snapshot(path), before)


@pytest.mark.dagster
def test_dagster_backfill_skips_a_plan_another_process_executes(tmp_path: Path) -> None:
    import dagster as dg

    from lake_orchestration.dagster import HudiTableConfig, build_hudi_definitions

    path = _table(tmp_path)
    before = hudi_rs_snapshot(path)
    instant = str(schedule_compaction(HudiTable(str(path)), force=True).instant)
    gate = tmp_path / "gate"
    p1 = _start_held(path, gate, instant, SHORT)
    try:
        _wait_first_task(p1, gate)
        written = sorted(p.name for p in path.rglob(f"*_{instant}.parquet"))
        cfg = HudiTableConfig(name="t", base_path=str(path), engine="local", compaction_options=PATIENT)
        job = build_hudi_definitions(tables=[cfg]).resolve_job_def("t__compaction")
        with dg.instance_for_test() as instance:
            instance.add_dynamic_partitions("t__compaction_instants", [instant])
            result = job.execute_in_process(instance=instance, partition_key=instant)
        assert result.success
        (mat,) = result.asset_materializations_for_node("hudi__t__compaction")
        assert "being executed by another process" in mat.metadata["skipped"].value
        assert sorted(p.name for p in path.rglob(f"*_{instant}.parquet")) == written
        (gate / "go").touch()
        _, err = p1.communicate(timeout=120)
    finally:
        if p1.poll() is None:
            p1.kill()
            p1.wait()
    assert p1.returncode == 0, err
    _assert_compacted_once(path, instant, before)


def test_a_failed_attempt_rolls_itself_back_so_a_retry_runs_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The heartbeat must not block a retry after an ordinary error: the failing run rolls its own attempt back."""
    from lake_orchestration.hudi.services.compaction import executor

    path = _table(tmp_path)
    before = hudi_rs_snapshot(path)
    instant = str(schedule_compaction(HudiTable(str(path)), force=True).instant)
    real = executor.execute_operation
    calls = []

    def failing(task, **kw):  # type: ignore[no-untyped-def]
        calls.append(task.file_id)
        if len(calls) == 2:
            raise OSError("disk full (test)")
        return real(task, **kw)

    monkeypatch.setattr(executor, "execute_operation", failing)
    with pytest.raises(OSError, match="disk full"):
        run_compaction(HudiTable(str(path)), instant_time=instant)
    t = HudiTable(str(path))
    assert t.timeline.get(instant, Action.COMPACTION).state is State.REQUESTED
    assert not list(path.rglob(f"*_{instant}.parquet")), "the failed attempt's file was left"
    assert not (path / ".hoodie" / ".heartbeat" / instant).exists()
    monkeypatch.setattr(executor, "execute_operation", real)
    (result,) = run_compaction(HudiTable(str(path)), instant_time=instant)
    assert result.instant == instant
    _assert_compacted_once(path, instant, before)


def test_a_paused_attempt_taken_over_stops_and_commits_nothing(tmp_path: Path) -> None:
    """Process 1 is paused (SIGSTOP) past its heartbeat expiry: another run rolls its attempt back, executes and
    commits the plan. Resumed, process 1 must write no more files, commit nothing and touch nothing of the winner."""
    path = _table(tmp_path)
    before = hudi_rs_snapshot(path)
    instant = str(schedule_compaction(HudiTable(str(path)), force=True).instant)
    gate = tmp_path / "gate"
    p1 = _start_held(path, gate, instant, SHORT)
    try:
        _wait_first_task(p1, gate)
        p1.send_signal(signal.SIGSTOP)
        t = HudiTable(str(path))
        hb = heartbeat_path(t.storage, instant)
        deadline = time.monotonic() + 30
        while time.time() * 1000 - (t.storage.mtime_ms(hb) or 0) <= 1000 + 300:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        (result,) = run_compaction(HudiTable(str(path)), config=CompactionConfig.from_options(SHORT))
        assert result.rolled_back_attempt is not None
        committed = sorted(p.name for p in path.rglob(f"*_{instant}.parquet"))
        (gate / "go").touch()
        p1.send_signal(signal.SIGCONT)
        _, err = p1.communicate(timeout=120)
    finally:
        if p1.poll() is None:
            p1.send_signal(signal.SIGCONT)
            p1.kill()
            p1.wait()
    assert p1.returncode != 0 and "taken over by another process" in err, err
    assert sorted(p.name for p in path.rglob(f"*_{instant}.parquet")) == committed
    _assert_compacted_once(path, instant, before)
