"""A log compaction attempt paused past its heartbeat expiry and taken over stops before its next log file.

Process 1 executes a log compaction plan and is paused (SIGSTOP) after writing its first merged log file. Its
heartbeat expires; a second run rolls the attempt back, executes the plan and commits it. Resumed, process 1 must not
write the log files of its remaining operations: their blocks carry the now-completed instant, so readers would take
them as committed data (records read twice, and a merged block placed after newer writes hides them), while the
commit metadata does not list them. Compaction stops between tasks the same way (test_concurrent_compaction.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lake_orchestration.hudi.log.log_format import iter_blocks
from lake_orchestration.hudi.model.avro import CompactionPlan
from lake_orchestration.hudi.model.instant import Action, Instant, State
from lake_orchestration.hudi.services.compaction import CompactionConfig
from lake_orchestration.hudi.services.log_compaction import run_log_compaction, schedule_log_compaction
from lake_orchestration.hudi.table import HudiTable, read_snapshot_table
from lake_orchestration.hudi.table.heartbeat import heartbeat_path
from tests.conftest import REPO_ROOT
from tests.oracle import assert_same_rows, hudi_rs_snapshot
from tests.tables import generated_table

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs SIGSTOP")

SHORT = {"hoodie.client.heartbeat.interval_in_ms": "500", "hoodie.client.heartbeat.tolerable.misses": "2"}
_TIMEOUT_S = 180

_CHILD = """
import sys, time
from pathlib import Path
import lake_orchestration.hudi.services.log_compaction.executor as lc
from lake_orchestration.hudi.services.log_compaction import run_log_compaction
from lake_orchestration.hudi.services.compaction import CompactionConfig
from lake_orchestration.hudi.table import HudiTable

path, instant, gate = sys.argv[1], sys.argv[2], Path(sys.argv[3])
real = lc._compact_logs

def held(*args, **kwargs):  # test hook: the first operation writes its log file, then waits for the gate
    stat = real(*args, **kwargs)
    if not (gate / "first-done").exists():
        (gate / "first-done").write_text("")
        deadline = time.monotonic() + 300
        while not (gate / "go").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
    return stat

lc._compact_logs = held
cfg = CompactionConfig.from_options({"hoodie.client.heartbeat.interval_in_ms": "500",
                                     "hoodie.client.heartbeat.tolerable.misses": "2"})
run_log_compaction(HudiTable(path), instant, config=cfg)
"""


def _files_with_blocks_of(path: Path, instant: str) -> set[str]:
    return {
        str(p.relative_to(path))
        for p in path.rglob(".*.log.*")
        if any(b.instant_time == instant for b in iter_blocks(p.read_bytes()))
    }


def test_paused_log_compaction_taken_over_writes_no_more_log_files(tmp_path: Path) -> None:
    path = generated_table(tmp_path, deltas=3)
    before = hudi_rs_snapshot(path)
    sched = schedule_log_compaction(HudiTable(str(path)), config=CompactionConfig(log_compaction_blocks_threshold=2))
    assert sched.scheduled, sched.reason
    instant = str(sched.instant)
    t = HudiTable(str(path))
    req = Instant(sched.instant, Action.LOG_COMPACTION, State.REQUESTED)
    plan = CompactionPlan.from_bytes(t.read_instant(req), path="plan")
    assert len(plan.operations or ()) >= 2, "the plan needs a second operation after the pause"
    gate = tmp_path / "gate"
    gate.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(path), instant, str(gate)],
        env=env,
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + _TIMEOUT_S
        while not (gate / "first-done").exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "process 1 never finished its first operation"
            time.sleep(0.02)
        proc.send_signal(signal.SIGSTOP)
        hb = heartbeat_path(t.storage, instant)
        deadline = time.monotonic() + 60
        while time.time() * 1000 - (t.storage.mtime_ms(hb) or 0) <= 1000 + 300:
            assert time.monotonic() < deadline, "process 1's heartbeat never expired"
            time.sleep(0.1)
        # the winner: rolls process 1's attempt back, executes the whole plan and commits it
        md = run_log_compaction(HudiTable(str(path)), instant, config=CompactionConfig.from_options(SHORT))
        committed = {s.path for s in md.write_stats()}
        assert committed and _files_with_blocks_of(path, instant) == committed
        (gate / "go").write_text("")
        proc.send_signal(signal.SIGCONT)
        _, err = proc.communicate(timeout=_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGCONT)
            proc.kill()
            proc.communicate()
    assert proc.returncode != 0 and "taken over by another process" in err, err[-3000:]
    # no log file with blocks of the completed instant besides the committed ones
    assert _files_with_blocks_of(path, instant) == committed
    t = HudiTable(str(path))
    assert t.timeline.get(instant, Action.DELTA_COMMIT).is_completed
    after = hudi_rs_snapshot(path)
    keys = after.column("_hoodie_record_key").to_pylist()
    assert len(keys) == len(set(keys)), "a record is read twice"
    assert_same_rows(after, before)
    assert_same_rows(read_snapshot_table(HudiTable(str(path))), before)
