"""Writing Hudi v6 tables: key generation, base files with Hudi's footer, file-group tasks, the commit protocol."""

from lake_orchestration.hudi.write.writer import WriteOperation, WriteOptions, WriteResult, write_table

__all__ = ["WriteOperation", "WriteOptions", "WriteResult", "write_table"]
