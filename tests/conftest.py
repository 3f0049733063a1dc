"""Shared test fixtures: the Java-written Hudi tables in ../shared, one SparkSession per run, env isolation."""

from __future__ import annotations

import enum
import os
import shutil
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("LAKE_ORCH_SHARED", REPO_ROOT.parent / "shared")).resolve()
FIXTURE_TABLES = SHARED / "fixtures" / "hudi-tables"
FIXTURE_LOG_FILES = SHARED / "fixtures" / "hudi-log-files"
FIXTURE_HFILES = SHARED / "fixtures" / "hfiles"
# .ci/run sets this: in CI a missing ../shared is a failure, not a skip.
REQUIRE_SHARED = os.environ.get("LAKE_ORCH_REQUIRE_SHARED") == "1"
# scripts/test.sh runs the suite as two pytest processes at once: LAKE_ORCH_SHARD=A keeps shard A's tests, B the rest.
SHARD = os.environ.get("LAKE_ORCH_SHARD", "")
SHARD_A_DIRS = frozenset({"java", "cluster"})
"""Folders of shard A for what they share: tests/java one Java Hudi JVM per run, tests/cluster the SparkSession."""
SHARD_A_BALANCE: frozenset[str] = frozenset({"browser"})
"""Folders put in shard A only to balance the two (move one here to rebalance). tests/browser (~125 s): in a full
run at the end of stop 33 (quiet machine) A ended after 1439 s and B after 1636 s with tests/airflow and tests/browser
both in B; tests/airflow stays in B (its one spark test is in A by the marker rule)."""


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


# -- the two shards of scripts/test.sh ---------------------------------------------------------------------------


def shard_of(item: pytest.Item) -> str:
    """``"A"`` for a test of the one SparkSession (marker or fixture ``spark``) or the one Java JVM (tests/java), or
    of a folder put there for balance; else ``"B"``. Shard A is one process, so one SparkSession per run holds."""
    rel = Path(str(item.path)).resolve().relative_to(REPO_ROOT)
    folder = rel.parts[1] if len(rel.parts) > 2 and rel.parts[0] == "tests" else ""
    if folder in SHARD_A_DIRS | SHARD_A_BALANCE:
        return "A"
    if item.get_closest_marker("spark") is not None or "spark" in getattr(item, "fixturenames", ()):
        return "A"
    return "B"


@pytest.hookimpl(trylast=True)  # after any hook that adds markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not SHARD:
        return
    if SHARD not in ("A", "B"):
        raise pytest.UsageError(f"LAKE_ORCH_SHARD={SHARD!r}: expected A or B (or unset: every test)")
    keep = [i for i in items if shard_of(i) == SHARD]
    drop = [i for i in items if shard_of(i) != SHARD]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_configure(config: pytest.Config) -> None:
    if SHARD == "B":
        _refuse_spark_sessions()


def _refuse_spark_sessions() -> None:
    """Shard B runs beside shard A, which holds the run's one SparkSession: a test here that would start another (in
    this process) fails, naming the fix, instead of silently starting a second JVM."""
    from pyspark.sql import SparkSession

    def refuse(self: object, *args: object, **kwargs: object) -> NoReturn:
        raise RuntimeError(
            "a SparkSession was asked for in shard B of scripts/test.sh (LAKE_ORCH_SHARD=B): the run's one "
            "SparkSession lives in shard A; mark the test `spark` or use the `spark` fixture"
        )

    SparkSession.Builder.getOrCreate = refuse  # type: ignore[method-assign, assignment]
