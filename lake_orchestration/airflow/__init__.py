"""The Apache Airflow provider (``pip install "lake-orchestration[airflow]"``, Airflow 3.3): the same table services
as the CLI and the Dagster shell, as Airflow hooks, operators, sensors and triggers.

- :mod:`.hooks`: :class:`~.hooks.HudiTableHook` — a table's base path, storage options (secrets only in the
  Airflow connection) and ``hoodie.*`` options from a connection of type ``hudi``.
- :mod:`.operators`: schedule compaction (returns the plan instant), list pending plans (FIFO/LIFO, at most N: the
  input of ``.expand()``), execute and commit one plan (engine ``local`` or ``spark``), clean, archive (then merge
  small archive files), roll back; each returns its typed result's ``to_json_obj()`` as the XCom.
- :mod:`.incremental`: :class:`~.incremental.HudiIncrementalPullOperator` — the rows changed since the previous run
  (Hudi's incremental query; the first run a snapshot) written to a Parquet file, the checkpoint in the asset state
  store.
- :mod:`.sensors` and :mod:`.triggers`: deferrable sensors for pending compaction plans, stale inflight writes and
  new commits past a checkpoint, and :class:`~.triggers.HudiCommitTrigger`, an event trigger (a new completed
  commit) for asset watchers.
- :mod:`.provider`: ``get_provider_info`` (the ``apache_airflow_provider`` entry point).
- ``example_dags/``: a DAG per service.

Only this package imports ``airflow`` (an import-linter contract); the rest of lake_orchestration works without it.
"""
