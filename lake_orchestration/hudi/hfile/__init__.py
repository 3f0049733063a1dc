"""HFile v3, the container Hudi 0.14/0.15 uses for the bootstrap index and the metadata table (hudi-io
``hfile_format.md``): a reader of any HBase/Hudi-written file and a writer that produces HBase 2.4's bytes."""

from lake_orchestration.hudi.hfile.block import BlockType, ChecksumType, Compression
from lake_orchestration.hudi.hfile.reader import DataBlockEntry, HFileCursor, HFileReader, Record, SeekResult
from lake_orchestration.hudi.hfile.trailer import KV_COMPARATOR, Trailer
from lake_orchestration.hudi.hfile.writer import HFileWriter, HFileWriterOptions

__all__ = [
    "KV_COMPARATOR",
    "BlockType",
    "ChecksumType",
    "Compression",
    "DataBlockEntry",
    "HFileCursor",
    "HFileReader",
    "HFileWriter",
    "HFileWriterOptions",
    "Record",
    "SeekResult",
    "Trailer",
]
