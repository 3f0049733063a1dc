"""Writing Hudi v6 tables: key generation, base files, the local (in-process) writer."""

from lake_orchestration.hudi.write.local_writer import WriteOperation, WriteOptions, WriteResult, write_table

__all__ = ["WriteOperation", "WriteOptions", "WriteResult", "write_table"]
