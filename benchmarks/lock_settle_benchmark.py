"""The table lock's settle-and-reread (RACE_SETTLE_MS, against a Java writer's check-then-create) on small writes.

Writes the same 11-commit trips table (a 200-row bulk insert, then 10 upserts of 30%) twice in one run: with
``hoodie.write.concurrency.mode=SINGLE_WRITER`` (the default: no Java writer shares the lock file, no settle) and
with ``OPTIMISTIC_CONCURRENCY_CONTROL`` (a Java writer may share it: every local lock acquire waits 200 ms and reads
the file back). Prints both times and their ratio.

    python benchmarks/lock_settle_benchmark.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lake_orchestration.hudi.table.lock import LockConfig
from tests.trips import TRIPS_OPTIONS, write_trips_history


def timed(mode: str) -> float:
    options = replace(TRIPS_OPTIONS, lock=LockConfig(concurrency_mode=mode))
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        write_trips_history(Path(tmp) / "t", options, rows=200, upserts=10, fraction=0.3)
        return time.perf_counter() - t0


def main() -> None:
    timed("SINGLE_WRITER")  # warm-up: imports, first parquet/Avro encode
    single = timed("SINGLE_WRITER")
    shared = timed("OPTIMISTIC_CONCURRENCY_CONTROL")
    print(f"11 writes, SINGLE_WRITER (no settle):                      {single:6.2f} s")
    print(f"11 writes, OPTIMISTIC_CONCURRENCY_CONTROL (200 ms settle):  {shared:6.2f} s")
    print(f"ratio settle / no settle: {shared / single:.2f}")


if __name__ == "__main__":
    main()
