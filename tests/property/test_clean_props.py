"""Property: for random write histories, no clean deletes a file a retained instant or a savepoint reads.

"Reads" is judged by the independent reader: hudi-rs reads the table as of every retained instant (completed commits
at or after the earliest commit to retain), as of every savepoint, and the latest snapshot — before and after the
clean — and the rows must be identical. A pending compaction must still execute after the clean.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pendulum
import pyarrow as pa
from hudi import HudiReadOptions, HudiTableBuilder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lake_orchestration.datagen import generate_trips, generate_updates, pick_deletes
from lake_orchestration.hudi.model.instant import Action
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.clean import CleanConfig, CleaningPolicy, plan_clean, run_clean
from lake_orchestration.hudi.services.compaction import CompactionConfig, run_compaction, schedule_compaction
from lake_orchestration.hudi.services.savepoint import create_savepoint
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.write import write_table
from tests.oracle import assert_same_rows
from tests.trips import trips_options

OPS = st.sampled_from(["upsert", "upsert", "upsert", "delete", "compact", "savepoint", "clean"])


def _read(path: Path, as_of: str | None = None) -> pa.Table | None:
    table = HudiTableBuilder.from_base_uri(str(path)).build()
    batches = table.read(HudiReadOptions().with_as_of_timestamp(as_of)) if as_of else table.read()
    return pa.Table.from_batches(batches) if batches else None


def _same(a: pa.Table | None, b: pa.Table | None, what: str) -> None:
    if a is None or a.num_rows == 0:
        assert b is None or b.num_rows == 0, what
    else:
        assert b is not None, what
        assert_same_rows(b, a)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    table_type=st.sampled_from([TableType.MERGE_ON_READ, TableType.COPY_ON_WRITE]),
    ops=st.lists(OPS, min_size=5, max_size=10),
    pending_compaction=st.booleans(),
    policy=st.sampled_from(list(CleaningPolicy)),
    retained=st.integers(min_value=1, max_value=3),
    seed=st.integers(min_value=0, max_value=10_000),
)
def test_clean_never_deletes_what_a_retained_instant_or_savepoint_reads(
    table_type: TableType, ops: list[str], pending_compaction: bool, policy: CleaningPolicy, retained: int, seed: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t"
        opts = trips_options(
            table_type=table_type, hive_style_partitioning=True, max_rows_per_file=60, small_file_limit=0
        )
        base = generate_trips(150, partitions=3, seed=seed)
        write_table(str(path), base, operation="bulk_insert", options=opts)
        clean_opts = {
            "hoodie.cleaner.policy": policy.value,
            "hoodie.cleaner.commits.retained": str(retained),
            "hoodie.cleaner.fileversions.retained": str(retained),
            "hoodie.cleaner.hours.retained": "1",
        }
        for n, op in enumerate(ops):
            t = HudiTable(str(path))
            if op == "upsert":
                write_table(
                    str(path),
                    generate_updates(base, fraction=0.2, seed=seed + n, ts_offset=(n + 1) * 10**6),
                    operation="upsert",
                    options=opts,
                )
            elif op == "delete":
                write_table(
                    str(path), pick_deletes(base, fraction=0.05, seed=seed + n), operation="delete", options=opts
                )
            elif op == "compact" and t.config.is_mor:
                run_compaction(t, schedule=True, config=CompactionConfig(max_delta_commits=1))
            elif op == "savepoint":
                last = t.timeline.latest_completed_commit_time()
                if last and not t.timeline.completed().with_actions(Action.SAVEPOINT).get(str(last)):
                    create_savepoint(t, str(last))
            elif op == "clean":
                run_clean(t, CleanConfig.from_options(clean_opts), now=_now_for(t, retained))
        t = HudiTable(str(path))
        if pending_compaction and t.config.is_mor:
            write_table(
                str(path),
                generate_updates(base, fraction=0.1, seed=seed + 99, ts_offset=10**9),
                operation="upsert",
                options=opts,
            )
            schedule_compaction(HudiTable(str(path)), force=True)
        t = HudiTable(str(path))
        now = _now_for(t, retained)
        planning = plan_clean(t, CleanConfig.from_options(clean_opts), now=now)
        ectr = planning.earliest_commit_to_retain
        must_read = [str(i.time) for i in t.timeline.completed_commits() if ectr is not None and i.time >= ectr.time]
        must_read += list(planning.savepoints)
        before = {ts: _read(path, ts) for ts in must_read}
        latest = _read(path)

        run_clean(HudiTable(str(path)), CleanConfig.from_options(clean_opts), now=now)

        for ts, rows in before.items():
            _same(rows, _read(path, ts), f"as of {ts} ({policy.value}, retained {retained}, ops {ops})")
        _same(latest, _read(path), f"latest snapshot ({policy.value}, ops {ops})")
        if HudiTable(str(path)).timeline.pending_compactions():
            run_compaction(HudiTable(str(path)))
            after = _read(path)
            assert after is not None and latest is not None
            assert_same_rows(after, latest, ignore=("_hoodie_file_name",))


def _now_for(t: HudiTable, retained: int) -> pendulum.DateTime:
    """A clock at which KEEP_LATEST_BY_HOURS (1 h) retains exactly the last ``retained`` completed commits."""
    done = t.timeline.completed_commits().instants
    pick = done[max(len(done) - retained, 0)].time
    return pendulum.from_format(str(pick), "YYYYMMDDHHmmssSSS", tz=pendulum.local_timezone()).add(hours=1)
