"""Java's metadata-table (MDT) validation of a table, as hudi-utilities' ``HoodieMetadataTableValidator`` runs it
with ``--validate-latest-base-files --validate-latest-file-slices`` (issue 26).

hudi-utilities is not served by this project's Maven mirror (see :mod:`tests.java.harness`), so the validator itself
cannot run; its checks are computed by the driver's ``mdt_views`` command from the classes the Spark bundle does hold
(two in-memory file-system views on one meta client, MDT on and off). :func:`validate_metadata_table` runs, on the
table's latest completed instant:

- the bundle's ``validate_metadata_table_files`` procedure (verbose: one row per file of either listing): every file
  of a storage listing is in the MDT with its size, and no other;
- the partitions listed through the MDT are those a storage listing finds;
- per partition, the latest base files (sorted by name: name, file id, size) and the latest file slices (sorted by
  file group and base instant: base file name and size; log files, a differing one failing when it is committed, as
  the validator decides) through the MDT equal those of a storage listing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lake_orchestration.hudi.metadata.reader import metadata_file_listing
from lake_orchestration.hudi.metadata.writer import metadata_table
from lake_orchestration.hudi.model.instant import State
from lake_orchestration.hudi.table.hudi_table import HudiTable
from tests.java.harness import JavaHudi
from tests.java.interop import JavaTable, assert_rows_equal, data_files, java_read, procedure

MDT_DEFAULTS = {
    "hoodie.metadata.enable": "true",
    # 0.15's defaults, spelled out: the files partition only
    "hoodie.metadata.index.column.stats.enable": "false",
    "hoodie.metadata.index.bloom.filter.enable": "false",
    "hoodie.metadata.record.index.enable": "false",
}
"""Java's write options for a table keeping its metadata table (0.15's defaults)."""
READ_MDT = {"hoodie.metadata.enable": "true"}
"""Java's read options listing files through the metadata table."""


def storage_listing(path: Path) -> dict[tuple[str, str], int]:
    """(partition, file name) -> size of every data file on storage (base and log files)."""
    return {(str(Path(rel).parent), Path(rel).name): (path / rel).stat().st_size for rel in data_files(path)}


def java_file_listing(java: JavaHudi, table: JavaTable | Path, what: str) -> dict[tuple[str, str], int]:
    """Java's ``validate_metadata_table_files`` (verbose): no file missing from either listing, no size differing;
    returns (partition, file name) -> size as the MDT lists it."""
    rows = procedure(java, "validate_metadata_table_files", table, verbose=True)
    wrong = [r for r in rows if not (r["is_present_in_fs"] and r["is_present_in_metadata"])]
    wrong += [r for r in rows if r["fs_size"] != r["metadata_size"]]
    assert not wrong, f"{what}: Java's validate_metadata_table_files finds differences: {wrong[:5]}"
    return {(r["partition"], r["file_name"]): r["metadata_size"] for r in rows}


def latest_slices_diffs(java: JavaHudi, table: JavaTable | Path) -> dict[str, Any]:
    """The driver's ``mdt_views`` answer for the table (see ``hudi_java_driver.py``)."""
    path = table.path if isinstance(table, JavaTable) else table
    return java.call("mdt_views", path=str(path))


def _show(value: Any, limit: int = 1500) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[:limit] + "…"


def validate_metadata_table(java: JavaHudi, table: JavaTable | Path, what: str = "") -> dict[str, Any]:
    """Java validates the table's MDT: file listings (``validate_metadata_table_files``, equal to a storage listing),
    partitions, latest base files and latest file slices (``HoodieMetadataTableValidator``'s checks). Every check
    runs; one AssertionError names each failing one (the partition and the differing files or slices). Returns the
    ``mdt_views`` answer."""
    path = table.path if isinstance(table, JavaTable) else table
    failures: list[str] = []
    try:
        listed = java_file_listing(java, table, what)
        storage = storage_listing(path)
        if listed != storage:
            failures.append(f"Java's MDT listing != storage: {sorted(set(listed) ^ set(storage))[:5]}")
    except AssertionError as err:
        failures.append(str(err))
    views = latest_slices_diffs(java, path)
    partitions = views["partitions"]
    if partitions["metadata"] != partitions["fs"]:
        failures.append(f"partitions through the MDT {partitions['metadata']} != storage's {partitions['fs']}")
    for d in views["diffs"]:
        failures.append(
            f"HoodieMetadataTableValidator's {d['check']} check fails for partition {d['partition']!r} at "
            f"{views['instant']}: {d['detail']}; through the MDT: {_show(d['metadata'])}; storage listing: "
            f"{_show(d['fs'])}"
        )
    assert not failures, f"{what}: " + "\n".join(failures)
    return views


def our_listing(path: Path) -> dict[tuple[str, str], int]:
    """(partition, file name) -> size as our MDT reader lists the table's files."""
    listing = metadata_file_listing(HudiTable(str(path)))
    assert listing is not None, "our reader did not list through the metadata table"
    return {(p, f.name): f.size for p, files in listing.items() for f in files}


def check_metadata_table(java: JavaHudi, table: JavaTable, what: str) -> None:
    """Java validates the MDT (:func:`validate_metadata_table`: ``validate_metadata_table_files`` equals the storage
    listing; latest base files and latest file slices through the MDT equal a storage listing's); Java reads the
    model through the MDT; our reader agrees; no MDT instant is left pending."""
    validate_metadata_table(java, table, what)
    assert our_listing(table.path) == storage_listing(table.path), f"{what}: our MDT reader's listing != storage"
    assert_rows_equal(java_read(java, table, **READ_MDT), table.expected(), f"{what}: Java's snapshot with the MDT")
    mdt = metadata_table(HudiTable(str(table.path)))
    assert not [i.file_name for i in mdt.timeline.instants if i.state is not State.COMPLETED], what
