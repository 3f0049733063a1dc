"""Our services run again and again beside a Java writer: shared by the file-system (``test_beside_java_writer.py``) and
the S3 + DynamoDB lock (``test_dynamodb_lock_java.py``) versions of that story. What differs between them (where the
table is, how its files are listed, the lock) is given; what each round did is recorded in :attr:`BesideServices.log`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterable, Mapping

from lake_orchestration.errors import PlanError
from lake_orchestration.hudi.model.instant import Action, State
from lake_orchestration.hudi.services.archive import run_archive
from lake_orchestration.hudi.services.archive.config import ArchiveConfig
from lake_orchestration.hudi.services.clean import run_clean
from lake_orchestration.hudi.services.clean.config import CleanConfig
from lake_orchestration.hudi.services.compaction import CompactionConfig, run_compaction, schedule_compaction
from lake_orchestration.hudi.table.hudi_table import HudiTable
from tests.conftest import REPO_ROOT

_KILLED_COMPACTION = """
import json, os, signal, sys
import lake_orchestration.hudi.services.compaction.committer as committer
from lake_orchestration.hudi.services.compaction import CompactionConfig, run_compaction
from lake_orchestration.hudi.table.hudi_table import HudiTable

uri, instant, options = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])

def killed(*args, **kwargs):  # every new base file is written, the compaction is inflight: crash before its commit
    os.kill(os.getpid(), signal.SIGKILL)

committer.commit_compaction = killed
run_compaction(HudiTable(uri), instant_time=instant, config=CompactionConfig.from_options(options))
"""


def wait_for(cond: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
    """Poll ``cond`` every 50 ms; an AssertionError naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.05)


class BesideServices:
    """Our compaction (schedule and run), clean and archive on the table at ``uri`` while a Java writer writes.

    ``lock`` is our lock's settings (the Java writer's lock, as docs/how-to/concurrency.md asks), ``extra`` more
    options of the compaction; ``files()`` lists the table's file paths (or keys), to see a killed compaction's base
    files. :attr:`opts` is the options our services run with (and a killed compaction ran with)."""

    def __init__(
        self,
        uri: str,
        files: Callable[[], Iterable[str]],
        lock: Mapping[str, str],
        extra: Mapping[str, str] | None = None,
    ) -> None:
        self.uri = uri
        self.files = files
        self.opts = {
            **lock,
            **(extra or {}),
            "hoodie.compact.inline.max.delta.commits": "1",
            "hoodie.client.heartbeat.interval_in_ms": "500",
        }
        self.compaction = CompactionConfig.from_options(self.opts)
        self.clean = CleanConfig.from_options({**lock, "hoodie.cleaner.commits.retained": "2"})
        self.archive = ArchiveConfig.from_options(
            {
                **lock,
                "hoodie.keep.min.commits": "3",
                "hoodie.keep.max.commits": "4",
                "hoodie.cleaner.commits.retained": "2",
            }
        )
        self.log: list[str] = []
        self._t0 = time.monotonic()
        self.compacted: list[str] = []
        self.killed_compaction: str | None = None
        self.recovered: list[str] = []
        """Compactions rerun after a killed attempt (rolled back first)."""

    def table(self) -> HudiTable:
        return HudiTable(self.uri)  # on S3: endpoint and credentials from the AWS environment

    def note(self, what: str) -> None:
        self.log.append(f"{time.monotonic() - self._t0:.1f}s {what}")

    def schedule(self) -> str | None:
        try:
            result = schedule_compaction(self.table(), config=self.compaction)
        except PlanError as err:  # a Java write inflight before the new instant: Java's single-writer check too
            self.note(f"schedule refused: {err}"[:200])
            return None
        self.note(f"schedule: {result.instant} {result.reason}")
        return None if result.instant is None else str(result.instant)

    def round(self, *, kill_compaction: bool) -> None:
        """Schedule a compaction (the first plan killed before its commit when ``kill_compaction``), run up to five
        plans, clean, archive."""
        instant = self.schedule()
        if instant is not None and kill_compaction and self.killed_compaction is None:
            self.kill_compaction(instant)
        for r in run_compaction(self.table(), config=self.compaction, max_plans=5):
            self.compacted.append(str(r.instant))
            if r.rolled_back_attempt is not None:
                self.recovered.append(str(r.instant))
            self.note(f"compacted {r.instant} (rolled back attempt {r.rolled_back_attempt})")
        cleaned = run_clean(self.table(), self.clean)
        self.note(f"clean: {cleaned.instants}")
        archived = run_archive(self.table(), self.archive)
        self.note(f"archive: {len(archived.archived_instants)} instants")

    def kill_compaction(self, instant: str) -> None:
        """Our compaction of ``instant`` in a child process, SIGKILLed after its base files, before its commit; the
        next :meth:`round` reruns it once its heartbeat (500 ms) expired."""
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
        proc = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(_KILLED_COMPACTION), self.uri, instant, json.dumps(self.opts)],
            env=env,
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]
        assert self.table().timeline.get(instant, Action.COMPACTION).state is State.INFLIGHT  # type: ignore[union-attr]
        assert any(f.endswith(f"_{instant}.parquet") for f in self.files()), "the killed compaction wrote no file"
        self.killed_compaction = instant
        self.note(f"killed our compaction {instant} before its commit")
        time.sleep(1.2)  # its heartbeat (500 ms x 2 misses) expires: the rerun may roll the attempt back
