"""The write options of the trips table most tests write (:func:`lake_orchestration.datagen.generate_trips`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.write import WriteOptions

TRIPS_OPTIONS = WriteOptions(
    table_name="t",
    table_type=TableType.MERGE_ON_READ,
    record_key_fields=("uuid",),
    partition_fields=("city",),
    precombine_field="ts",
)
"""A MERGE_ON_READ table ``t`` of trips: record key ``uuid``, partitioned by ``city``, precombine field ``ts``."""


def trips_options(**fields: Any) -> WriteOptions:
    """:data:`TRIPS_OPTIONS` with ``fields`` set (``WriteOptions`` field names; an unknown one raises TypeError)."""
    return replace(TRIPS_OPTIONS, **fields)
