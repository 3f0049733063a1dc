"""Shared test fixtures: the Java-written Hudi tables in ../shared, one SparkSession per run, env isolation."""

from __future__ import annotations

import enum
import os
import shutil
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("LAKE_ORCH_SHARED", REPO_ROOT.parent / "shared")).resolve()
FIXTURE_TABLES = SHARED / "fixtures" / "hudi-tables"
FIXTURE_LOG_FILES = SHARED / "fixtures" / "hudi-log-files"
FIXTURE_HFILES = SHARED / "fixtures" / "hfiles"
# .ci/run sets this: in CI a missing ../shared is a failure, not a skip.
REQUIRE_SHARED = os.environ.get("LAKE_ORCH_REQUIRE_SHARED") == "1"


def require_shared(fixture_dir: Path = FIXTURE_TABLES) -> None:
    """Skip (or fail, in CI) when the shared fixtures are not beside the checkout."""
    if fixture_dir.is_dir():
        return
    reason = (
        f"Java-written fixtures not found at {fixture_dir}: they live in ../shared beside the "
        "checkout (CI has them; a user's clone does not)"
    )
    if REQUIRE_SHARED:
        pytest.fail(reason)
    pytest.skip(reason)


class HudiFixture(enum.Enum):
    """The table-version-6 fixture tables written by Java Hudi (catalogue: reference/hudi/fixtures.md)."""

    TRIPS_MOR_AVRO = "quickstart_trips_table/mor/avro/v6_trips_8i3d"
    COW_COMPLEX_HIVE = "sample_table/cow/v6_complexkeygen_hivestyle"
    COW_EMPTY = "sample_table/cow/v6_empty"
    COW_NONPARTITIONED = "sample_table/cow/v6_nonpartitioned"
    COW_NO_METAFIELDS = "sample_table/cow/v6_simplekeygen_hivestyle_no_metafields"
    COW_SIMPLE_NONHIVE = "sample_table/cow/v6_simplekeygen_nonhivestyle"
    COW_OVERWRITE_TABLE = "sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable"
    COW_TIMEBASED = "sample_table/cow/v6_timebasedkeygen_nonhivestyle"
    MOR_COMPLEX_HIVE = "sample_table/mor/parquet/v6_complexkeygen_hivestyle"
    MOR_EMPTY = "sample_table/mor/parquet/v6_empty"
    MOR_ROLLBACK = "sample_table/mor/parquet/v6_nonpartitioned_rollback"
    MOR_SIMPLE_NONHIVE = "sample_table/mor/parquet/v6_simplekeygen_nonhivestyle"

    @property
    def zip_path(self) -> Path:
        return FIXTURE_TABLES / f"{self.value}.zip"

    @property
    def table_name(self) -> str:
        return self.value.rsplit("/", 1)[-1]


@pytest.fixture(scope="session")
def fixture_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hudi-fixtures")


def extract_fixture(fixture: HudiFixture, dest_root: Path) -> Path:
    """Unzip a fixture table under ``dest_root`` (once) and return its base path."""
    require_shared()
    dest = dest_root / fixture.name
    base = dest / fixture.table_name
    if not base.is_dir():
        with zipfile.ZipFile(fixture.zip_path) as zf:
            members = [m for m in zf.namelist() if not m.startswith("__MACOSX")]
            zf.extractall(dest, members)
    return base


@pytest.fixture
def hudi_fixture(fixture_cache: Path):  # type: ignore[no-untyped-def]
    """Read-only access: ``hudi_fixture(HudiFixture.X)`` -> extracted base path (shared, do not modify)."""

    def _get(fixture: HudiFixture) -> Path:
        return extract_fixture(fixture, fixture_cache)

    return _get


@pytest.fixture
def fresh_fixture(fixture_cache: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    """A private copy of a fixture table that the test may modify."""

    def _get(fixture: HudiFixture) -> Path:
        src = extract_fixture(fixture, fixture_cache)
        dst = tmp_path / fixture.table_name
        shutil.copytree(src, dst)
        return dst

    return _get


def fixture_log_files() -> list[Path]:
    """Every single log file under ../shared/fixtures/hudi-log-files."""
    require_shared()
    return sorted(p for p in FIXTURE_LOG_FILES.rglob(".*") if p.is_file() and ".log." in p.name)


@pytest.fixture(autouse=True)
def _isolate_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Keep tests hermetic: no user-level lake_orchestration or Hudi configuration leaks in."""
    for key in list(os.environ):
        if key.startswith(("LAKE_ORCH_", "HUDI_CONF")) and key not in (
            "LAKE_ORCH_SHARED",
            "LAKE_ORCH_REQUIRE_SHARED",
        ):
            monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("TZ", "UTC")
    yield


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    """The one SparkSession of the test run (local[2])."""
    from lake_orchestration.engines.spark_session import local_spark_session

    session = local_spark_session(master="local[2]", app_name="lake-orchestration-tests")
    yield session
    session.stop()
