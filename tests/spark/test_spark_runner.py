"""SparkEngine.map_tasks: one Spark task per task, every result back, on both task routes."""

from __future__ import annotations

import json

import pytest

from lake_orchestration.engines import spark as spark_engine
from lake_orchestration.engines.spark import SparkEngine
from tests.cluster.conftest import probe_task

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("route", ["closure", "dataframe"])
def test_map_tasks_one_spark_task_per_task(spark, monkeypatch: pytest.MonkeyPatch, route: str) -> None:
    if route == "dataframe":  # task sets above the limit are uploaded as a range-partitioned DataFrame
        monkeypatch.setattr(spark_engine, "_CLOSURE_LIMIT", 0)
    payloads = [f"payload-{i}" for i in range(7)]
    out = [json.loads(r) for r in SparkEngine(spark).map_tasks(probe_task, payloads, description="probe")]
    assert sorted(r["payload"] for r in out) == payloads
    assert len({r["attempt"] for r in out}) == len(payloads), out  # no two tasks shared a Spark task
    assert sorted(r["partition"] for r in out) == list(range(len(payloads)))
