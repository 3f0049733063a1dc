"""The log side beyond hoodie.memory.compaction.max.size really goes through the spill files (and they are removed),
and the compaction keeps what hudi-rs read before."""

from __future__ import annotations

from pathlib import Path

import pytest

from lake_orchestration.hudi.services.compaction import CompactionConfig, executor, run_compaction, schedule_compaction
from lake_orchestration.hudi.table import HudiTable
from tests.hudi.services.test_compaction import _assert_compacted
from tests.oracle import hudi_rs_snapshot
from tests.tables import generated_table


def test_spilled_log_side_is_gathered_from_spill_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = generated_table(tmp_path)
    before = hudi_rs_snapshot(path)
    sched = schedule_compaction(HudiTable(str(path)), force=True)
    seen = {"spilled": 0, "gathered": 0, "dirs": []}
    put, gather, init = executor._LogSpill.put, executor._LogSpill.gather, executor._LogSpill.__init__

    def counting_init(self):  # type: ignore[no-untyped-def]
        init(self)
        seen["dirs"].append(self.dir)

    def counting_put(self, table):  # type: ignore[no-untyped-def]
        out = put(self, table)
        seen["spilled"] += out.num_rows
        return out

    def counting_gather(self, data, rows):  # type: ignore[no-untyped-def]
        seen["gathered"] += len(rows)
        return gather(self, data, rows)

    monkeypatch.setattr(executor._LogSpill, "__init__", counting_init)
    monkeypatch.setattr(executor._LogSpill, "put", counting_put)
    monkeypatch.setattr(executor._LogSpill, "gather", counting_gather)
    (r,) = run_compaction(HudiTable(str(path)), config=CompactionConfig(memory_max_bytes=2048))
    assert seen["spilled"] > 0 and seen["gathered"] > 0, seen
    assert seen["spilled"] <= sum(s.totalLogRecords for s in r.stats)  # data records spill, deletes stay in memory
    assert all(not Path(d).exists() for d in seen["dirs"]), "spill directories left behind"
    _assert_compacted(path, str(sched.instant), before)
