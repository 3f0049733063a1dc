"""Hudi's metadata table (``.hoodie/metadata``, table version 6): its records (:mod:`.records`), reading the ``files``
partition (:mod:`.reader`), writing it as Java does (:mod:`.writer`) and the commit path's step that keeps it up to
date with every completed instant (:mod:`.sync`)."""
