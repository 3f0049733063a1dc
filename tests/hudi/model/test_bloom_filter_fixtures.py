"""The bloom filter against Java: rebuild every fixture footer byte for byte (reference/hudi/base-file.md §2.5)."""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from lake_orchestration.hudi.model.bloom_filter import (
    FOOTER_BLOOM_KEY,
    FOOTER_TYPE_CODE_KEY,
    DynamicBoundedBloomFilter,
    HoodieBloomFilter,
    bloom_footer,
)
from tests.conftest import FIXTURE_TABLES, HudiFixture, require_shared

pytestmark = pytest.mark.fixtures

RECORD_KEY = "_hoodie_record_key"
# Base files with / without a bloom footer. The v6 tables of HudiFixture hold 30 / 3; reference/hudi/base-file.md's
# "46 with, 6 without" counts every zip under fixtures/hudi-tables, i.e. the table-version-8 tables as well.
V6_FILES_WITH_AND_WITHOUT = (30, 3)
ALL_FILES_WITH_AND_WITHOUT = (46, 6)


def _base_files(base: Path) -> list[Path]:
    return sorted(p for p in base.rglob("*.parquet") if "__MACOSX" not in p.parts and ".hoodie" not in p.parts)


def _bloom_files(base: Path) -> list[tuple[Path, dict[str, str]]]:
    out = []
    for path in _base_files(base):
        raw = pq.read_metadata(path).metadata or {}
        meta = {k.decode(): v.decode() for k, v in raw.items()}
        if FOOTER_BLOOM_KEY in meta:
            out.append((path, meta))
    return out


def _keys(path: Path) -> list[str]:
    return pq.read_table(path, columns=[RECORD_KEY]).column(RECORD_KEY).to_pylist()


# Tables whose base files carry no bloom footer: empty tables, and meta fields off (no keys to index).
_NO_BLOOM = {HudiFixture.COW_EMPTY, HudiFixture.MOR_EMPTY, HudiFixture.COW_NO_METAFIELDS}


@pytest.mark.parametrize("fixture", [f for f in HudiFixture if f not in _NO_BLOOM], ids=lambda f: f.name)
def test_fixture_footers_rebuilt_byte_for_byte(
    hudi_fixture: Callable[[HudiFixture], Path], fixture: HudiFixture
) -> None:
    files = _bloom_files(hudi_fixture(fixture))
    assert files, f"{fixture.value}: expected base files with a {FOOTER_BLOOM_KEY} footer"
    for path, meta in files:
        keys = _keys(path)
        footer = meta[FOOTER_BLOOM_KEY]
        bf = HoodieBloomFilter.create()
        bf.add_all(keys)
        assert bf.serialize() == footer, f"{path.name}: rebuilt filter differs from the Java footer"
        assert meta.get(FOOTER_TYPE_CODE_KEY) == bf.type_code == "DYNAMIC_V0", path.name

        # The helper writes exactly these two entries, and the one-key-at-a-time path agrees with add_all.
        assert bloom_footer(keys) == {FOOTER_BLOOM_KEY: footer, FOOTER_TYPE_CODE_KEY: "DYNAMIC_V0"}
        one_by_one = HoodieBloomFilter.create()
        for k in keys:
            one_by_one.add(k)
        assert one_by_one.serialize() == footer, path.name

        read = HoodieBloomFilter.deserialize(footer, meta.get(FOOTER_TYPE_CODE_KEY))
        assert isinstance(read, DynamicBoundedBloomFilter)
        assert (read.num_rows, read.current_nb_record, read.num_entries) == (1, len(keys), 60000), path.name
        assert all(read.might_contain(k) for k in keys), path.name
        assert read.might_contain_all(keys).all(), path.name
        assert read.serialize() == footer, path.name


def _assert_rebuilt(path: Path, meta: dict[str, str]) -> None:
    bf = HoodieBloomFilter.create()
    bf.add_all(_keys(path))
    assert bf.footer() == {k: meta[k] for k in (FOOTER_BLOOM_KEY, FOOTER_TYPE_CODE_KEY)}, path


def test_every_v6_fixture_bloom_footer_is_covered(hudi_fixture: Callable[[HudiFixture], Path]) -> None:
    """Guard against the per-fixture test silently skipping: every v6 bloom footer exists and was checked."""
    with_bloom = without = 0
    for fixture in HudiFixture:
        base = hudi_fixture(fixture)
        n = len(_bloom_files(base))
        with_bloom += n
        without += len(_base_files(base)) - n
    assert (with_bloom, without) == V6_FILES_WITH_AND_WITHOUT


def test_all_fixture_zips_including_v8(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The other fixture tables (table version 8, Hudi 1.x) use the same filter: all 46 footers rebuild exactly."""
    require_shared()
    root = tmp_path_factory.mktemp("bloom-all-zips")
    with_bloom = without = 0
    for i, zpath in enumerate(sorted(FIXTURE_TABLES.rglob("*.zip"))):
        dest = root / str(i)
        with zipfile.ZipFile(zpath) as zf:
            zf.extractall(dest, [m for m in zf.namelist() if not m.startswith("__MACOSX")])
        files = _bloom_files(dest)
        with_bloom += len(files)
        without += len(_base_files(dest)) - len(files)
        for path, meta in files:
            _assert_rebuilt(path, meta)
    assert (with_bloom, without) == ALL_FILES_WITH_AND_WITHOUT


def test_footer_without_type_code_would_be_misread(hudi_fixture: Callable[[HudiFixture], Path]) -> None:
    """A DYNAMIC_V0 payload parsed as SIMPLE (type code missing) is refused instead of yielding wrong bits."""
    _path, meta = _bloom_files(hudi_fixture(HudiFixture.COW_NONPARTITIONED))[0]
    with pytest.raises(ValueError, match="trailing byte"):
        HoodieBloomFilter.deserialize(meta[FOOTER_BLOOM_KEY], None)
