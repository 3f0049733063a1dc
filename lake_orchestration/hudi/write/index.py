"""Tagging: which file group holds each incoming key (an index over the latest file slices).

Keys come from the base file's ``_hoodie_record_key`` column and from the committed log data blocks of the slice.
When the base file footer has Hudi's min/max keys and bloom filter (``hoodie_min_record_key``,
``org.apache.hudi.bloomfilter``), files that cannot hold any incoming key are pruned before their key column is
read, as Hudi's BLOOM index does (``HoodieBloomIndex``: range pruning, then bloom check, then key confirmation).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from lake_orchestration.hudi.log.block_content import decode_data_block
from lake_orchestration.hudi.log.log_format import LogBlockType
from lake_orchestration.hudi.log.scanner import InstantFilter, scan_blocks
from lake_orchestration.hudi.model.bloom_filter import FOOTER_BLOOM_KEY, FOOTER_TYPE_CODE_KEY, HoodieBloomFilter
from lake_orchestration.hudi.model.file_group import FileSlice
from lake_orchestration.hudi.model.schema import RECORD_KEY
from lake_orchestration.io.storage import Storage


def _java_order(key: str) -> bytes:
    return key.encode("utf-16-be")


def base_file_candidates(storage: Storage, fs: FileSlice, incoming: pa.Array) -> pa.Array | None:
    """Incoming keys the slice's base file may hold (footer pruning), or None to read all keys."""
    if fs.base_file is None:
        return pa.array([], pa.string())
    meta = storage.open_parquet(storage.join(fs.base_file.relative_path)).metadata.metadata or {}
    lo = meta.get(b"hoodie_min_record_key")
    hi = meta.get(b"hoodie_max_record_key")
    cand = incoming
    if lo is not None and hi is not None:
        lo_s, hi_s = lo.decode(), hi.decode()
        keys = incoming.to_pylist()
        # Java compares UTF-16 code units; for ASCII keys that equals Arrow's byte order.
        ascii_only = pc.all(pc.equal(pc.binary_length(incoming), pc.utf8_length(incoming))).as_py() is not False
        if lo_s.isascii() and hi_s.isascii() and ascii_only:
            mask = pc.and_(pc.greater_equal(incoming, lo_s), pc.less_equal(incoming, hi_s))
            cand = incoming.filter(mask)
        else:
            lo_b, hi_b = _java_order(lo_s), _java_order(hi_s)
            cand = pa.array([k for k in keys if lo_b <= _java_order(k) <= hi_b], pa.string())
    bloom_text = meta.get(FOOTER_BLOOM_KEY.encode())
    if bloom_text is not None and len(cand):
        type_code = meta.get(FOOTER_TYPE_CODE_KEY.encode())
        bloom = HoodieBloomFilter.deserialize(bloom_text.decode(), type_code.decode() if type_code else None)
        cand = cand.filter(pa.array(bloom.might_contain_all(cand)))
    return cand


def slice_keys(storage: Storage, fs: FileSlice, flt: InstantFilter, *, incoming: pa.Array | None = None) -> pa.Array:
    """Record keys the slice holds (base file keys + committed log data keys); with ``incoming``, only those
    of the incoming keys, reading the base key column only when the footer cannot rule the file out.

    Raises:
        CorruptLogBlockError: a committed log data block's content does not decode (before anything is written).
    """
    parts: list[pa.Array] = []
    if fs.base_file is not None:
        cand = base_file_candidates(storage, fs, incoming) if incoming is not None else None
        if cand is None or len(cand):
            pf = storage.open_parquet(storage.join(fs.base_file.relative_path))
            col = pf.read(columns=[RECORD_KEY]).column(RECORD_KEY).combine_chunks().cast(pa.string())
            parts.append(col if incoming is None else col.filter(pc.is_in(col, value_set=cand)))
    if fs.log_files:
        blocks, _ = scan_blocks(storage, fs.log_files, flt)
        schemas: dict = {}
        for b in blocks:
            if b.block_type not in (LogBlockType.AVRO_DATA_BLOCK, LogBlockType.PARQUET_DATA_BLOCK):
                continue
            t = decode_data_block(b, schemas)
            k = t.column(RECORD_KEY).combine_chunks().cast(pa.string())
            parts.append(k if incoming is None else k.filter(pc.is_in(k, value_set=incoming)))
    if not parts:
        return pa.array([], pa.string())
    return pc.unique(pa.concat_arrays(parts))


def tag_locations(
    storage: Storage,
    slices: Sequence[FileSlice],
    flt: InstantFilter,
    incoming_by_partition: dict[str, pa.Array],
) -> pa.Table:
    """``(partition, key, file_id)`` for every incoming key found in a latest slice of its partition."""
    rows_p: list[str] = []
    keys: list[pa.Array] = []
    fids: list[str] = []
    for fs in slices:
        inc = incoming_by_partition.get(fs.partition_path)
        if inc is None or len(inc) == 0:
            continue
        found = slice_keys(storage, fs, flt, incoming=inc)
        if len(found):
            keys.append(found)
            rows_p.extend([fs.partition_path] * len(found))
            fids.extend([fs.file_id] * len(found))
    if not keys:
        return pa.table(
            {"p": pa.array([], pa.string()), "k": pa.array([], pa.string()), "f": pa.array([], pa.string())}
        )
    return pa.table({"p": pa.array(rows_p, pa.string()), "k": pa.concat_arrays(keys), "f": pa.array(fids, pa.string())})
