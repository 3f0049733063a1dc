"""A corrupt snapshot, schema, manifest list or manifest stops compaction with a ``CorruptFileError`` naming the file,
the snapshot it was read for and what was expected, before anything is written: on copies of the Java-written golden
tables (conftest.py), corrupted the ways storage corrupts files (truncated, overwritten with garbage, bytes flipped in
the header or in a data block)."""

from __future__ import annotations

import random
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from lake_orchestration.cli.app import cli
from lake_orchestration.errors import CorruptFileError
from lake_orchestration.paimon.services.compaction import plan_compaction, run_compaction
from lake_orchestration.paimon.table import PaimonTable

NAME = "test_pk_full_text_golden"
SNAPSHOT = 7  # snapshot 8 is Java's upgrade 0 -> 1 of what snapshot 7 holds: there is work to plan and run
SYNC = 16  # Avro sync marker size: the last bytes of a container


def _truncate(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _garbage(data: bytes) -> bytes:
    rnd = random.Random(7)
    return bytes(rnd.randrange(256) for _ in data)


def _flip_header(data: bytes) -> bytes:
    """Bytes 8..40 inverted: inside the Avro header's metadata map / the JSON text (not valid UTF-8 any more)."""
    out = bytearray(data)
    for i in range(8, 40):
        out[i] ^= 0xFF
    return bytes(out)


def _flip_last_block(data: bytes) -> bytes:
    """The 24 bytes before the final sync marker inverted: the (compressed) records of the last Avro block; for
    JSON, the end of the object."""
    out = bytearray(data)
    for i in range(len(out) - SYNC - 24, len(out) - SYNC):
        out[i] ^= 0xFF
    return bytes(out)


MODES: dict[str, Callable[[bytes], bytes]] = {
    "truncated": _truncate,
    "garbage": _garbage,
    "flipped-header": _flip_header,
    "flipped-last-block": _flip_last_block,
}
KINDS = ("snapshot", "schema", "manifest-list", "manifest")
EXPECTED = {
    "snapshot": "Java Snapshot",
    "schema": "Java TableSchema",
    "manifest-list": "ManifestFileMeta records",
    "manifest": "ManifestEntry records",
}


def _copy_at(paimon_golden: Path, dest: Path) -> PaimonTable:
    shutil.copytree(paimon_golden / NAME, dest)
    for later in PaimonTable.open(str(dest)).snapshot_ids():
        if later > SNAPSHOT:
            (dest / "snapshot" / f"snapshot-{later}").unlink()
    (dest / "snapshot" / "LATEST").write_text(str(SNAPSHOT))
    return PaimonTable.open(str(dest))


def _corrupt(table: PaimonTable, dest: Path, kind: str, mode: str) -> Path:
    snap = table.latest_snapshot()
    assert snap is not None and snap.id == SNAPSHOT
    if kind == "snapshot":
        target = dest / "snapshot" / f"snapshot-{SNAPSHOT}"
    elif kind == "schema":
        target = dest / "schema" / f"schema-{snap.schema_id}"
    elif kind == "manifest-list":
        target = dest / "manifest" / snap.base_manifest_list
    else:
        target = dest / "manifest" / table.manifest_list(snap.base_manifest_list)[0].file_name
    target.write_bytes(MODES[mode](target.read_bytes()))
    return target


def _listing(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("kind", KINDS)
def test_corrupt_file_fails_schedule_and_run_naming_file_and_snapshot_nothing_written(
    paimon_golden: Path, tmp_path: Path, kind: str, mode: str
) -> None:
    dest = tmp_path / NAME
    table = _copy_at(paimon_golden, dest)
    assert not plan_compaction(table).is_empty, (
        "the uncorrupted copy must have work, else 'nothing written' proves nothing"
    )
    target = _corrupt(table, dest, kind, mode)
    before = _listing(dest)

    with pytest.raises(CorruptFileError) as caught:
        plan_compaction(PaimonTable.open(str(dest)))
    err = caught.value
    assert type(err) is CorruptFileError
    assert err.path == str(target)
    assert "expected" in err.detail and EXPECTED[kind] in err.detail
    if kind in ("manifest-list", "manifest"):
        assert f"read for snapshot {SNAPSHOT}" in err.detail

    with pytest.raises(CorruptFileError):
        run_compaction(PaimonTable.open(str(dest)))

    runner = CliRunner()
    for command in ("schedule", "run"):
        result = runner.invoke(cli, ["paimon", "compaction", command, str(dest)])
        assert result.exit_code != 0, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1, result.output
        assert lines[0].startswith("Error: Cannot decode ") and str(target) in lines[0], lines[0]
        assert "Traceback" not in result.output
    assert _listing(dest) == before
