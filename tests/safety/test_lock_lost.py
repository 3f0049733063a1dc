"""A table lock lost while held stops its section before the next timeline or archive change.

The holder is a real process paused with SIGSTOP past its lock's expiry (as a long GC pause, a suspended VM or a
starved heartbeat thread would); this process then takes the stale lock over, as it must, and holds it while the
paused one resumes. Before the fix the resumed process went on archiving (or scheduling) under a lock it no longer
held, overlapping the new holder: the very overlap the lock exists to prevent (issue 11 item 5).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lake_orchestration.hudi.model.avro import MergeArchiveFilePlan
from lake_orchestration.hudi.services.archive import merge_archive_files, run_archive
from lake_orchestration.hudi.services.archive.config import ArchiveConfig
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.archived_timeline import MERGE_ARCHIVE_PLAN_NAME
from lake_orchestration.hudi.table.lock import LockConfig, table_lock
from tests.safety.test_table_lock import _table, _wait_for

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs SIGSTOP")

REPO = Path(__file__).resolve().parents[2]
# the paused holder's lock expires 2 x 300 ms after its last heartbeat
HOLDER_LOCK = {
    "hoodie.write.lock.heartbeat_interval_ms": "300",
    "hoodie.client.heartbeat.tolerable.misses": "2",
    "hoodie.write.lock.wait_time_ms": "60000",
    "hoodie.write.lock.wait_time_ms_between_retry": "50",
}
SERVICE_OPTIONS = {
    "archive": {"hoodie.keep.min.commits": "3", "hoodie.keep.max.commits": "4", "hoodie.cleaner.commits.retained": "2"},
    "compaction schedule": {"hoodie.compact.inline.max.delta.commits": "1"},
    "archive merge": {"hoodie.archive.merge.enable": "true", "hoodie.archive.merge.files.batch.size": "2"},
}

_PAUSED_HOLDER = """
import json, sys, time
from pathlib import Path
from lake_orchestration.hudi.services.archive import ArchiveConfig, merge_archive_files, run_archive
from lake_orchestration.hudi.services.compaction import CompactionConfig, schedule_compaction
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.lock import LockConfig, table_lock
path, service, options = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
held, go = Path(sys.argv[4]), Path(sys.argv[5])
table = HudiTable(path)
with table_lock(table, operation="paused holder", config=LockConfig.from_options(options)):
    held.write_text("1")
    while not go.exists():
        time.sleep(0.01)
    if service == "archive":
        r = run_archive(table, ArchiveConfig.from_options(options))
        print("archived", [i.file_name for i in r.archived_instants])
    elif service == "archive merge":
        print("merge", merge_archive_files(table, ArchiveConfig.from_options(options)))
    else:
        r = schedule_compaction(table, config=CompactionConfig.from_options(options))
        print("scheduled", r.instant)
"""


def _state(path: Path) -> tuple[set[str], set[str]]:
    hoodie = path / ".hoodie"
    timeline = {p.name for p in hoodie.iterdir() if p.is_file() and p.name[:1].isdigit()}
    archived = hoodie / "archived"
    return timeline, ({p.name for p in archived.iterdir()} if archived.exists() else set())


def _live_merge_plan(path: Path) -> None:
    """The new holder's merge, between writing its plan and its merged file (the plan is live, not crashed)."""
    archived = sorted(p for p in (path / ".hoodie" / "archived").iterdir() if p.name.startswith(".commits_"))
    assert len(archived) == 2
    plan = MergeArchiveFilePlan(
        candidate=tuple(f"file:{p}" for p in reversed(archived)), merged_archive_file_name=".commits_.archive.3_1-0-1"
    )
    (path / ".hoodie" / "archived" / MERGE_ARCHIVE_PLAN_NAME).write_bytes(plan.to_bytes())


@pytest.mark.parametrize("service", ["archive", "compaction schedule", "archive merge"])
def test_holder_paused_past_lock_expiry_stops_before_changing_the_table(tmp_path: Path, service: str) -> None:
    path = _table(tmp_path, commits=10 if service == "archive merge" else 8)
    if service == "archive merge":  # two small archive files
        for keep in (6, 4):
            keep_opts = {"hoodie.keep.min.commits": str(keep), "hoodie.keep.max.commits": str(keep + 1)}
            assert run_archive(
                HudiTable(str(path)), ArchiveConfig.from_options({**keep_opts, "hoodie.cleaner.commits.retained": "2"})
            ).archive_file
    options = {**SERVICE_OPTIONS[service], **HOLDER_LOCK}
    held, go = tmp_path / "held", tmp_path / "go"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(_PAUSED_HOLDER),
            str(path),
            service,
            json.dumps(options),
            str(held),
            str(go),
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for(lambda: held.exists() or proc.poll() is not None, "the holder to take the lock")
        assert proc.poll() is None, proc.communicate()
        os.kill(proc.pid, signal.SIGSTOP)
        taker = LockConfig(wait_time_ms=60_000, retry_wait_ms=50)
        # waits until the paused holder's lock is stale (600 ms without heartbeat), then takes it over
        with table_lock(HudiTable(str(path)), operation="taker", config=taker) as info:
            lock = json.loads((path / ".hoodie" / "lock").read_text())
            assert lock["lockToken"] == info.token and lock["lockOperation"] == "taker"
            if service == "archive merge":
                _live_merge_plan(path)
            before = _state(path)
            os.kill(proc.pid, signal.SIGCONT)
            go.write_text("1")
            out, err = proc.communicate(timeout=120)
            # while this process holds the lock, the resumed holder changed nothing
            assert _state(path) == before
            assert json.loads((path / ".hoodie" / "lock").read_text())["lockToken"] == info.token
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            proc.kill()
            proc.communicate()
    assert proc.returncode != 0, out
    assert "TableLockLostError" in err and "paused holder" in err and "was lost" in err, err[-3000:]
    # the service still works once run again under a lock of its own
    if service == "archive":
        assert run_archive(HudiTable(str(path)), ArchiveConfig.from_options(options)).archived_instants
    elif service == "archive merge":  # the plan the taker left is resolved, then the files merged
        merged = merge_archive_files(HudiTable(str(path)), ArchiveConfig.from_options(options))
        assert merged.recovered == "reverted" and merged.merged_file, merged
    else:
        from lake_orchestration.hudi.services.compaction import CompactionConfig, schedule_compaction

        config = CompactionConfig.from_options(options)
        assert schedule_compaction(HudiTable(str(path)), config=config).instant is not None
