"""Hudi's metadata table (``.hoodie/metadata``, table version 6): its records (:mod:`.records`) and reading the
``files`` partition (:mod:`.reader`)."""
