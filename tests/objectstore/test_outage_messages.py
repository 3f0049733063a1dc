"""An S3 outage while a command holds the table lock: the command fails with one ``Error:`` line naming what it
could not do — no chained Python tracebacks (those are for ``--verbose``), even from the lock's release or a
background thread that also failed."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.io.storage import Storage
from tests.conftest import REPO_ROOT
from tests.objectstore.conftest import S3Bucket
from tests.objectstore.fault_proxy import Fault, FaultProxy
from tests.trips import trips_options


def _outage_once_locked(s3: S3Bucket, uri: str, proxy: FaultProxy, stop: threading.Event) -> None:
    """Every request fails with 503 from the moment the table lock ``.hoodie/lock`` exists (polled on the store
    itself, behind the proxy's back)."""
    storage = Storage(uri, options=s3.storage_options)
    lock = storage.join(".hoodie", "lock")
    while not stop.is_set():
        if storage.exists(lock):
            time.sleep(0.6)  # past the lock's settle-and-verify: the command holds it now
            proxy.add(Fault("*", r".*", "error", status=503, times=10**6))
            return
        time.sleep(0.002)


COMMIT_PUT = r"/\.hoodie/\d{17}\.commit$"
"""The compaction's completed instant."""


@pytest.mark.parametrize(
    ("verbose", "start"),
    [(False, "after_lock"), (True, "after_lock"), (False, "at_commit")],
    ids=["plain", "verbose", "plain-at-commit"],
)
def test_outage_while_locked_prints_one_error_line(s3: S3Bucket, proxy: FaultProxy, verbose: bool, start: str) -> None:
    """``after_lock``: every request fails from just after the lock is taken; ``at_commit``: from the compaction's
    completed-instant PUT on (a conditional create through obstore, then the lock release), under the lock."""
    from lake_orchestration.hudi.write import write_table

    uri = s3.uri("trips")
    opts = trips_options()
    base = generate_trips(200, partitions=2, seed=3)
    write_table(uri, base, operation="bulk_insert", options=opts, storage_options=s3.storage_options)
    for i in range(3):
        upd = generate_updates(base, fraction=0.2, seed=i, ts_offset=(i + 1) * 10**6)
        write_table(uri, upd, operation="upsert", options=opts, storage_options=s3.storage_options)

    env = {**os.environ, **s3.env, "AWS_ENDPOINT_URL": proxy.endpoint, "PYTHONPATH": str(REPO_ROOT)}
    argv = [sys.executable, "-m", "lake_orchestration.cli.app", *(["--verbose"] if verbose else [])]
    argv += ["compaction", "run", uri, "--schedule", "--engine", "local"]
    argv += ["--option", "hoodie.compact.inline.max.delta.commits=1"]
    stop = threading.Event()
    watcher = threading.Thread(target=_outage_once_locked, args=(s3, uri, proxy, stop), daemon=True)
    if start == "after_lock":
        watcher.start()
    else:
        first = Fault("PUT", COMMIT_PUT, "error", status=503)
        proxy.add(first)
        proxy.add(Fault("*", r".*", "error", status=503, times=10**6, after=first))
    try:
        proc = subprocess.run(argv, env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    finally:
        stop.set()
        if watcher.is_alive():
            watcher.join()
    assert proxy.hits, f"the outage never started: {proc.stderr[-2000:]}"
    assert proc.returncode == 1, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, proc.stderr[-3000:]
    assert "s3://" in errors[0] or "trips" in errors[0], f"the error names no path: {errors[0]}"
    if verbose:
        assert "Traceback (most recent call last)" in proc.stderr
    else:
        assert "Traceback" not in proc.stderr, f"a traceback without --verbose:\n{proc.stderr[-4000:]}"
        assert "During handling of the above exception" not in proc.stderr
