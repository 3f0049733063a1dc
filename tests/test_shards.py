"""The two shards of scripts/test.sh (tests/conftest.py): together they hold every test of a collection, none twice;
shard A holds the tests of the one SparkSession (marker or fixture ``spark``), of the one Java JVM (tests/java) and
the folders put there for balance (tests/browser); shard B refuses to start a SparkSession. Collected on a few modules
that cover each rule (the whole suite takes a minute to collect), each collection in its own pytest process."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from tests.conftest import REPO_ROOT

MODULES = [
    "tests/java/test_cdc_refused.py",  # tests/java: the one JVM
    "tests/airflow/test_example_dags.py",  # a folder of shard B with one test marked spark (that one in A)
    "tests/hudi/services/test_clean.py",  # one test with the spark fixture, no marker
    "tests/safety/test_corrupt_log_blocks.py",  # one test marked spark
    "tests/engines/test_engine_defaults.py",  # no Spark
]


def _collect(shard: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "LAKE_ORCH_SHARD"}
    if shard:
        env["LAKE_ORCH_SHARD"] = shard
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q", *MODULES],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return [line for line in proc.stdout.splitlines() if "::" in line]


def test_shards_partition_the_collection_and_a_holds_spark_and_java() -> None:
    with ThreadPoolExecutor(3) as pool:
        every, a, b = pool.map(_collect, ["", "A", "B"])
    assert len(a) == len(set(a)) and len(b) == len(set(b))
    assert not set(a) & set(b), sorted(set(a) & set(b))
    assert sorted(a + b) == sorted(every)
    assert {n for n in every if n.startswith("tests/java/")} <= set(a)
    airflow_spark = (
        "tests/airflow/test_example_dags.py::test_execute_operator_on_spark_commits_the_plan_and_a_rerun_is_a_no_op"
    )
    assert airflow_spark in a
    assert {n for n in every if n.startswith("tests/airflow/")} - {airflow_spark} <= set(b)
    assert "tests/hudi/services/test_clean.py::test_clean_on_spark_deletes_the_same_files" in a
    assert (
        "tests/safety/test_corrupt_log_blocks.py::"
        "test_corrupt_block_compaction_on_spark_raises_before_inflight_nothing_written"
    ) in a
    assert {n for n in every if n.startswith("tests/engines/")} <= set(b)
    assert any(n.startswith("tests/hudi/services/") for n in b) and any(n.startswith("tests/safety/") for n in b)


def test_shard_b_refuses_a_spark_session() -> None:
    code = (
        "from tests.conftest import _refuse_spark_sessions\n"
        "_refuse_spark_sessions()\n"
        "from pyspark.sql import SparkSession\n"
        "SparkSession.builder.master('local[1]').getOrCreate()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "the run's one SparkSession lives in shard A" in proc.stderr, proc.stderr[-3000:]
