"""Clustering guards and layout against Java Hudi 0.15 itself.

- A clustering plan Java schedules (``call run_clustering(op => 'schedule')``): Java's own writer refuses an upsert
  into its file groups (``SparkRejectUpdateStrategy``, ``HoodieClusteringUpdateException``), and ours refuses the
  same upsert naming the same file groups and the plan's instant; an insert of new keys goes through on both.
- Java's clustering with ``hoodie.layout.optimize.strategy`` = z-order / hilbert / linear writes its rows in the order
  ``layout.sort_indices`` computes from the rows it read (the file group's rows, meta columns first).
"""

from __future__ import annotations

import random
import re
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_orchestration.hudi.services.clustering.layout import sort_indices
from lake_orchestration.hudi.write import WriteOptions, write_table
from lake_orchestration.hudi.write.clustering_guard import ClusteringUpdateError
from tests.java.harness import JavaHudi, JavaHudiError
from tests.java.interop import data_files

pytestmark = [pytest.mark.java]

OPTIONS = {
    "hoodie.table.name": "t",
    "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "p",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
    "hoodie.metadata.enable": "false",
}


def _rows(n: int, seed: int, part: str = "x", first: int = 0) -> pa.Table:
    """Unique values per column (no ties in any order), negatives, strings shorter and longer than 8 bytes, nulls."""
    rng = random.Random(seed)
    a = rng.sample(range(-(10**12), 10**12), n)
    b = [rng.uniform(-1e6, 1e6) for _ in range(n)]
    words = ["ab", "abcdefgh", "abcdefghijk", "zz", "é", "Z", "a", "0"]
    s = [f"{words[i % len(words)]}{i:04d}" if i % 3 else f"{i:03d}" for i in range(n)]
    i32 = rng.sample(range(-(2**31), 2**31 - 1), n)
    if n > 5:
        a[5] = None  # a null long: Long.MAX_VALUE on the curve
    return pa.table(
        {
            "id": pa.array([f"id{first + k:04d}" for k in range(n)]),
            "ts": pa.array([1] * n, pa.int64()),
            "a": pa.array(a, pa.int64()),
            "b": pa.array(b, pa.float64()),
            "s": pa.array(s, pa.string()),
            "i": pa.array(i32, pa.int32()),
            "p": pa.array([part] * n),
        }
    )


def _java_write(java: JavaHudi, path: Path, data: pa.Table, operation: str, **extra: str) -> list[str]:
    src = path.parent / f"input-{operation}-{len(list(path.parent.glob('input-*')))}.parquet"
    pq.write_table(data, src)
    options = {**OPTIONS, "hoodie.datasource.write.operation": operation, **extra}
    return java.call("write", path=str(path), input=str(src), options=options)["instants"]


def _call(java: JavaHudi, path: Path, procedure: str, **args: str) -> list[dict]:
    rendered = ", ".join([f"path => '{path}'", *(f"{k} => '{v}'" for k, v in args.items())])
    return java.call("sql", query=f"call {procedure}({rendered})")["rows"]


@pytest.fixture(scope="module")
def java_scheduled(java_hudi: JavaHudi, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """Java's table (two partitions) with a clustering plan Java scheduled, pending."""
    path = tmp_path_factory.mktemp("java-clustering-guard") / "t"
    _java_write(java_hudi, path, pa.concat_tables([_rows(30, 1, "x"), _rows(30, 2, "y", first=100)]), "insert")
    _call(java_hudi, path, "run_clustering", op="schedule")
    pending = [p.name for p in (path / ".hoodie").iterdir() if p.name.endswith(".replacecommit.requested")]
    assert len(pending) == 1, f"Java scheduled no clustering: {sorted(p.name for p in (path / '.hoodie').iterdir())}"
    return path, pending[0].split(".")[0]


@pytest.mark.interop(
    direction="Java schedules clustering → Java's writer and ours",
    table="COW partitioned",
    service="clustering update blocking (SparkRejectUpdateStrategy)",
    checks="the same upsert refused by both, naming the same file groups and the clustering instant; inserts pass",
)
def test_upsert_against_java_scheduled_clustering_refused_like_java(
    java_hudi: JavaHudi, java_scheduled: tuple[Path, str], tmp_path: Path
) -> None:
    src, clustering = java_scheduled
    batch = _rows(30, 1, "x").slice(0, 3).set_column(1, "ts", pa.array([2, 2, 2], pa.int64()))
    ours, theirs = tmp_path / "ours" / "t", tmp_path / "java" / "t"
    shutil.copytree(src, ours)
    shutil.copytree(src, theirs)

    opts = WriteOptions.from_hudi_options(OPTIONS)
    timeline_before = sorted(p.name for p in (ours / ".hoodie").iterdir())
    with pytest.raises(ClusteringUpdateError) as refused:
        write_table(str(ours), batch, operation="upsert", options=opts)
    assert refused.value.instants == [clustering]
    assert sorted(p.name for p in (ours / ".hoodie").iterdir()) == timeline_before  # no instant created

    with pytest.raises(JavaHudiError) as java_refused:
        _java_write(java_hudi, theirs, batch, "upsert")
    message = str(java_refused.value)
    assert "Not allowed to update the clustering file group" in message, message[-2000:]
    java_groups = set(re.findall(r"partitionPath='([^']*)', fileId='([^']+)'", message))
    assert java_groups and java_groups <= set(refused.value.file_groups), (java_groups, refused.value.file_groups)

    # new keys: no update, both writers go on
    new = _rows(3, 9, "x", first=500)
    write_table(str(ours), new, operation="upsert", options=opts)
    _java_write(java_hudi, theirs, new, "upsert")


def _clustered_order(java: JavaHudi, base: Path, tmp_path: Path, strategy: str, columns: str) -> tuple[list, list]:
    """Java clusters a copy of ``base`` by ``columns`` with ``strategy``: (the record keys in the order of its new
    file, the keys in the order our layout gives the rows it read)."""
    path = tmp_path / strategy / "t"
    shutil.copytree(base, path)
    before = data_files(path)
    rows = pa.concat_tables([pq.read_table(path / f) for f in sorted(before)])
    _call(
        java,
        path,
        "run_clustering",
        order=columns,
        options=f"hoodie.layout.optimize.strategy={strategy}",
    )
    new = sorted(data_files(path) - before)
    assert len(new) == 1, f"Java's clustering wrote {new}"
    java_keys = pq.read_table(path / new[0]).column("_hoodie_record_key").to_pylist()
    order = sort_indices(rows, columns.split(","), strategy).to_pylist()
    keys = rows.column("_hoodie_record_key").to_pylist()
    return java_keys, [keys[i] for i in order]


@pytest.fixture(scope="module")
def java_layout_table(java_hudi: JavaHudi, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("java-layout") / "t"
    _java_write(java_hudi, path, _rows(200, 7), "bulk_insert")
    return path


@pytest.mark.interop(
    direction="Java clustering → our layout",
    table="COW partitioned",
    service="clustering layout (hoodie.layout.optimize.strategy)",
    checks="row order of Java's clustered file = our sort_indices (z-order, hilbert, linear)",
)
@pytest.mark.parametrize(
    ("strategy", "columns"), [("z-order", "a,b"), ("hilbert", "s,i"), ("z-order", "s,a,i"), ("linear", "s,a")]
)
def test_java_clustering_row_order_equals_our_layout(
    java_hudi: JavaHudi, java_layout_table: Path, tmp_path: Path, strategy: str, columns: str
) -> None:
    java_keys, ours = _clustered_order(java_hudi, java_layout_table, tmp_path, strategy, columns)
    assert len(java_keys) == len(ours) == 200
    assert java_keys == ours


# -- clean and archive of a Java clustering's replaced file groups ---------------------------------------------------


def _call_typed(java: JavaHudi, path: Path, procedure: str, **args: object) -> list[dict]:
    """Java's procedure on the table at ``path`` through a catalog table (``run_clean`` takes no ``path``)."""
    catalog = f"t_{abs(hash(str(path))) % 10**12}"
    java.call("register", name=catalog, path=str(path))
    rendered = ", ".join(
        [f"table => '{catalog}'", *(f"{k} => {v!r}" if isinstance(v, str) else f"{k} => {v}" for k, v in args.items())]
    )
    return java.call("sql", query=f"call {procedure}({rendered})")["rows"]


@pytest.fixture(scope="module")
def java_clustered_history(java_hudi: JavaHudi, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, set[str]]:
    """Java's COW history: insert, upsert + inline clustering (a replacecommit replacing every file group), then three
    upserts. Returns the path, the replacecommit's time and the replaced file ids."""
    path = tmp_path_factory.mktemp("java-clustered-history") / "t"
    base = pa.concat_tables([_rows(30, 1, "x"), _rows(30, 2, "y", first=100)])
    _java_write(java_hudi, path, base, "insert")
    before = {Path(f).name.split("_")[0] for f in data_files(path)}
    clustering = {"hoodie.clustering.inline": "true", "hoodie.clustering.inline.max.commits": "1"}
    for ts in (2, 3, 4, 5):
        batch = base.slice(ts * 5, 5).set_column(1, "ts", pa.array([ts] * 5, pa.int64()))
        _java_write(java_hudi, path, batch, "upsert", **(clustering if ts == 2 else {}))
    replaces = sorted(p.name for p in (path / ".hoodie").iterdir() if p.name.endswith(".replacecommit"))
    assert len(replaces) == 1, replaces
    return path, replaces[0].split(".")[0], before


def _commit_instants(path: Path) -> list[str]:
    return sorted(p.name for p in (path / ".hoodie").iterdir() if re.fullmatch(r"\d+\.(commit|replacecommit)", p.name))


@pytest.mark.interop(
    direction="Java clustering → our clean + archive, beside Java's",
    table="COW partitioned",
    service="clean of replaced file groups, archival guard of the replacecommit",
    checks="files deleted = Java's run_clean's on a copy (replaced groups go exactly when Java's go); commits left "
    "active by our archive = Java's archive_commits' (the replacecommit kept until cleaned)",
)
@pytest.mark.parametrize("retained", [4, 3])
def test_replaced_file_groups_cleaned_and_replacecommit_archived_as_java(
    java_hudi: JavaHudi, java_clustered_history: tuple[Path, str, set[str]], tmp_path: Path, retained: int
) -> None:
    from lake_orchestration.hudi.services.archive import ArchiveConfig, run_archive
    from lake_orchestration.hudi.services.clean import CleanConfig, run_clean
    from lake_orchestration.hudi.table.hudi_table import HudiTable

    src, replacecommit, replaced = java_clustered_history
    ours, theirs = tmp_path / "ours" / "t", tmp_path / "java" / "t"
    shutil.copytree(src, ours)
    shutil.copytree(src, theirs)
    files = data_files(src)

    # archive first, before any clean: the replacecommit and what follows it stay active (no clean passed it)
    archive = {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", "hoodie.cleaner.commits.retained": "1"}
    pre_ours, pre_java = tmp_path / "pre-ours" / "t", tmp_path / "pre-java" / "t"
    shutil.copytree(src, pre_ours)
    shutil.copytree(src, pre_java)
    run_archive(
        HudiTable(str(pre_ours)),
        ArchiveConfig.from_options(archive, table_properties=HudiTable(str(pre_ours)).config.raw),
    )
    _call_typed(java_hudi, pre_java, "archive_commits", min_commits=2, max_commits=3, retain_commits=1)
    assert _commit_instants(pre_ours) == _commit_instants(pre_java)
    assert f"{replacecommit}.replacecommit" in _commit_instants(pre_ours)

    clean = {
        "hoodie.cleaner.policy": "KEEP_LATEST_COMMITS",
        "hoodie.cleaner.commits.retained": str(retained),
        "hoodie.metadata.enable": "false",
    }
    run_clean(HudiTable(str(ours)), CleanConfig.from_options(clean))
    _call_typed(
        java_hudi,
        theirs,
        "run_clean",
        clean_policy="KEEP_LATEST_COMMITS",
        retain_commits=retained,
        options="hoodie.metadata.enable=false",
    )
    deleted_ours, deleted_java = files - data_files(ours), files - data_files(theirs)
    assert deleted_ours == deleted_java
    gone_groups = {Path(f).name.split("_")[0] for f in deleted_java} & replaced
    # commits c1, c2, the replacecommit, c4..c6: 4 retained keep the replacecommit as the earliest commit to retain
    assert bool(gone_groups) == (retained == 3), (retained, sorted(deleted_java))

    # the archive after the clean: the replacecommit stays while the clean's earliest instant to retain has not passed
    # it (retained 4), and may go once it has (retained 3)
    run_archive(
        HudiTable(str(ours)), ArchiveConfig.from_options(archive, table_properties=HudiTable(str(ours)).config.raw)
    )
    _call_typed(java_hudi, theirs, "archive_commits", min_commits=2, max_commits=3, retain_commits=1)
    assert _commit_instants(ours) == _commit_instants(theirs)
    assert (f"{replacecommit}.replacecommit" in _commit_instants(ours)) == (retained == 4), _commit_instants(ours)
