"""Write log files: a new file (next log version) per write, never an append, as Hudi 0.14+ does."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from lake_orchestration.errors import FileAlreadyExistsError
from lake_orchestration.hudi.log.block_content import (
    DeleteRecord,
    encode_avro_table,
    encode_delete_content,
    encode_parquet_data,
)
from lake_orchestration.hudi.log.log_format import ROLLBACK_COMMAND, HeaderKey, LogBlockType, encode_block
from lake_orchestration.hudi.model.file_group import LogFile, is_log_file_name
from lake_orchestration.hudi.model.instant import InstantTime
from lake_orchestration.io.storage import Storage


def avro_data_block(table: pa.Table, *, instant: str, schema: Mapping[str, Any], schema_json: str) -> bytes:
    """An AVRO_DATA_BLOCK (header INSTANT_TIME, SCHEMA) for the rows of ``table``."""
    content = encode_avro_table(table, dict(schema))
    return encode_block(
        LogBlockType.AVRO_DATA_BLOCK, [(HeaderKey.INSTANT_TIME, instant), (HeaderKey.SCHEMA, schema_json)], content
    )


def parquet_data_block(table: pa.Table, *, instant: str, schema_json: str) -> bytes:
    return encode_block(
        LogBlockType.PARQUET_DATA_BLOCK,
        [(HeaderKey.INSTANT_TIME, instant), (HeaderKey.SCHEMA, schema_json)],
        encode_parquet_data(table),
    )


def delete_block(records: Sequence[DeleteRecord], *, instant: str, schema_json: str | None = None) -> bytes:
    header: list[tuple[int, str]] = [(HeaderKey.INSTANT_TIME, instant)]
    if schema_json is not None:
        header.append((HeaderKey.SCHEMA, schema_json))
    return encode_block(LogBlockType.DELETE_BLOCK, header, encode_delete_content(records))


def rollback_command_block(*, instant: str, target_instant: str) -> bytes:
    """A ROLLBACK command block: INSTANT_TIME = rollback instant, TARGET_INSTANT_TIME = rolled-back instant."""
    return encode_block(
        LogBlockType.COMMAND_BLOCK,
        [
            # the order of the Java-written fixture (HashMap order; any order is valid)
            (HeaderKey.INSTANT_TIME, instant),
            (HeaderKey.COMMAND_BLOCK_TYPE, ROLLBACK_COMMAND),
            (HeaderKey.TARGET_INSTANT_TIME, target_instant),
        ],
        b"",
    )


def next_log_version(existing: Iterable[str], *, file_id: str, base_instant: str) -> int:
    """1 + the highest version among log files of the same file id and base instant (any token); 1 if none."""
    best = 0
    for name in existing:
        if not is_log_file_name(name):
            continue
        lf = LogFile.parse(name)
        if lf.file_id == file_id and lf.base_instant == base_instant:
            best = max(best, lf.version)
    return best + 1


def write_log_file(
    storage: Storage,
    *,
    partition_path: str,
    file_id: str,
    base_instant: str,
    write_token: str,
    blocks: Sequence[bytes],
) -> LogFile:
    """Write ``blocks`` to a new log file of the slice ``(file_id, base_instant)``.

    The version is the next free one; if another writer takes it first, roll over to the next (never append,
    never overwrite).
    """
    part_dir = storage.join(partition_path)
    names = [f.name for f in storage.list_dir(part_dir)]
    version = next_log_version(names, file_id=file_id, base_instant=base_instant)
    data = b"".join(blocks)
    for _ in range(100):
        lf = LogFile(
            file_id, InstantTime(base_instant), version, write_token, size=len(data), partition_path=partition_path
        )
        try:
            storage.create_if_absent(storage.join(partition_path, lf.name), data)
            return lf
        except FileAlreadyExistsError:
            version += 1
    raise FileAlreadyExistsError(storage.join(partition_path, f".{file_id}_{base_instant}.log.{version}"))
