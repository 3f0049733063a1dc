"""The ``lake-orch`` commands, by what they do: :mod:`.inspect` (table, timeline, fsview, read), :mod:`.write`
(write, generate), :mod:`.compaction` (compaction, log-compaction), :mod:`.maintenance` (rollback, clean, savepoint,
archive) and :mod:`.demo`. Each command parses its options, calls the library and hands the result to
:mod:`lake_orchestration.cli.output`."""
