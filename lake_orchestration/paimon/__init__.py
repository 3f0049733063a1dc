"""Apache Paimon primary-key tables: the model (``model/``), a reader of a filesystem-catalog table (``table``) and the
merge-tree compaction picker (``services/compaction``)."""
