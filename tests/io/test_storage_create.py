"""``Storage.create_if_absent``: timeline files are never overwritten."""

from __future__ import annotations

from pathlib import Path

import pytest

from lake_orchestration.errors import FileAlreadyExistsError, StorageError
from lake_orchestration.io.storage import Storage


def test_storage_create_if_absent_new_file_written_with_parents(tmp_path: Path) -> None:
    s = Storage(str(tmp_path))
    path = s.join(".hoodie", "20250101000000000.commit.requested")
    s.create_if_absent(path, b"")
    s.create_if_absent(s.join(".hoodie", "x", "y.bin"), b"abc")
    assert (tmp_path / ".hoodie" / "20250101000000000.commit.requested").read_bytes() == b""
    assert s.read_bytes(s.join(".hoodie", "x", "y.bin")) == b"abc"


def test_storage_create_if_absent_existing_file_raises_and_keeps_content(tmp_path: Path) -> None:
    s = Storage(str(tmp_path))
    path = s.join(".hoodie", "20250101000000000.commit")
    s.create_if_absent(path, b"original")
    with pytest.raises(FileAlreadyExistsError) as err:
        s.create_if_absent(path, b"overwritten?")
    assert err.value.path == path
    assert path in str(err.value)
    assert (tmp_path / ".hoodie" / "20250101000000000.commit").read_bytes() == b"original"
    # No temporary file is left behind next to it.
    assert sorted(p.name for p in (tmp_path / ".hoodie").iterdir()) == ["20250101000000000.commit"]


def test_storage_create_if_absent_is_a_storage_error(tmp_path: Path) -> None:
    s = Storage(str(tmp_path))
    s.create_if_absent(s.join("f"), b"1")
    with pytest.raises(StorageError):
        s.create_if_absent(s.join("f"), b"2")


def test_storage_write_bytes_overwrites_data_file(tmp_path: Path) -> None:
    s = Storage(str(tmp_path))
    s.write_bytes(s.join("p", "data.parquet"), b"1")
    s.write_bytes(s.join("p", "data.parquet"), b"22")
    assert s.read_bytes(s.join("p", "data.parquet")) == b"22"
    assert s.size(s.join("p", "data.parquet")) == 2


def test_storage_read_missing_file_raises_naming_path(tmp_path: Path) -> None:
    s = Storage(str(tmp_path))
    with pytest.raises(StorageError, match=r"missing\.bin"):
        s.read_bytes(s.join("missing.bin"))
