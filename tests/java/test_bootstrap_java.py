"""Our bootstraps read, listed and continued by Java Hudi 0.15 (the oracle), and compared with Java's own.

A hive-style partitioned parquet source (module-wide, read-only) is bootstrapped by us METADATA_ONLY, FULL_RECORD
and regex-mixed, COPY_ON_WRITE and MERGE_ON_READ:

* Java's snapshot query equals the source rows, ``show_bootstrap_partitions`` / ``show_bootstrap_mapping`` list our
  bootstrap index;
* Java upserts and deletes on top of our METADATA_ONLY bootstrap and reads the expected rows, as our reader does;
  on MERGE_ON_READ Java's inline log compaction of the skeleton slices plans what our planner plans on the same
  state (``bootstrapFilePath`` = the source file);
* Java's ``run_bootstrap`` of the same source writes the same index values (``HoodieFileStatus`` with its
  ``HoodiePath.version``) and an empty FULL_RECORD ``.inflight``, as we do.

hudi-rs 0.5.0 does not stitch skeletons with their source files ("bootstrap merge not supported"): it is compared
on FULL_RECORD tables only.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.hudi.hfile.bootstrap_index import (
    BOOTSTRAP_INDEX_CLASS,
    FILE_ID_INDEX_PATH,
    PARTITION_INDEX_PATH,
    BootstrapIndexReader,
)
from lake_orchestration.hudi.model.commit_metadata import CommitMetadata
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, State
from lake_orchestration.hudi.services.bootstrap import BootstrapConfig, ModeSelector, bootstrap
from lake_orchestration.hudi.services.compaction import CompactionConfig
from lake_orchestration.hudi.services.log_compaction import read_log_compaction_plan, schedule_log_compaction
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.snapshot import read_snapshot_table
from tests.java.harness import JavaHudi
from tests.java.interop import procedure
from tests.oracle import hudi_rs_snapshot

pytestmark = [pytest.mark.java]

DATES = ("2024-01-01", "2024-01-02", "2024-01-03")
COLUMNS = ("id", "ts", "qty", "price", "note", "dt")
COW, MOR = "COPY_ON_WRITE", "MERGE_ON_READ"
REGEX = {
    HoodieKey.BOOTSTRAP_MODE_SELECTOR.key: ModeSelector.REGEX.value,
    HoodieKey.BOOTSTRAP_MODE_SELECTOR_REGEX.key: "dt=2024-01-0[13]",
    HoodieKey.BOOTSTRAP_MODE_SELECTOR_REGEX_MODE.key: "FULL_RECORD",
}
MODES: dict[str, dict[str, str]] = {
    "METADATA_ONLY": {HoodieKey.BOOTSTRAP_MODE_SELECTOR.key: ModeSelector.METADATA_ONLY.value},
    "FULL_RECORD": {HoodieKey.BOOTSTRAP_MODE_SELECTOR.key: ModeSelector.FULL_RECORD.value},
    "regex-mixed": REGEX,
}


def _rows(n0: int, n: int, date: str, ts: int = 1000) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([f"key-{i:05d}" for i in range(n0, n0 + n)]),
            "ts": pa.array([ts + i for i in range(n)], pa.int64()),
            "qty": pa.array([i * 3 for i in range(n)], pa.int32()),
            "price": pa.array([i / 4 for i in range(n)], pa.float64()),
            "note": pa.array([None if i % 3 == 0 else f"n{i}" for i in range(n)], pa.string()),
            "dt": pa.array([date] * n),
        }
    )


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pa.Table]:
    """A hive-style partitioned parquet dataset (two files per partition) and all its rows."""
    root = tmp_path_factory.mktemp("bootstrap-source") / "src"
    parts, n = [], 0
    for d in DATES:
        for f in range(2):
            t = _rows(n, 9 + 4 * f, d)
            n += t.num_rows
            (root / f"dt={d}").mkdir(parents=True, exist_ok=True)
            pq.write_table(t, root / f"dt={d}" / f"part-{f:05d}.parquet")
            parts.append(t)
    return root, pa.concat_tables(parts)


def _config(src: Path, table_type: str, mode: Mapping[str, str]) -> BootstrapConfig:
    return BootstrapConfig.from_options(
        {
            HoodieKey.TABLE_NAME.key: "src",
            HoodieKey.RECORDKEY_FIELD.key: "id",
            HoodieKey.WRITE_PRECOMBINE_FIELD.key: "ts",
            HoodieKey.PARTITIONPATH_FIELD.key: "dt",
            HoodieKey.HIVE_STYLE_PARTITIONING.key: "true",
            HoodieKey.WRITE_TABLE_TYPE.key: table_type,
            HoodieKey.BOOTSTRAP_BASE_PATH.key: str(src),
            **mode,
        }
    )


def _java_options(table_type: str, **extra: str) -> dict[str, str]:
    return {
        "hoodie.table.name": "src",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "dt",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.metadata.enable": "false",
        "hoodie.upsert.shuffle.parallelism": "2",
        "hoodie.delete.shuffle.parallelism": "2",
        "hoodie.clean.automatic": "false",
        "hoodie.archive.automatic": "false",
        "hoodie.compact.inline": "false",
        "hoodie.datasource.compaction.async.enable": "false",
        **extra,
    }


def _java_read(java: JavaHudi, path: Path) -> pa.Table:
    out = path.parent / f"read-{path.name}"
    shutil.rmtree(out, ignore_errors=True)
    java.call("read", path=str(path), options={"hoodie.datasource.query.type": "snapshot"}, output=str(out))
    return pq.read_table(out)


def _data(t: pa.Table) -> list[tuple[Any, ...]]:
    cols = [t.column(c).cast(pa.string()).to_pylist() if c == "dt" else t.column(c).to_pylist() for c in COLUMNS]
    return sorted(zip(*cols, strict=True))


def _index(path: Path) -> BootstrapIndexReader:
    return BootstrapIndexReader(
        (path / PARTITION_INDEX_PATH).read_bytes(), (path / FILE_ID_INDEX_PATH).read_bytes(), base_path=str(path)
    )


def _mapping(path: Path) -> set[tuple[str, str, str]]:
    """(partition, file id, source file uri) of every file group in our index."""
    idx = _index(path)
    out = set()
    for p in idx.indexed_partitions():
        for m in idx.mappings_for_partition(p):
            out.add((p, m.file_id, m.bootstrap_file_status.uri or ""))
    return out


def _write(java: JavaHudi, path: Path, data: pa.Table, table_type: str, operation: str, **extra: str) -> None:
    src = path.parent / f"input-{operation}-{data.num_rows}.parquet"
    pq.write_table(data, src)
    java.call(
        "write",
        path=str(path),
        input=str(src),
        options=_java_options(table_type, **{"hoodie.datasource.write.operation": operation, **extra}),
    )


def _read_cell(mode: str, table_type: str) -> Any:
    """One interop cell per bootstrap mode and table type."""
    kind = "MOR" if table_type == MOR else "COW"
    return pytest.param(
        mode,
        table_type,
        id=f"{mode}-{kind}",
        marks=pytest.mark.interop(
            direction="our writes → Java reads",
            table=f"{kind} partitioned (bootstrapped {mode})",
            service="bootstrap",
            checks="snapshot = source rows"
            + ("" if mode == "FULL_RECORD" else "; show_bootstrap_partitions / show_bootstrap_mapping list our index")
            + ("; hudi-rs = source rows" if mode == "FULL_RECORD" else ""),
        ),
    )


@pytest.mark.parametrize(
    ("mode", "table_type"),
    [
        _read_cell("METADATA_ONLY", COW),
        _read_cell("METADATA_ONLY", MOR),
        _read_cell("FULL_RECORD", COW),
        _read_cell("regex-mixed", COW),
        _read_cell("regex-mixed", MOR),
    ],
)
def test_java_reads_our_bootstrap(
    java_hudi: JavaHudi, source: tuple[Path, pa.Table], tmp_path: Path, mode: str, table_type: str
) -> None:
    src, rows = source
    path = tmp_path / "t"
    result = bootstrap(str(path), _config(src, table_type, MODES[mode]))
    theirs = _java_read(java_hudi, path)
    assert _data(theirs) == _data(rows), f"Java's snapshot of our {mode} {table_type} bootstrap"
    assert sorted(theirs.column("_hoodie_record_key").to_pylist()) == sorted(rows.column("id").to_pylist())
    assert _data(read_snapshot_table(HudiTable(str(path)))) == _data(rows), "our snapshot"
    if result.metadata_only_instant is None:  # FULL_RECORD only: no index; hudi-rs reads it too
        rs = hudi_rs_snapshot(path)
        assert rs is not None and _data(rs) == _data(rows), "hudi-rs"
        return
    ours = _mapping(path)
    partitions = procedure(java_hudi, "show_bootstrap_partitions", path)
    assert sorted(r["indexed_partitions"] for r in partitions) == sorted({p for p, _, _ in ours}), partitions
    mapping = procedure(java_hudi, "show_bootstrap_mapping", path)
    got = {(r["partition"], r["file_id"], r["source_file"]) for r in mapping}
    assert {(p, f) for p, f, _ in got} == {(p, f) for p, f, _ in ours}, mapping
    assert all(any(s.endswith(Path(u).name) for s in [x for _, _, x in got]) for _, _, u in ours), mapping


def _write_cell(table_type: str) -> Any:
    """One interop cell per table type."""
    kind = "MOR" if table_type == MOR else "COW"
    return pytest.param(
        table_type,
        id=kind,
        marks=pytest.mark.interop(
            direction="our writes → Java writes on top → Java reads",
            table=f"{kind} partitioned (bootstrapped METADATA_ONLY)",
            service="bootstrap" + (", log compaction plan" if table_type == MOR else ""),
            checks="Java upserts + deletes on our skeletons; snapshot = model; our reader = model"
            + ("; Java's inline log compaction plan = ours (bootstrapFilePath)" if table_type == MOR else ""),
        ),
    )


@pytest.mark.parametrize("table_type", [_write_cell(COW), _write_cell(MOR)])
def test_java_writes_on_our_metadata_only_bootstrap(
    java_hudi: JavaHudi, source: tuple[Path, pa.Table], tmp_path: Path, table_type: str
) -> None:
    src, rows = source
    path = tmp_path / "t"
    bootstrap(str(path), _config(src, table_type, MODES["METADATA_ONLY"]))
    model = {r["id"]: r for r in rows.to_pylist()}
    updates = rows.filter(pc.equal(pc.bit_wise_and(rows.column("qty"), 1), 1))
    updates = updates.set_column(1, "ts", pc.add(updates.column("ts"), pa.scalar(10**6, pa.int64())))
    updates = updates.set_column(2, "qty", pc.add(updates.column("qty"), pa.scalar(7, pa.int32())))
    fresh = _rows(900, 5, DATES[1], ts=5000)
    upsert = pa.concat_tables([updates, fresh])
    extra = {}
    if table_type == MOR:  # Java log-compacts the skeleton slices it just appended to
        extra = {"hoodie.log.compaction.inline": "true", "hoodie.log.compaction.blocks.threshold": "1"}
    _write(java_hudi, path, upsert, table_type, "upsert", **extra)
    model.update({r["id"]: r for r in upsert.to_pylist()})
    victims = rows.slice(0, 4)
    _write(java_hudi, path, victims, table_type, "delete")
    for k in victims.column("id").to_pylist():
        model.pop(k, None)
    expected = pa.Table.from_pylist(list(model.values()), schema=rows.schema)

    theirs = _java_read(java_hudi, path)
    assert _data(theirs) == _data(expected), f"Java's read after Java wrote on our {table_type} bootstrap"
    assert _data(read_snapshot_table(HudiTable(str(path)))) == _data(expected), "our read"
    if table_type != MOR:
        return
    hoodie = path / ".hoodie"
    lcs = sorted(p.name.split(".")[0] for p in hoodie.glob("*.logcompaction.requested"))
    assert len(lcs) == 1, sorted(p.name for p in hoodie.iterdir())
    lc = lcs[0]
    java_plan = read_log_compaction_plan(HudiTable(str(path)), lc)
    assert all(op.bootstrap_file_path for op in java_plan.operations or ()), java_plan
    # the state Java planned on (right after its upsert): our plan on it equals Java's
    pre = tmp_path / "pre"
    shutil.copytree(path, pre)
    table = HudiTable(str(path))
    done = table.read_model(Instant(InstantTime(lc), Action.DELTA_COMMIT, State.COMPLETED), CommitMetadata)
    for s in done.write_stats():
        (pre / s.path).unlink()
    later = [i for i in table.timeline.instants if str(i.time) > lc]
    for name in [f"{lc}.logcompaction.requested", f"{lc}.logcompaction.inflight", f"{lc}.deltacommit"]:
        (pre / ".hoodie" / name).unlink()
    for i in later:  # the delete after it
        for f in (pre / ".hoodie").glob(f"{i.time}.*"):
            f.unlink()
    cfg = CompactionConfig.from_options({"hoodie.log.compaction.blocks.threshold": "1"})
    ours = schedule_log_compaction(HudiTable(str(pre)), config=cfg)
    assert ours.plan is not None

    def ops(plan):  # type: ignore[no-untyped-def]
        return {
            (o.partition_path, o.file_id): (o.base_instant_time, o.data_file_path, o.bootstrap_file_path)
            for o in plan.operations or ()
        }

    assert ops(ours.plan) == ops(java_plan)


@pytest.mark.interop(
    direction="Java service vs ours",
    table="COW partitioned (bootstrapped METADATA_ONLY, FULL_RECORD)",
    service="bootstrap (index, timeline)",
    checks="Java's run_bootstrap of the same source: same hoodie.bootstrap.index.class (0.15's hfile."
    "HFileBootstrapIndex), "
    "same HoodieFileStatus values in the index (HoodiePath.version 1), empty .requested/.inflight",
)
def test_index_and_timeline_equal_javas_run_bootstrap(
    java_hudi: JavaHudi, source: tuple[Path, pa.Table], tmp_path: Path
) -> None:
    src, _ = source
    theirs = {}
    for name, selector in (("meta", ModeSelector.METADATA_ONLY), ("full", ModeSelector.FULL_RECORD)):
        jpath = tmp_path / f"java-{name}"
        java_hudi.call(
            "sql",
            query=(
                f"call run_bootstrap(table => 'jb_{name}', table_type => 'COPY_ON_WRITE', bootstrap_path => '{src}', "
                f"base_path => '{jpath}', rowKey_field => 'id', partition_path_field => 'dt', "
                f"selector_class => '{selector.value}', bootstrap_overwrite => true)"
            ),
        )
        theirs[name] = jpath
    ours_meta, ours_full = tmp_path / "ours-meta", tmp_path / "ours-full"
    bootstrap(str(ours_meta), _config(src, COW, MODES["METADATA_ONLY"]))
    bootstrap(str(ours_full), _config(src, COW, MODES["FULL_RECORD"]))

    def statuses(path: Path) -> dict[str, Any]:
        idx = _index(path)
        return {
            Path(m.bootstrap_file_status.uri or "").name + "@" + p: m.bootstrap_file_status
            for p in idx.indexed_partitions()
            for m in idx.mappings_for_partition(p)
        }

    java_status, our_status = statuses(theirs["meta"]), statuses(ours_meta)
    assert java_status.keys() == our_status.keys()
    for k, j in java_status.items():
        assert our_status[k] == j, f"{k}: ours {our_status[k]} vs Java's {j}"
        assert j.path is not None and j.path.version == 1

    for name, ours in (("meta", ours_meta), ("full", ours_full)):
        java_props = HudiTable(str(theirs[name])).config.raw
        our_props = HudiTable(str(ours)).config.raw
        key = HoodieKey.BOOTSTRAP_INDEX_CLASS.key
        assert our_props.get(key) == java_props.get(key) == BOOTSTRAP_INDEX_CLASS, name
        instant = "00000000000001" if name == "meta" else "00000000000002"
        for state in ("commit.requested", "inflight"):
            j = (theirs[name] / ".hoodie" / f"{instant}.{state}").read_bytes()
            o = (ours / ".hoodie" / f"{instant}.{state}").read_bytes()
            assert o == j == b"", f"{instant}.{state}: ours {o[:80]!r} vs Java's {j[:80]!r}"


def _partition_by_cell(table_type: str) -> Any:
    kind = "MOR" if table_type == MOR else "COW"
    return pytest.param(
        table_type,
        id=kind,
        marks=pytest.mark.interop(
            direction="our writes → Java reads",
            table=f"{kind} partitioned (bootstrapped METADATA_ONLY from Spark partitionBy output)",
            service="bootstrap",
            checks="snapshot (partition column from the folder) = source read by Spark with partition discovery "
            "= our snapshot",
        ),
    )


@pytest.mark.parametrize("table_type", [_partition_by_cell(COW), _partition_by_cell(MOR)])
def test_java_reads_our_bootstrap_of_partition_by_output(java_hudi: JavaHudi, tmp_path: Path, table_type: str) -> None:
    """Spark ``partitionBy("city")`` output (``city=<v>/part-*.parquet``, no ``city`` column in the files; one null
    partition) bootstrapped METADATA_ONLY by us: Java's snapshot has ``city`` from the folder, equal to Spark's own
    read of the source with partition discovery, and to ours."""
    src = tmp_path / "src"
    for n, city in enumerate(("sf", "nyc", "__HIVE_DEFAULT_PARTITION__")):
        (src / f"city={city}").mkdir(parents=True)
        for f in range(2):
            t = pa.table({"id": [f"k{n}{f}{i}" for i in range(3)], "ts": [1, 2, 3], "v": [0.5, 1.5, 2.5]})
            pq.write_table(t, src / f"city={city}" / f"part-{f:05d}.parquet")
    path = tmp_path / "t"
    config = BootstrapConfig.from_options(
        {
            HoodieKey.TABLE_NAME.key: "trips",
            HoodieKey.RECORDKEY_FIELD.key: "id",
            HoodieKey.WRITE_PRECOMBINE_FIELD.key: "ts",
            HoodieKey.PARTITIONPATH_FIELD.key: "city",
            HoodieKey.HIVE_STYLE_PARTITIONING.key: "true",
            HoodieKey.WRITE_TABLE_TYPE.key: table_type,
            HoodieKey.BOOTSTRAP_BASE_PATH.key: str(src),
        }
    )
    bootstrap(str(path), config)
    spark_rows = java_hudi.call("sql", query=f"SELECT id, ts, v, CAST(city AS STRING) AS city FROM parquet.`{src}`")
    spark = sorted((r["id"], r["ts"], r["v"], r["city"]) for r in spark_rows["rows"])
    theirs = _java_read(java_hudi, path)
    assert theirs.column_names[-1] == "city" and theirs.schema.field("city").type == pa.string()
    java = sorted(zip(*(theirs.column(c).to_pylist() for c in ("id", "ts", "v", "city")), strict=True))
    assert java == spark, "Java's snapshot of our bootstrap vs Spark's read of the source"
    ours = read_snapshot_table(HudiTable(str(path)))
    assert sorted(zip(*(ours.column(c).to_pylist() for c in ("id", "ts", "v", "city")), strict=True)) == spark


@pytest.mark.interop(
    direction="our writes → Java reads",
    table="MOR partitioned (regex-mixed bootstrap killed after 00000000000001, resumed)",
    service="bootstrap (resume)",
    checks="snapshot = source rows after the resumed FULL_RECORD half",
)
def test_java_reads_our_resumed_bootstrap(
    java_hudi: JavaHudi, source: tuple[Path, pa.Table], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A regex-mixed bootstrap killed between its METADATA_ONLY commit and its FULL_RECORD half, resumed by
    bootstrapping again: Java reads the source rows."""
    from lake_orchestration.hudi.services.bootstrap import service as bootstrap_service

    src, rows = source
    path = tmp_path / "t"

    def killed(*args: object, **kwargs: object) -> None:
        raise RuntimeError("killed")

    monkeypatch.setattr(bootstrap_service, "execute_full_record", killed)
    with pytest.raises(RuntimeError, match="killed"):
        bootstrap(str(path), _config(src, MOR, REGEX))
    monkeypatch.undo()
    assert bootstrap(str(path), _config(src, MOR, REGEX)).resumed
    theirs = _java_read(java_hudi, path)
    assert _data(theirs) == _data(rows), "Java's snapshot of our resumed bootstrap"
    assert _data(read_snapshot_table(HudiTable(str(path)))) == _data(rows), "our snapshot"
