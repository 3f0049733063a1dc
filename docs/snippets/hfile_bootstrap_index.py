"""Write an HFile, read it back, and build the two bootstrap index files of a bootstrapped table."""

import sys
import tempfile
from pathlib import Path

from lake_orchestration.hudi.hfile import Compression, HFileReader, HFileWriter, HFileWriterOptions, SeekResult
from lake_orchestration.hudi.hfile.bootstrap_index import (
    FILE_ID_INDEX_PATH,
    PARTITION_INDEX_PATH,
    BootstrapFileMapping,
    BootstrapIndexReader,
    write_bootstrap_index,
)
from lake_orchestration.hudi.model.avro.bootstrap import FilePath, FileStatus

out = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())

# --8<-- [start:hfile]
writer = HFileWriter(HFileWriterOptions(block_size=16 * 1024, compression=Compression.GZ))
for i in range(5000):
    writer.append(f"hudi-key-{i:09d}", f"hudi-value-{i:09d}".encode())  # keys in ascending order
writer.append_file_info("my.key", b"my value")
data = writer.finish()

reader = HFileReader(data, verify_checksums=True)
print(reader.num_entries, "entries in", len(reader.data_blocks), "data blocks")
print(reader.get("hudi-key-000001234"))  # b'hudi-value-000001234'
cursor = reader.cursor()  # forward-only, Hudi's seekTo semantics
assert cursor.seek_to("hudi-key-000000100") is SeekResult.FOUND
assert cursor.seek_to("hudi-key-000000100a") is SeekResult.IN_RANGE
# --8<-- [end:hfile]

# --8<-- [start:bootstrap]
mappings = [
    BootstrapFileMapping(
        bootstrap_base_path="file:/data/source",
        bootstrap_partition_path="2024/01/01",
        partition_path="2024/01/01",
        file_id=f"0000000{n}-0000-0000-0000-000000000000-0",
        bootstrap_file_status=FileStatus(path=FilePath(uri=f"file:/data/source/2024/01/01/part-{n}.parquet")),
    )
    for n in range(3)
]
files = write_bootstrap_index(mappings, bootstrap_base_path="file:/data/source", created_timestamp=0)
(out / PARTITION_INDEX_PATH).parent.mkdir(parents=True, exist_ok=True)
(out / FILE_ID_INDEX_PATH).parent.mkdir(parents=True, exist_ok=True)
(out / PARTITION_INDEX_PATH).write_bytes(files.partition_index)
(out / FILE_ID_INDEX_PATH).write_bytes(files.file_id_index)

index = BootstrapIndexReader(files.partition_index, files.file_id_index)
print(index.indexed_partitions())  # ['2024/01/01']
print([m.bootstrap_file_status.uri for m in index.mappings_for_partition("2024/01/01")])
# --8<-- [end:bootstrap]
assert len(index.mappings_for_partition("2024/01/01")) == 3
