"""Process bodies for the S3 race tests (spawned processes import this small module, not the test file)."""

from __future__ import annotations

import os
from typing import Any


def race_create(uri: str, options: dict[str, str], rounds: int, ident: int, barrier: Any, results: Any) -> None:
    """Each round: wait for every racer, then create the same instant file with this racer's id as content."""
    from lake_orchestration.errors import FileAlreadyExistsError
    from lake_orchestration.io.storage import Storage

    st = Storage(uri, options=options)
    # connection set-up (and the store's conditional-write probe) before the races, so the racers start together
    st.create_if_absent(st.join("warm-up", f"racer-{ident}"), b"")
    for r in range(rounds):
        path = st.join(".hoodie", f"20260101000000{r:03d}.deltacommit.requested")
        barrier.wait(timeout=300)
        try:
            st.create_if_absent(path, f"racer-{ident}".encode())
            results.put((r, ident, "won"))
        except FileAlreadyExistsError:
            results.put((r, ident, "exists"))
        except Exception as err:  # report, never hang the parent
            results.put((r, ident, f"error {type(err).__name__}: {err}"))


def race_lock(uri: str, options: dict[str, str], rounds: int, ident: int, barrier: Any, results: Any) -> None:
    """Each round: wait for every racer, try the table lock once (no waiting), hold it until every racer tried."""
    from lake_orchestration.errors import TableLockedError
    from lake_orchestration.hudi.table import HudiTable
    from lake_orchestration.hudi.table.lock import LockConfig, table_lock

    table = HudiTable(uri, storage_options=options)
    cfg = LockConfig(wait_time_ms=0, heartbeat_interval_ms=60_000)
    table.storage.exists(table.storage.join(".hoodie", "lock"))  # connection set-up before the races
    for r in range(rounds):
        barrier.wait(timeout=300)
        try:
            with table_lock(table, operation=f"race {r}", config=cfg):
                results.put((r, ident, "won"))
                barrier.wait(timeout=300)  # every other racer has tried while we hold it
        except TableLockedError:
            results.put((r, ident, "locked"))
            barrier.wait(timeout=300)
        except Exception as err:
            results.put((r, ident, f"error {type(err).__name__}: {err}"))
            barrier.abort()
            return
        barrier.wait(timeout=300)  # released before the next round starts


def hold_lock(uri: str, options: dict[str, str], held: Any, release: Any, results: Any) -> None:
    """Take the table lock, signal ``held``, keep it until ``release`` is set."""
    from lake_orchestration.hudi.table import HudiTable
    from lake_orchestration.hudi.table.lock import LockConfig, table_lock

    table = HudiTable(uri, storage_options=options)
    try:
        with table_lock(table, operation="holder", config=LockConfig(wait_time_ms=60_000)):
            results.put(("held", os.getpid()))
            held.set()
            release.wait(300)
        results.put(("released", os.getpid()))
    except Exception as err:
        results.put(("error", f"{type(err).__name__}: {err}"))
        held.set()
