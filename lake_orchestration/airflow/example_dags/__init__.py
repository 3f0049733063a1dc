"""Example DAGs, one per table service: copy one into your DAGs folder, or point ``dags_folder`` here.

Each reads its table from the ``hudi_default`` connection (:class:`~lake_orchestration.airflow.hooks.HudiTableHook`)
and takes the base path from the Airflow Variable ``hudi_table_path`` when it is set (else the connection's host).
"""

TABLE_PATH = "{{ var.value.get('hudi_table_path', '') }}"
"""The templated base path of the examples: the Variable ``hudi_table_path``, empty (the connection's) if unset."""
