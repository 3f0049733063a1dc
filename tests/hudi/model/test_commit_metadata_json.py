"""``HoodieCommitMetadata`` JSON: byte-identical round trip of every commit file Java Hudi wrote in the fixtures."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lake_orchestration.errors import CorruptFileError
from lake_orchestration.hudi.model.commit_metadata import CommitMetadata, WriteStat, jackson_pretty
from tests.conftest import HudiFixture

GetFixture = Callable[[HudiFixture], Path]
COMPLETED_SUFFIXES = (".commit", ".deltacommit", ".replacecommit")
# Inflight files holding the JSON "workload profile" (the other inflight files are empty or Avro).
WORKLOAD_PROFILE_SUFFIXES = (".inflight", ".deltacommit.inflight", ".replacecommit.inflight")


def _timeline_files(root: Path, suffixes: tuple[str, ...]) -> list[Path]:
    return sorted(
        p
        for p in (root / ".hoodie").iterdir()
        if p.is_file() and p.name.split(".", 1)[1] in {s.lstrip(".") for s in suffixes}
    )


@pytest.mark.fixtures
@pytest.mark.parametrize("fixture", list(HudiFixture), ids=lambda f: f.name)
def test_commit_metadata_every_completed_fixture_commit_round_trips_byte_identical(
    hudi_fixture: GetFixture, fixture: HudiFixture
) -> None:
    root = hudi_fixture(fixture)
    files = _timeline_files(root, COMPLETED_SUFFIXES)
    if fixture not in (HudiFixture.COW_EMPTY, HudiFixture.MOR_EMPTY):
        assert files, f"{fixture.name} has no completed commit files"
    for path in files:
        data = path.read_bytes()
        md = CommitMetadata.from_bytes(data, path=str(path))
        assert md.to_bytes() == data, path.name
        assert md.operation_type
        assert md.write_stats(), path.name
        if path.name.endswith(".replacecommit"):
            assert md.partition_to_replace_file_ids is not None
        else:
            assert md.partition_to_replace_file_ids is None


@pytest.mark.fixtures
@pytest.mark.parametrize("fixture", list(HudiFixture), ids=lambda f: f.name)
def test_commit_metadata_every_fixture_workload_profile_round_trips_byte_identical(
    hudi_fixture: GetFixture, fixture: HudiFixture
) -> None:
    for path in _timeline_files(hudi_fixture(fixture), WORKLOAD_PROFILE_SUFFIXES):
        data = path.read_bytes()
        assert CommitMetadata.from_bytes(data, path=str(path)).to_bytes() == data, path.name


@pytest.mark.fixtures
def test_commit_metadata_mor_deltacommit_delta_stats_fields(hudi_fixture: GetFixture) -> None:
    root = hudi_fixture(HudiFixture.MOR_SIMPLE_NONHIVE)
    path = root / ".hoodie" / "20250121000557095.deltacommit"
    md = CommitMetadata.from_bytes(path.read_bytes(), path=str(path))
    assert md.operation_type == "UPSERT"
    assert md.schema is not None and md.schema.startswith("{")
    log_stats = [s for s in md.write_stats() if s.is_delta and s.logFiles]
    assert log_stats, "the deltacommit wrote a log file"
    stat = log_stats[0]
    assert stat.path is not None and ".log." in stat.path
    assert stat.baseFile and stat.baseFile.endswith(".parquet")
    assert stat.logVersion == 1


def test_commit_metadata_empty_bytes_empty_metadata() -> None:
    md = CommitMetadata.from_bytes(b"", path="/t/.hoodie/1.commit")
    assert md.partition_to_write_stats == {} and md.operation_type is None and not md.compacted


@pytest.mark.parametrize("data", [b"not json", b"[1, 2]", b'{"partitionToWriteStats": 3}', b"\xff\xfe"])
def test_commit_metadata_malformed_json_raises_corrupt_file_naming_path(data: bytes) -> None:
    with pytest.raises(CorruptFileError) as err:
        CommitMetadata.from_bytes(data, path="/t/.hoodie/20250101000000000.commit")
    assert err.value.path == "/t/.hoodie/20250101000000000.commit"
    assert "20250101000000000.commit" in str(err.value)


def test_commit_metadata_synthetic_stats_jackson_layout() -> None:
    md = CommitMetadata(
        partition_to_write_stats={"p": [WriteStat(fileId="f-0", path="p/f.parquet", numWrites=2)]},
        extra_metadata={"schema": "{}"},
        operation_type="INSERT",
    )
    text = md.to_bytes().decode()
    assert text.startswith('{\n  "partitionToWriteStats" : {\n    "p" : [ {\n      "fileId" : "f-0",')
    assert '"prevCommit" : "null"' in text
    assert '"logFiles"' not in text  # not a delta stat
    assert text.endswith('  "operationType" : "INSERT"\n}')
    assert CommitMetadata.from_bytes(text.encode(), path="x").to_bytes() == text.encode()
    assert jackson_pretty({}) == "{ }" and jackson_pretty([]) == "[ ]"
