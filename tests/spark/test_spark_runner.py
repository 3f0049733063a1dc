"""run_json_tasks: one Spark task per payload, every result back, on both payload routes."""

from __future__ import annotations

import json

import pytest

from lake_orchestration.hudi.services import spark_runner

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("route", ["closure", "dataframe"])
def test_run_json_tasks_one_task_per_payload(spark, monkeypatch: pytest.MonkeyPatch, route: str) -> None:
    if route == "dataframe":  # payload sets above the limit are uploaded as a range-partitioned DataFrame
        monkeypatch.setattr(spark_runner, "_CLOSURE_LIMIT", 0)
    payloads = [f"payload-{i}" for i in range(7)]
    out = [json.loads(r) for r in spark_runner.run_json_tasks(spark, payloads, "tests.cluster.conftest:probe_task")]
    assert sorted(r["payload"] for r in out) == payloads
    assert len({r["attempt"] for r in out}) == len(payloads), out  # no two payloads shared a Spark task
    assert sorted(r["partition"] for r in out) == list(range(len(payloads)))
