"""A lock location that cannot hold the lock file is a clear StorageError naming the lock file and the key, not a
bare OSError, and nothing of the service runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from lake_orchestration.errors import StorageError
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.archive import run_archive
from lake_orchestration.hudi.services.archive.config import ArchiveConfig
from lake_orchestration.hudi.table import HudiTable
from tests.safety.test_table_lock import _table


@pytest.mark.parametrize("where", ["file/sub", "file"])
def test_lock_path_under_a_file_is_a_storage_error_naming_the_lock_file(tmp_path: Path, where: str) -> None:
    path = _table(tmp_path, commits=1, table_type=TableType.COPY_ON_WRITE)
    (tmp_path / "file").write_text("not a folder")
    lock_dir = tmp_path / where
    before = sorted(p.name for p in (path / ".hoodie").iterdir())
    options = {"hoodie.write.lock.filesystem.path": str(lock_dir), "hoodie.write.lock.wait_time_ms": "200"}
    with pytest.raises(StorageError) as info:
        run_archive(HudiTable(str(path)), ArchiveConfig.from_options(options))
    message = str(info.value)
    assert f"{lock_dir}/lock" in message and "hoodie.write.lock.filesystem.path" in message, message
    assert sorted(p.name for p in (path / ".hoodie").iterdir()) == before


def test_a_failed_section_keeps_its_own_error_when_the_lock_cannot_be_released(tmp_path: Path) -> None:
    """The caller sees why the section failed, not that the lock file could not be read back afterwards."""
    from lake_orchestration.hudi.table.lock import table_lock

    path = _table(tmp_path, commits=1, table_type=TableType.COPY_ON_WRITE)
    lock = path / ".hoodie" / "lock"
    with pytest.raises(ValueError, match="the section failed"), table_lock(HudiTable(str(path)), operation="test"):
        assert lock.is_file()
        lock.unlink()
        lock.mkdir()  # release can neither read nor delete it now
        raise ValueError("the section failed")
    # without a failure in the section, the release error is what the caller sees
    lock.rmdir()
    with pytest.raises(StorageError), table_lock(HudiTable(str(path)), operation="test"):
        lock.unlink()
        lock.mkdir()
    lock.rmdir()
