"""Bootstrap of a parquet dataset (METADATA_ONLY, FULL_RECORD, regex-mixed): the snapshot read equals the source rows
with the expected meta columns, FULL_RECORD partitions read equal in hudi-rs, upsert and compaction afterwards give
what an independent pandas model gives, the source files are never modified, a crash is rolled back."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from lake_orchestration.cli.app import cli
from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.errors import CorruptFileError, PlanError
from lake_orchestration.hudi.hfile.bootstrap_index import (
    BOOTSTRAP_INDEX_CLASS,
    FILE_ID_INDEX_PATH,
    PARTITION_INDEX_PATH,
    BootstrapIndexReader,
)
from lake_orchestration.hudi.model.commit_metadata import CommitMetadata
from lake_orchestration.hudi.model.instant import Action, Instant, State
from lake_orchestration.hudi.model.schema import META_FIELDS
from lake_orchestration.hudi.services.archive import run_archive
from lake_orchestration.hudi.services.bootstrap import (
    BootstrapConfig,
    BootstrapMode,
    ModeSelector,
    bootstrap,
    commit_metadata_only,
    execute_metadata_only,
    pending_bootstrap_instants,
    plan_bootstrap,
    rollback_bootstrap,
)
from lake_orchestration.hudi.services.bootstrap import committer as bootstrap_committer
from lake_orchestration.hudi.services.bootstrap import executor as bootstrap_executor
from lake_orchestration.hudi.services.bootstrap.service import bootstrap_table_properties
from lake_orchestration.hudi.services.compaction import execute_compaction, schedule_compaction
from lake_orchestration.hudi.services.rollback import stale_writes
from lake_orchestration.hudi.table import HudiTable, read_snapshot_table
from lake_orchestration.hudi.table.base_file_reader import BootstrapBaseFile
from lake_orchestration.hudi.table.health import table_health
from lake_orchestration.hudi.write import WriteOptions, write_table
from tests.oracle import assert_same_rows, hudi_rs_snapshot

DATES = ("2024-01-01", "2024-01-02", "2024-01-03")
FILES_PER_PARTITION = 3
DATA_COLUMNS = ["id", "ts", "qty", "price", "flag", "note", "dt"]


def _make_source(root: Path) -> pd.DataFrame:
    """A hive-style partitioned parquet dataset, several files per partition; returns all its rows."""
    frames = []
    n = 0
    for d in DATES:
        for f in range(FILES_PER_PARTITION):
            rows = 7 + 3 * f
            t = pa.table(
                {
                    "id": pa.array([f"key-{n + i:05d}" for i in range(rows)]),
                    "ts": pa.array([1000 + i for i in range(rows)], pa.int64()),
                    "qty": pa.array([i * f for i in range(rows)], pa.int32()),
                    "price": pa.array([i / 4 for i in range(rows)], pa.float64()),
                    "flag": pa.array([i % 2 == 0 for i in range(rows)]),
                    "note": pa.array([None if i % 3 == 0 else f"n{i}" for i in range(rows)], pa.string()),
                    "dt": pa.array([d] * rows),
                }
            )
            n += rows
            folder = root / f"dt={d}"
            folder.mkdir(parents=True, exist_ok=True)
            pq.write_table(t, folder / f"part-{f:05d}.parquet", row_group_size=4)
            frames.append(t.to_pandas())
    return pd.concat(frames, ignore_index=True)


def _hashes(root: Path) -> dict[str, tuple[str, int]]:
    """Every file under ``root``: content hash and modification time (a bootstrap only reads its source)."""
    return {
        str(p.relative_to(root)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _config(source: Path, table_type: str = "MERGE_ON_READ", **extra: str) -> BootstrapConfig:
    return BootstrapConfig.from_options(
        {
            HoodieKey.TABLE_NAME.key: "src",
            HoodieKey.RECORDKEY_FIELD.key: "id",
            HoodieKey.WRITE_PRECOMBINE_FIELD.key: "ts",
            HoodieKey.PARTITIONPATH_FIELD.key: "dt",
            HoodieKey.HIVE_STYLE_PARTITIONING.key: "true",
            HoodieKey.WRITE_TABLE_TYPE.key: table_type,
            HoodieKey.BOOTSTRAP_BASE_PATH.key: str(source),
            **extra,
        }
    )


def _full_record_for(regex: str) -> dict[str, str]:
    """Bootstrap options: FULL_RECORD for the partitions matching ``regex``, METADATA_ONLY for the others."""
    return {
        HoodieKey.BOOTSTRAP_MODE_SELECTOR.key: ModeSelector.REGEX.value,
        HoodieKey.BOOTSTRAP_MODE_SELECTOR_REGEX.key: regex,
        HoodieKey.BOOTSTRAP_MODE_SELECTOR_REGEX_MODE.key: "FULL_RECORD",
    }


@pytest.fixture
def source(tmp_path: Path) -> tuple[Path, pd.DataFrame]:
    root = tmp_path / "source"
    return root, _make_source(root)


def _check_read(table_path: Path, expected: pd.DataFrame, modes: dict[str, BootstrapMode]) -> pd.DataFrame:
    """Our snapshot equals the source rows; meta columns as each mode writes them."""
    got = read_snapshot_table(HudiTable(str(table_path))).to_pandas()
    assert list(got.columns[:5]) == [
        "_hoodie_commit_time",
        "_hoodie_commit_seqno",
        "_hoodie_record_key",
        "_hoodie_partition_path",
        "_hoodie_file_name",
    ]
    got = got.sort_values("id").reset_index(drop=True)
    want = expected.sort_values("id").reset_index(drop=True)
    pd.testing.assert_frame_equal(got[DATA_COLUMNS], want[DATA_COLUMNS], check_dtype=False)
    assert (got["_hoodie_record_key"] == got["id"]).all()
    assert (got["_hoodie_partition_path"] == "dt=" + got["dt"]).all()
    for dt, mode in modes.items():
        part = got[got["dt"] == dt]
        instant = "00000000000001" if mode is BootstrapMode.METADATA_ONLY else "00000000000002"
        assert (part["_hoodie_commit_time"] == instant).all(), (dt, mode)
        assert part["_hoodie_file_name"].str.endswith(f"_{instant}.parquet").all()
        assert part["_hoodie_commit_seqno"].str.match(rf"^{instant}_\d+_\d+$").all()
    return got


def test_bootstrap_metadata_only_reads_source_rows_with_meta_columns(
    source: tuple[Path, pd.DataFrame], tmp_path: Path
) -> None:
    root, rows = source
    before = _hashes(root)
    table_path = tmp_path / "table"
    result = bootstrap(str(table_path), _config(root))

    assert result.metadata_only_instant == "00000000000001" and result.full_record_instant is None
    assert result.skeleton_files == len(DATES) * FILES_PER_PARTITION
    got = _check_read(table_path, rows, dict.fromkeys(DATES, BootstrapMode.METADATA_ONLY))
    # skeleton rows are in source order: the seqno's record index is the row's position in its source file
    for _, grp in got.groupby(["dt", "_hoodie_file_name"]):
        idx = grp["_hoodie_commit_seqno"].str.rsplit("_", n=1).str[1].astype(int)
        assert sorted(idx) == list(range(len(grp)))
        assert list(
            grp.sort_values("_hoodie_commit_seqno", key=lambda s: s.str.rsplit("_", n=1).str[1].astype(int))["id"]
        ) == sorted(grp["id"])

    table = HudiTable(str(table_path))
    assert table.config.raw[HoodieKey.BOOTSTRAP_BASE_PATH.key] == str(root)
    assert table.config.raw[HoodieKey.BOOTSTRAP_INDEX_CLASS.key] == BOOTSTRAP_INDEX_CLASS
    completed = Instant("00000000000001", Action.DELTA_COMMIT, State.COMPLETED)
    md = CommitMetadata.from_bytes(table.read_instant(completed), path="commit")
    assert md.operation_type == "BOOTSTRAP"
    assert json.loads(md.extra_metadata["schema"])["name"] == "src_record"
    assert sum(len(v) for v in md.partition_to_write_stats.values()) == result.skeleton_files
    # skeleton files hold the five meta columns only
    skeleton = next(table_path.glob("dt=2024-01-01/*_00000000000001.parquet"))
    assert pq.read_schema(skeleton).names == list(got.columns[:5])

    index = BootstrapIndexReader(
        (table_path / PARTITION_INDEX_PATH).read_bytes(), (table_path / FILE_ID_INDEX_PATH).read_bytes()
    )
    assert index.indexed_partitions() == [f"dt={d}" for d in DATES]
    sources = {m.bootstrap_file_status.uri for p in DATES for m in index.mappings_for_partition(f"dt={p}")}
    assert sources == {f"file:{p}" for p in map(str, root.rglob("*.parquet"))}
    assert index.index_info.num_keys == len(DATES) and index.file_id_index_info.num_keys == result.skeleton_files
    assert _hashes(root) == before


def test_bootstrap_full_record_reads_equal_in_hudi_rs(source: tuple[Path, pd.DataFrame], tmp_path: Path) -> None:
    root, rows = source
    before = _hashes(root)
    table_path = tmp_path / "table"
    result = bootstrap(
        str(table_path),
        _config(root, "COPY_ON_WRITE", **{HoodieKey.BOOTSTRAP_MODE_SELECTOR.key: "FullRecordBootstrapModeSelector"}),
    )

    assert result.metadata_only_instant is None and result.full_record_instant == "00000000000002"
    assert result.full_record_rows == len(rows)
    _check_read(table_path, rows, dict.fromkeys(DATES, BootstrapMode.FULL_RECORD))
    assert_same_rows(read_snapshot_table(HudiTable(str(table_path))), hudi_rs_snapshot(table_path))
    assert not (table_path / PARTITION_INDEX_PATH).exists()
    assert _hashes(root) == before


def test_bootstrap_regex_mixed_modes_per_partition(source: tuple[Path, pd.DataFrame], tmp_path: Path) -> None:
    root, rows = source
    before = _hashes(root)
    table_path = tmp_path / "table"
    config = _config(root, "COPY_ON_WRITE", **_full_record_for("dt=2024-01-0[13]"))
    result = bootstrap(str(table_path), config)

    modes = {p.partition_path: p.mode for p in result.plan.partitions}
    assert modes == {
        "dt=2024-01-01": BootstrapMode.FULL_RECORD,
        "dt=2024-01-02": BootstrapMode.METADATA_ONLY,
        "dt=2024-01-03": BootstrapMode.FULL_RECORD,
    }
    assert (result.metadata_only_instant, result.full_record_instant) == ("00000000000001", "00000000000002")
    _check_read(table_path, rows, {p.removeprefix("dt="): m for p, m in modes.items()})
    # hudi-rs reads the FULL_RECORD partitions (it does not stitch skeletons: "bootstrap merge not supported")
    ours = read_snapshot_table(HudiTable(str(table_path)))
    theirs = hudi_rs_snapshot(table_path)
    full = pa.array(["dt=2024-01-01", "dt=2024-01-03"])
    assert theirs is not None
    assert_same_rows(
        ours.filter(pa.compute.is_in(ours["_hoodie_partition_path"], full)),
        theirs.filter(pa.compute.is_in(theirs["_hoodie_partition_path"], full)),
    )
    assert _hashes(root) == before


def _model_upsert(rows: pd.DataFrame, updates: pd.DataFrame) -> pd.DataFrame:
    """Independent model of an upsert (OverwriteWithLatestAvroPayload): the update replaces the row of its key."""
    kept = rows[~rows["id"].isin(updates["id"])]
    return pd.concat([kept, updates], ignore_index=True).sort_values("id").reset_index(drop=True)


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_bootstrap_metadata_only_then_upsert_and_compaction_match_model(
    source: tuple[Path, pd.DataFrame], tmp_path: Path, table_type: str
) -> None:
    root, rows = source
    before = _hashes(root)
    table_path = tmp_path / "table"
    bootstrap(str(table_path), _config(root, table_type))
    picked = rows.iloc[[0, 5, 12, 30, 55]].copy()
    picked["ts"] = picked["ts"] + 10_000
    picked["price"] = -1.0
    picked["note"] = "updated"
    new = pd.DataFrame(
        {
            "id": ["key-90000", "key-90001"],
            "ts": [1, 2],
            "qty": [1, 2],
            "price": [0.5, 1.5],
            "flag": [True, False],
            "note": ["new", None],
            "dt": ["2024-01-02", "2024-01-03"],
        }
    )
    updates = pd.concat([picked, new], ignore_index=True)
    upd = pa.Table.from_pandas(updates, schema=pq.read_schema(next(root.rglob("*.parquet"))), preserve_index=False)
    result = write_table(str(table_path), upd, operation="upsert", options=WriteOptions())
    assert (result.inserted, result.updated) == (2, 5)
    expected = _model_upsert(rows, updates)

    def check() -> pd.DataFrame:
        got = read_snapshot_table(HudiTable(str(table_path))).to_pandas().sort_values("id").reset_index(drop=True)
        pd.testing.assert_frame_equal(got[DATA_COLUMNS], expected[DATA_COLUMNS], check_dtype=False)
        touched = got["id"].isin(updates["id"])
        assert (got.loc[touched, "_hoodie_commit_time"] == result.instant).all()
        assert (got.loc[~touched, "_hoodie_commit_time"] == "00000000000001").all()
        return got

    after_upsert = check()
    if table_type == "MERGE_ON_READ":
        table = HudiTable(str(table_path))
        scheduled = schedule_compaction(table, force=True)
        assert scheduled.plan is not None
        assert all(
            op.bootstrap_file_path for op in scheduled.plan.operations if op.base_instant_time == "00000000000001"
        )
        execute_compaction(table, str(scheduled.instant))
        after = check()
        assert_same_rows(pa.Table.from_pandas(after), pa.Table.from_pandas(after_upsert), ignore=("_hoodie_file_name",))
        # the compacted base files are whole records: no bootstrap source attached to them
        compacted = [
            s.base_file
            for s in HudiTable(str(table_path)).fs_view().latest_file_slices()
            if s.base_file is not None and str(s.base_instant) == str(scheduled.instant)
        ]
        assert compacted and all(b.bootstrap_source is None for b in compacted)
        assert pq.read_schema(table_path / compacted[0].relative_path).names[5:] == DATA_COLUMNS
    assert _hashes(root) == before


@pytest.mark.parametrize("crash_in", ["skeletons", "commit"])
def test_bootstrap_crash_then_rollback_leaves_empty_table_and_rebootstraps(
    source: tuple[Path, pd.DataFrame], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, crash_in: str
) -> None:
    root, rows = source
    before = _hashes(root)
    table_path = tmp_path / "table"
    # METADATA_ONLY for the first two days, FULL_RECORD for the last: the bootstrap after the rollback writes both
    mixed = _config(root, **_full_record_for("dt=2024-01-03"))
    if crash_in == "skeletons":  # killed after a few skeleton files
        real = bootstrap_executor.write_skeleton
        calls = []

        def failing(task: bootstrap_executor.SkeletonTask) -> list[bootstrap_executor.SkeletonWrite]:
            calls.append(task)
            if len(calls) > 4:
                raise RuntimeError("killed")
            return real(task)

        monkeypatch.setattr(bootstrap_executor, "write_skeleton", failing)
    else:  # killed after the bootstrap index, before the completed instant

        def failing_metadata(*args: object) -> CommitMetadata:
            raise RuntimeError("killed")

        monkeypatch.setattr(bootstrap_committer, "bootstrap_commit_metadata", failing_metadata)
    with pytest.raises(RuntimeError, match="killed"):
        bootstrap(str(table_path), mixed)
    monkeypatch.undo()
    table = HudiTable(str(table_path))
    assert [str(i.time) for i in pending_bootstrap_instants(table)] == ["00000000000001"]
    assert list(table_path.rglob("*_00000000000001.parquet"))
    assert read_snapshot_table(table).num_rows == 0  # a pending bootstrap is invisible
    with pytest.raises(PlanError, match="failed bootstrap"):
        bootstrap(str(table_path), mixed)

    done = rollback_bootstrap(table)

    assert len(done) == 1 and done[0].action is Action.ROLLBACK
    assert not list(table_path.rglob("*.parquet"))
    assert not (table_path / PARTITION_INDEX_PATH).exists() and not (table_path / FILE_ID_INDEX_PATH).exists()
    assert pending_bootstrap_instants(table) == []
    assert _hashes(root) == before
    bootstrap(str(table_path), mixed)
    modes = dict.fromkeys(DATES, BootstrapMode.METADATA_ONLY) | {"2024-01-03": BootstrapMode.FULL_RECORD}
    _check_read(table_path, rows, modes)


def test_bootstrap_refuses_table_with_commits(source: tuple[Path, pd.DataFrame], tmp_path: Path) -> None:
    root, _ = source
    table_path = tmp_path / "table"
    bootstrap(str(table_path), _config(root))
    with pytest.raises(PlanError, match="already has commits"):
        bootstrap(str(table_path), _config(root))


def test_bootstrap_non_hive_config_on_hive_folders_refused(source: tuple[Path, pd.DataFrame], tmp_path: Path) -> None:
    root, _ = source
    config = _config(root, **{HoodieKey.HIVE_STYLE_PARTITIONING.key: "false"})
    with pytest.raises(PlanError, match=re.escape("hive_style_partitioning=true")):
        bootstrap(str(tmp_path / "table"), config)


def test_bootstrap_cli_dry_run_writes_nothing_and_prints_plan(
    source: tuple[Path, pd.DataFrame], tmp_path: Path
) -> None:
    root, rows = source
    table_path = tmp_path / "table"
    args = [
        "bootstrap",
        str(table_path),
        "--source-path",
        str(root),
        "--table-name",
        "src",
        "--record-key",
        "id",
        "--precombine-field",
        "ts",
        "--partition-field",
        "dt",
        "--option",
        f"{HoodieKey.BOOTSTRAP_MODE_SELECTOR.key}=BootstrapRegexModeSelector",
        "--option",
        f"{HoodieKey.BOOTSTRAP_MODE_SELECTOR_REGEX.key}=dt=2024-01-02",
    ]
    r = CliRunner().invoke(cli, [*args, "--dry-run", "--json"])
    assert r.exit_code == 0, r.output
    plan = json.loads(r.output)
    assert [(p["partition"], p["mode"], p["files"]) for p in plan["partitions"]] == [
        ("dt=2024-01-01", "FULL_RECORD", FILES_PER_PARTITION),
        ("dt=2024-01-02", "METADATA_ONLY", FILES_PER_PARTITION),
        ("dt=2024-01-03", "FULL_RECORD", FILES_PER_PARTITION),
    ]
    assert plan["dry_run"] is True and plan["metadata_only_instant"] is None
    assert not table_path.exists()
    text = CliRunner().invoke(cli, [*args, "--dry-run"])
    assert (
        text.exit_code == 0
        and "Dry run: nothing written." in text.output
        and "dt=2024-01-02  METADATA_ONLY" in text.output
    )
    assert not table_path.exists()

    r = CliRunner().invoke(cli, [*args, "--table-type", "COPY_ON_WRITE"])
    assert r.exit_code == 0, r.output
    assert (
        "Committed 00000000000001 (METADATA_ONLY)" in r.output and "Committed 00000000000002 (FULL_RECORD)" in r.output
    )
    _check_read(
        table_path,
        rows,
        {
            "2024-01-01": BootstrapMode.FULL_RECORD,
            "2024-01-02": BootstrapMode.METADATA_ONLY,
            "2024-01-03": BootstrapMode.FULL_RECORD,
        },
    )


def test_bootstrap_source_changed_after_bootstrap_read_fails_naming_both_files(
    source: tuple[Path, pd.DataFrame], tmp_path: Path
) -> None:
    root, _ = source
    table_path = tmp_path / "table"
    bootstrap(str(table_path), _config(root))
    changed = root / "dt=2024-01-02" / "part-00001.parquet"
    pq.write_table(pq.read_table(changed).slice(0, 3), changed)  # rows removed behind the table's back
    with pytest.raises(CorruptFileError) as err:
        read_snapshot_table(HudiTable(str(table_path)))
    assert str(changed) in str(err.value) and "_00000000000001.parquet" in str(err.value)


def test_bootstrap_non_partitioned_complex_key_builds_keys_as_the_key_generator(tmp_path: Path) -> None:
    root = tmp_path / "flat"
    root.mkdir()
    frames = []
    for f in range(2):
        t = pa.table({"a": [f"a{f}"] * 4, "b": list(range(4)), "v": [1.0, 2.0, 3.0, 4.0]})
        pq.write_table(t, root / f"f{f}.parquet")
        frames.append(t)
    config = BootstrapConfig.from_options(
        {
            HoodieKey.TABLE_NAME.key: "flat",
            HoodieKey.RECORDKEY_FIELD.key: "a,b",
            HoodieKey.WRITE_TABLE_TYPE.key: "COPY_ON_WRITE",
            HoodieKey.BOOTSTRAP_BASE_PATH.key: str(root),
        }
    )
    result = bootstrap(str(tmp_path / "table"), config)

    assert [p.partition_path for p in result.plan.partitions] == [""]
    got = read_snapshot_table(HudiTable(str(tmp_path / "table"))).to_pandas().sort_values(["a", "b"])
    want = pa.concat_tables(frames).to_pandas().sort_values(["a", "b"])
    assert got["_hoodie_record_key"].tolist() == [f"a:{a},b:{b}" for a, b in zip(want["a"], want["b"], strict=True)]
    assert (got["_hoodie_partition_path"] == "").all()
    pd.testing.assert_frame_equal(
        got[["a", "b", "v"]].reset_index(drop=True), want.reset_index(drop=True), check_dtype=False
    )


def test_bootstrap_table_inside_source_refused(source: tuple[Path, pd.DataFrame]) -> None:
    root, _ = source
    with pytest.raises(PlanError, match="inside the source"):
        bootstrap(str(root / "hudi"), _config(root))
    assert not (root / "hudi").exists()


@pytest.mark.parametrize("batch_size", [1, 3, 5, 64])
def test_bootstrap_base_file_stitches_by_position_across_row_group_boundaries(tmp_path: Path, batch_size: int) -> None:
    n = 23
    meta = pa.table({name: pa.array([f"{name}-{i}" for i in range(n)]) for name in META_FIELDS})
    data = pa.table({"id": pa.array([f"{i}" for i in range(n)]), "x": pa.array(range(n), pa.int64())})
    pq.write_table(meta, tmp_path / "skeleton.parquet", row_group_size=4)
    pq.write_table(data, tmp_path / "source.parquet", row_group_size=7)
    stitched = BootstrapBaseFile(
        pq.ParquetFile(tmp_path / "skeleton.parquet"),
        pq.ParquetFile(tmp_path / "source.parquet"),
        skeleton_uri="skeleton",
        source_uri="source",
    )
    batches = list(stitched.iter_batches(batch_size=batch_size))
    table = pa.Table.from_batches(batches)
    assert table.column_names == [*META_FIELDS, "id", "x"] == stitched.schema_arrow.names
    assert table.column("_hoodie_record_key").to_pylist() == [f"_hoodie_record_key-{i}" for i in range(n)]
    assert table.column("x").to_pylist() == list(range(n))
    assert stitched.read(columns=["_hoodie_record_key"]).column_names == ["_hoodie_record_key"]
    assert stitched.read(columns=["x", "_hoodie_commit_time"]).column_names == ["_hoodie_commit_time", "x"]
    assert stitched.metadata.num_rows == n


def test_bootstrap_fresh_table_health_archive_and_stale_check_work(
    source: tuple[Path, pd.DataFrame], tmp_path: Path
) -> None:
    """Services that turn instants into times (health, archive, the stale-write timeout) read 00000000000001 as
    Java does (1 ms after the epoch) instead of failing."""
    root, _ = source
    table_path = tmp_path / "table"
    bootstrap(str(table_path), _config(root))
    table = HudiTable(str(table_path))
    health = table_health(table)
    assert health.to_json_obj()
    assert run_archive(table, dry_run=True).archived_instants == ()
    assert stale_writes(table, timeout_s=1) == []


def test_bootstrap_execute_then_commit_twice_commits_once(source: tuple[Path, pd.DataFrame], tmp_path: Path) -> None:
    """The METADATA_ONLY steps on their own: execute writes skeletons and the inflight instant only; commit writes
    the index and the completed instant; a second commit of the same execution changes nothing."""
    root, rows = source
    table_path = tmp_path / "table"
    config = _config(root)
    plan = plan_bootstrap(str(table_path), config)
    table = HudiTable.create(str(table_path), bootstrap_table_properties(plan, config))
    execution = execute_metadata_only(table, plan, config)

    assert execution.to_json_obj() == {
        "instant": "00000000000001",
        "action": "deltacommit",
        "skeleton_files": 9,
        "rows": len(rows),
    }
    assert table.refresh().timeline.completed_commits().last is None
    assert not (table_path / PARTITION_INDEX_PATH).exists()
    first = commit_metadata_only(table, plan, execution)
    files = sorted(p.name for p in table_path.rglob("*") if p.is_file())
    again = commit_metadata_only(table, plan, execution)

    assert first == again and first.state is State.COMPLETED
    assert sorted(p.name for p in table_path.rglob("*") if p.is_file()) == files
    _check_read(table_path, rows, dict.fromkeys(DATES, BootstrapMode.METADATA_ONLY))


def test_bootstrap_rich_types_stitched_upserted_and_compacted_keep_values(tmp_path: Path) -> None:
    """Timestamps, dates, decimals, lists and structs of the source come through the stitched read, an upsert and a
    compaction of a METADATA_ONLY partition unchanged (and through the FULL_RECORD rewrite of the other)."""
    import datetime
    import decimal

    root = tmp_path / "rich"
    parts = []
    for p in ("a", "b"):
        (root / f"p={p}").mkdir(parents=True)
        t = pa.table(
            {
                "id": [f"{p}{i}" for i in range(5)],
                "ts": pa.array(
                    [datetime.datetime(2024, 1, 1, 0, 0, i, tzinfo=datetime.UTC) for i in range(5)],
                    pa.timestamp("us", tz="UTC"),
                ),
                "day": pa.array([datetime.date(2024, 1, i + 1) for i in range(5)], pa.date32()),
                "amt": pa.array([decimal.Decimal(f"{i}.25") for i in range(5)], pa.decimal128(10, 2)),
                "tags": pa.array([[f"t{i}", "x"] for i in range(5)], pa.list_(pa.string())),
                "loc": pa.array(
                    [{"lat": float(i), "lon": -float(i)} for i in range(5)],
                    pa.struct([("lat", pa.float64()), ("lon", pa.float64())]),
                ),
                "p": [p] * 5,
            }
        )
        pq.write_table(t, root / f"p={p}" / "f.parquet")
        parts.append(t)
    source_rows = pa.concat_tables(parts).sort_by("id")
    config = BootstrapConfig.from_options(
        {
            HoodieKey.BOOTSTRAP_BASE_PATH.key: str(root),
            HoodieKey.TABLE_NAME.key: "rich",
            HoodieKey.RECORDKEY_FIELD.key: "id",
            HoodieKey.WRITE_PRECOMBINE_FIELD.key: "ts",
            HoodieKey.PARTITIONPATH_FIELD.key: "p",
            HoodieKey.HIVE_STYLE_PARTITIONING.key: "true",
            HoodieKey.BOOTSTRAP_MODE_SELECTOR.key: ModeSelector.REGEX.value,
            HoodieKey.BOOTSTRAP_MODE_SELECTOR_REGEX.key: "p=b",
            HoodieKey.BOOTSTRAP_MODE_SELECTOR_REGEX_MODE.key: "FULL_RECORD",
        }
    )
    table_path = str(tmp_path / "table")
    bootstrap(table_path, config)
    got = read_snapshot_table(HudiTable(table_path)).select(source_rows.column_names).sort_by("id")
    assert got.cast(source_rows.schema).equals(source_rows)

    update = parts[0].slice(0, 2)
    update = update.set_column(3, "amt", pa.array([decimal.Decimal("99.99")] * 2, pa.decimal128(10, 2)))
    write_table(table_path, update, operation="upsert", options=WriteOptions())
    table = HudiTable(table_path)
    execute_compaction(table, str(schedule_compaction(table, force=True).instant))
    expected = source_rows.to_pylist()
    for row in expected:
        if row["id"] in ("a0", "a1"):
            row["amt"] = decimal.Decimal("99.99")
    after = read_snapshot_table(HudiTable(table_path)).select(source_rows.column_names).sort_by("id")
    assert after.cast(source_rows.schema).to_pylist() == expected


@pytest.mark.parametrize("crash_in", ["before_full_record", "full_record_commit"])
def test_bootstrap_killed_after_metadata_only_commit_is_resumed_by_bootstrapping_again(
    source: tuple[Path, pd.DataFrame], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, crash_in: str
) -> None:
    """Mixed mode killed once ``00000000000001`` (METADATA_ONLY) committed: ``00000000000002`` absent, or pending with
    its base files written. Bootstrapping again with the same settings writes the FULL_RECORD half only (the
    skeletons are kept), and the snapshot equals the source rows; a further bootstrap is refused."""
    from lake_orchestration.hudi.services.bootstrap import service as bootstrap_service

    root, rows = source
    before = _hashes(root)
    table_path = tmp_path / "table"
    # short heartbeats: the killed FULL_RECORD writer's heartbeat expires quickly, as a real kill's would
    mixed = _config(root, **_full_record_for("dt=2024-01-03"), **{HoodieKey.HEARTBEAT_INTERVAL_MS.key: "100"})
    if crash_in == "before_full_record":

        def killed(*args: object, **kwargs: object) -> None:
            raise RuntimeError("killed")

        monkeypatch.setattr(bootstrap_service, "execute_full_record", killed)
    else:  # the bulk insert wrote its base files, killed before its completed instant
        real = HudiTable.transition_to_completed

        def failing(self: HudiTable, instant: Instant, *args: object, **kwargs: object) -> Instant:
            if str(instant.time) == "00000000000002":
                raise RuntimeError("killed")
            return real(self, instant, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(HudiTable, "transition_to_completed", failing)
    with pytest.raises(RuntimeError, match="killed"):
        bootstrap(str(table_path), mixed)
    monkeypatch.undo()
    table = HudiTable(str(table_path))
    assert [str(i.time) for i in table.timeline.completed_commits()] == ["00000000000001"]
    skeletons = sorted(p.name for p in table_path.rglob("*_00000000000001.parquet"))
    if crash_in == "full_record_commit":
        assert [str(i.time) for i in pending_bootstrap_instants(table)] == ["00000000000002"]
        assert list(table_path.rglob("*_00000000000002.parquet"))  # the killed attempt's files
        import time

        time.sleep(0.5)  # its heartbeat expires (100 ms x 2 misses)

    result = bootstrap(str(table_path), mixed)

    assert result.resumed and result.plan.resume
    assert result.full_record_instant == "00000000000002" and result.skeleton_files == 0
    assert result.full_record_rows == len(rows[rows["dt"] == "2024-01-03"])
    assert sorted(p.name for p in table_path.rglob("*_00000000000001.parquet")) == skeletons
    modes = dict.fromkeys(DATES, BootstrapMode.METADATA_ONLY) | {"2024-01-03": BootstrapMode.FULL_RECORD}
    _check_read(table_path, rows, modes)
    # only the resumed attempt's base files remain (the killed attempt's were rolled back)
    full_files = {p.name for p in table_path.rglob("*_00000000000002.parquet")}
    done = HudiTable(str(table_path)).timeline.completed().get("00000000000002")
    assert done is not None
    stats = HudiTable(str(table_path)).read_model(done, CommitMetadata).write_stats()
    assert full_files == {Path(s.path).name for s in stats}
    assert _hashes(root) == before
    with pytest.raises(PlanError, match="already has commits"):
        bootstrap(str(table_path), mixed)


def test_bootstrap_resume_with_another_selection_refused(source: tuple[Path, pd.DataFrame], tmp_path: Path) -> None:
    """A resume must be the bootstrap whose METADATA_ONLY half committed: another regex (other METADATA_ONLY
    partitions than the bootstrap index holds) is refused before anything is written."""
    from lake_orchestration.hudi.services.bootstrap import service as bootstrap_service

    root, _ = source
    table_path = tmp_path / "table"
    with pytest.MonkeyPatch.context() as mp:

        def killed(*args: object, **kwargs: object) -> None:
            raise RuntimeError("killed")

        mp.setattr(bootstrap_service, "execute_full_record", killed)
        with pytest.raises(RuntimeError, match="killed"):
            bootstrap(str(table_path), _config(root, **_full_record_for("dt=2024-01-03")))
    files = sorted(p for p in table_path.rglob("*") if p.is_file())
    with pytest.raises(PlanError, match="selection gives 3 METADATA_ONLY file") as err:
        bootstrap(str(table_path), _config(root, **_full_record_for("dt=2024-01-0[23]")))
    assert str(table_path) in str(err.value)
    assert sorted(p for p in table_path.rglob("*") if p.is_file()) == files


def test_bootstrap_pending_metadata_only_hint_names_real_command(
    source: tuple[Path, pd.DataFrame], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The refusal of a bootstrap over a pending ``00000000000001`` names a command that exists, and running it
    (then bootstrapping again) gives the source rows."""
    root, rows = source
    table_path = tmp_path / "table"

    def failing_metadata(*args: object) -> CommitMetadata:
        raise RuntimeError("killed")

    monkeypatch.setattr(bootstrap_committer, "bootstrap_commit_metadata", failing_metadata)
    with pytest.raises(RuntimeError, match="killed"):
        bootstrap(str(table_path), _config(root))
    monkeypatch.undo()
    with pytest.raises(PlanError) as err:
        bootstrap(str(table_path), _config(root))
    command = re.search(r"lake-orch (rollback \S+ --instant-time \d+)", str(err.value))
    assert command is not None, str(err.value)
    r = CliRunner().invoke(cli, command.group(1).split())
    assert r.exit_code == 0, r.output
    bootstrap(str(table_path), _config(root))
    _check_read(table_path, rows, dict.fromkeys(DATES, BootstrapMode.METADATA_ONLY))


def test_bootstrap_full_record_type_disagreement_names_both_files_and_column(tmp_path: Path) -> None:
    root = tmp_path / "src"
    for p, qty in (("a", pa.array([1, 2], pa.int64())), ("b", pa.array(["x", "y"]))):
        (root / f"p={p}").mkdir(parents=True)
        pq.write_table(pa.table({"id": [f"{p}1", f"{p}2"], "qty": qty, "p": [p, p]}), root / f"p={p}" / "f.parquet")
    config = BootstrapConfig.from_options(
        {
            HoodieKey.BOOTSTRAP_BASE_PATH.key: str(root),
            HoodieKey.TABLE_NAME.key: "t",
            HoodieKey.RECORDKEY_FIELD.key: "id",
            HoodieKey.PARTITIONPATH_FIELD.key: "p",
            HoodieKey.HIVE_STYLE_PARTITIONING.key: "true",
            HoodieKey.BOOTSTRAP_MODE_SELECTOR.key: ModeSelector.FULL_RECORD.value,
        }
    )
    with pytest.raises(PlanError) as err:
        bootstrap(str(tmp_path / "table"), config)
    msg = str(err.value)
    assert "'qty'" in msg and "int64" in msg and "string" in msg
    assert str(root / "p=a" / "f.parquet") in msg and str(root / "p=b" / "f.parquet") in msg
    assert not (tmp_path / "table").exists()


def _partition_by_source(root: Path) -> pa.Table:
    """Spark's ``partitionBy("city")`` output: ``city=<v>/part-*.parquet`` files without a ``city`` column (one value
    needs escaping, one is Spark's null partition); returns the files' rows (no ``city``)."""
    parts = []
    for n, city in enumerate(("sf", "new york", "__HIVE_DEFAULT_PARTITION__")):
        folder = root / f"city={city.replace(' ', '%20')}"
        folder.mkdir(parents=True)
        for f in range(2):
            t = pa.table(
                {"id": [f"k{n}{f}{i}" for i in range(4)], "ts": [1, 2, 3, 4], "v": [0.5 * i for i in range(4)]}
            )
            pq.write_table(t, folder / f"part-{f:05d}.parquet")
            parts.append(t)
    return pa.concat_tables(parts)


def _partition_by_config(root: Path, **extra: str) -> BootstrapConfig:
    return BootstrapConfig.from_options(
        {
            HoodieKey.BOOTSTRAP_BASE_PATH.key: str(root),
            HoodieKey.TABLE_NAME.key: "trips",
            HoodieKey.RECORDKEY_FIELD.key: "id",
            HoodieKey.WRITE_PRECOMBINE_FIELD.key: "ts",
            HoodieKey.PARTITIONPATH_FIELD.key: "city",
            HoodieKey.HIVE_STYLE_PARTITIONING.key: "true",
            HoodieKey.WRITE_TABLE_TYPE.key: "MERGE_ON_READ",
            **extra,
        }
    )


@pytest.mark.parametrize("selection", ["METADATA_ONLY", "regex-mixed"])
def test_bootstrap_partition_by_source_takes_partition_column_from_folder(tmp_path: Path, selection: str) -> None:
    """Spark ``partitionBy`` output (no partition column in the files): METADATA_ONLY reads only the key columns,
    places records by folder; the snapshot has ``city`` from the folder as a string, as pyarrow's hive partition
    discovery (strings, the oracle here) and Java read it; an upsert and a compaction keep it."""
    import pyarrow.dataset as ds

    root = tmp_path / "src"
    _partition_by_source(root)
    want = ds.dataset(
        root, format="parquet", partitioning=ds.HivePartitioning.discover(infer_dictionary=False)
    ).to_table()
    want = want.set_column(
        want.schema.get_field_index("city"),
        "city",
        pa.array(
            [
                None if c == "__HIVE_DEFAULT_PARTITION__" else c
                for c in want.column("city").cast(pa.string()).to_pylist()
            ]
        ),
    )
    extra = _full_record_for("city=sf") if selection == "regex-mixed" else {}
    table_path = str(tmp_path / "table")
    result = bootstrap(table_path, _partition_by_config(root, **extra))

    assert [p.partition_path for p in result.plan.partitions] == [
        "city=__HIVE_DEFAULT_PARTITION__",
        "city=new%20york",
        "city=sf",
    ]
    assert json.loads(result.plan.schema_json)["fields"][-1]["name"] == "city"
    got = read_snapshot_table(HudiTable(table_path))
    assert got.column_names[5:] == ["id", "ts", "v", "city"]
    assert got.schema.field("city").type == pa.string()
    assert sorted(got.select(["id", "ts", "v", "city"]).to_pylist(), key=lambda r: r["id"]) == sorted(
        want.select(["id", "ts", "v", "city"]).to_pylist(), key=lambda r: r["id"]
    )
    for r in got.to_pylist():
        assert r["_hoodie_partition_path"] == "city=" + (
            "__HIVE_DEFAULT_PARTITION__" if r["city"] is None else r["city"].replace(" ", "%20")
        ), r

    update = pa.table({"id": ["k000"], "ts": [9], "v": [99.0], "city": ["sf"]})
    write_table(table_path, update, operation="upsert", options=WriteOptions())
    table = HudiTable(table_path)
    execute_compaction(table, str(schedule_compaction(table, force=True).instant))
    after = {
        r["id"]: r for r in read_snapshot_table(HudiTable(table_path)).select(["id", "ts", "v", "city"]).to_pylist()
    }
    model = {r["id"]: r for r in want.select(["id", "ts", "v", "city"]).to_pylist()} | {"k000": update.to_pylist()[0]}
    assert after == model


def test_bootstrap_non_hive_folders_without_partition_column_refused(tmp_path: Path) -> None:
    root = tmp_path / "src"
    (root / "sf").mkdir(parents=True)
    pq.write_table(pa.table({"id": ["a"], "ts": [1]}), root / "sf" / "f.parquet")
    config = _partition_by_config(root, **{HoodieKey.HIVE_STYLE_PARTITIONING.key: "false"})
    with pytest.raises(PlanError, match=r"partition field\(s\) \['city'\] are not columns .* not hive-style"):
        bootstrap(str(tmp_path / "table"), config)
