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

from tests.java.harness import JavaHudi
from tests.java.interop import JavaTable, data_files, procedure


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
