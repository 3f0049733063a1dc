"""Storage: one object per table base path; timeline files are created only if absent."""

import sys
import tempfile
from pathlib import Path

from lake_orchestration.errors import FileAlreadyExistsError
from lake_orchestration.io import Storage

scratch = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
local = Storage(str(scratch / "tbl"))  # a local path or file:///...
path = local.join(".hoodie", "20250101000000000.commit.requested")
local.create_if_absent(path, b"")  # O_EXCL temp file, fsync, then link(): atomic
try:
    local.create_if_absent(path, b"again")
except FileAlreadyExistsError as err:
    print("refused:", err)
assert local.read_bytes(path) == b""
print([(f.name, f.size) for f in local.list_dir(local.join(".hoodie"))])

# Object stores: the options go to pyarrow's S3FileSystem / GcsFileSystem unchanged. Building the
# Storage does not touch the network; the first listing or read does.
s3 = Storage("s3://my-bucket/lake/trips", options={"region": "eu-west-1", "anonymous": True})
print(s3.is_local, s3.base_path, s3.uri(s3.join(".hoodie")))
assert s3.uri(s3.join(".hoodie")) == "s3://my-bucket/lake/trips/.hoodie"
