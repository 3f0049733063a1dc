"""An attempt's own heartbeat check (``Heartbeat.is_ours``, run before each compaction task and at the commit of a
compaction, log compaction or clean) never sees its heartbeat half-rewritten.

Before, every beat rewrote the local heartbeat file (truncate, then write the token), so a check that ran in
between read an empty file and judged the live attempt taken over by another process: the compaction stopped
("taken over by another process") or refused to commit. Real files and threads; no mocks.
"""

from __future__ import annotations

import time
from pathlib import Path

from lake_orchestration.hudi.table.heartbeat import Heartbeat, attempt_liveness, heartbeat_path
from lake_orchestration.io.storage import Storage

INSTANT = "20240101000000000"
TOKEN = b"0123456789abcdef0123456789abcdef\n"


def test_is_ours_never_fails_while_the_heartbeat_beats(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    hb = Heartbeat(storage, INSTANT, interval_ms=1, content=TOKEN).start()
    path = Path(heartbeat_path(storage, INSTANT))
    try:
        first = path.stat().st_mtime_ns
        checks = mismatches = 0
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline or path.stat().st_mtime_ns == first:
            checks += 1
            if not hb.is_ours():
                mismatches += 1
            assert time.monotonic() < deadline + 30, "the heartbeat never beat"
        assert checks > 1000
        assert mismatches == 0, f"{mismatches} of {checks} checks judged the live attempt taken over"
        assert not hb.lost
        # it still beats: the file's mtime moves on and liveness sees it alive with this attempt's token
        live = attempt_liveness(storage, INSTANT, interval_ms=1000, tolerable_misses=2)
        assert live.alive and live.owner == TOKEN
    finally:
        hb.stop(delete=True)
    assert not path.exists()


def test_heartbeat_deleted_by_another_process_is_lost_and_not_recreated(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    hb = Heartbeat(storage, INSTANT, interval_ms=5, content=TOKEN).start()
    path = Path(heartbeat_path(storage, INSTANT))
    path.unlink()  # a rollback by another process
    deadline = time.monotonic() + 30
    while not hb.lost:
        assert time.monotonic() < deadline, "the heartbeat never noticed it was deleted"
        time.sleep(0.01)
    time.sleep(0.05)
    assert not path.exists()
    hb.stop(delete=True)
    assert not path.exists()
