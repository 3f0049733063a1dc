"""The fleet model at 10, 100 and 1,000 tables (issue 27): load time, definitions, sensor ticks, S3 requests per table.

For each fleet size N, in one run:

* **load, new process**: what a code server pays: a new Python process (dagster and lake_orchestration imported
  first, not counted) imports the ``definitions`` module with ``LAKE_ORCHESTRATION_CONFIG`` naming a YAML config of N
  tables and resolves the repository (``Definitions.get_repository_def()``), the median of 3 processes;
* **load, warm**: the same path in this process after a warm-up load (``load_config_file`` + the model's definitions
  + ``get_repository_def()``), the median of 5: the cost that grows with N, without the one-time costs;
  with the numbers of jobs (Dagster's implicit asset job included), sensors, schedules and asset keys;
* **tick (local)**: one evaluation of ``fleet__compaction_sensor`` over N local tables: the first tick (no cursor:
  every table judged) and a steady tick (nothing changed: one listing of ``.hoodie/`` per table and nothing else);
* **requests per table per tick (moto S3)**: the same two ticks over N tables on moto's S3 server (the request
  recorder of ``tests/objectstore/conftest.py``), counted by the server: LISTs and all requests, divided by N, and
  their wall time; and the most requests per table of any first or steady tick of the other three fleet sensors.

The tables: 10 real small tables (MERGE_ON_READ, a bulk insert and 2 upserts, compaction trigger not met) written
once locally and once on S3; the N config entries point at them in turn (entry ``t0042`` at table ``42 % 10``): every
entry is probed on its own (no cache across entries), so the load, the tick time and the requests per table are
those of N tables, while the data written stays small. The per-table model's figures (10 and 100 tables) are printed
beside: load, and one tick of every table's ``<t>__sync_compaction_plans_sensor`` (the sensor it runs by default).

Targets: load(1,000) <= 5 x load(10); jobs and sensors independent of N; <= 2 requests per table per steady tick.

Usage: python benchmarks/fleet_benchmark.py [--sizes 10,100,1000]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.objectstore's S3 recorder

REAL_TABLES = 10


def _write_tables(base: str, storage_options: dict[str, str] | None = None) -> list[str]:
    from lake_orchestration.datagen import generate_trips, generate_updates
    from lake_orchestration.hudi.model.properties import TableType
    from lake_orchestration.hudi.write import WriteOptions, write_table

    opts = WriteOptions(
        table_name="t",
        table_type=TableType.MERGE_ON_READ,
        record_key_fields=("uuid",),
        partition_fields=("city",),
        precombine_field="ts",
        small_file_limit=0,
    )
    paths = []
    for i in range(REAL_TABLES):
        path = f"{base}/t{i}"
        rows = generate_trips(30, partitions=1, seed=i)
        write_table(path, rows, operation="bulk_insert", options=opts, storage_options=storage_options)
        for n in range(2):
            upd = generate_updates(rows, fraction=0.3, seed=n, ts_offset=(n + 1) * 10**6)
            write_table(path, upd, operation="upsert", options=opts, storage_options=storage_options)
        paths.append(path)
    return paths


def _config(paths: list[str], n: int, *, fleet: bool, storage: dict[str, Any] | None = None) -> dict[str, Any]:
    entries = []
    for i in range(n):
        e: dict[str, Any] = {"name": f"t{i:04d}", "base_path": paths[i % len(paths)]}
        if storage:
            e["storage"] = storage
        entries.append(e)
    return {"fleet": fleet, "tables": entries}


def _load(cfg_file: Path) -> tuple[float, Any]:
    import gc

    from lake_orchestration.dagster.config import load_config_file
    from lake_orchestration.dagster.location import definitions_of

    times, defs = [], None
    for _ in range(5):
        gc.collect()  # each load starts from the same heap (a collection left over from the previous is not its cost)
        t0 = time.perf_counter()
        defs = definitions_of(load_config_file(cfg_file))
        defs.get_repository_def()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), defs


_FRESH = """
import sys, time
import dagster, lake_orchestration.dagster  # the imports are not the definitions' cost
t0 = time.perf_counter()
from definitions import defs
defs.get_repository_def()
print(time.perf_counter() - t0)
"""


def _load_fresh(cfg_file: Path) -> float:
    """The code server's load: a new process imports the ``definitions`` module (``LAKE_ORCHESTRATION_CONFIG``
    names ``cfg_file``) and resolves the repository; dagster and lake_orchestration imported first, not counted. The
    median of 3 processes."""
    import os
    import subprocess

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "LAKE_ORCHESTRATION_CONFIG": str(cfg_file), "PYTHONPATH": str(root)}
    times = []
    for _ in range(3):
        out = subprocess.run(
            [sys.executable, "-W", "ignore", "-c", _FRESH],
            env=env,
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        )
        times.append(float(out.stdout.strip().splitlines()[-1]))
    return statistics.median(times)


def _counts(defs: Any) -> dict[str, int]:
    repo = defs.get_repository_def()
    return {
        "jobs": len(repo.get_all_jobs()),
        "sensors": len(repo.sensor_defs),
        "schedules": len(repo.schedule_defs),
        "asset_keys": len(repo.asset_graph.get_all_asset_keys()),
    }


def _tick(defs: Any, instance: Any, name: str, cursor: str | None) -> tuple[float, str | None]:
    import dagster as dg

    sensor = defs.resolve_sensor_def(name)
    t0 = time.perf_counter()
    result = sensor(dg.build_sensor_context(instance=instance, definitions=defs, cursor=cursor))
    return time.perf_counter() - t0, result.cursor


def _per_table_tick(defs: Any, instance: Any) -> float:
    """One tick of every table's sync sensor (the per-table model's default-running sensor)."""
    import dagster as dg

    t0 = time.perf_counter()
    for s in defs.sensors:
        if s.name.endswith("__sync_compaction_plans_sensor"):
            s(dg.build_sensor_context(instance=instance, definitions=defs))
    return time.perf_counter() - t0


class _S3:
    """moto's S3 server with the test suite's request recorder (tests/objectstore/conftest.py)."""

    def __init__(self) -> None:
        import pyarrow.fs as pafs
        from moto.server import ThreadedMotoServer

        from tests.objectstore.conftest import ACCESS_KEY, REGION, SECRET_KEY, RecordingMiddleware, RequestLog

        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self.server.start()
        self.log = RequestLog()
        self.server._server.app = RecordingMiddleware(self.server._server.app, self.log)  # type: ignore[union-attr]
        host, port = self.server.get_host_and_port()
        self.endpoint = f"http://{host}:{port}"
        self.bucket = f"fleet-{uuid.uuid4().hex[:12]}"
        pafs.S3FileSystem(
            endpoint_override=self.endpoint,
            region=REGION,
            access_key=ACCESS_KEY,
            secret_key=SECRET_KEY,
            allow_bucket_creation=True,
        ).create_dir(self.bucket)
        self.options = {
            "endpoint_override": self.endpoint,
            "region": REGION,
            "access_key": ACCESS_KEY,
            "secret_key": SECRET_KEY,
        }
        # the config names the secrets' variables, never the values
        import os

        os.environ["FLEET_BENCH_KEY"], os.environ["FLEET_BENCH_SECRET"] = ACCESS_KEY, SECRET_KEY
        self.storage = {
            "provider": "s3",
            "endpoint_override": self.endpoint,
            "region": REGION,
            "scheme": "http",
            "access_key_env": "FLEET_BENCH_KEY",
            "secret_key_env": "FLEET_BENCH_SECRET",
        }

    def count(self, fn: Callable[[], Any]) -> tuple[int, int, Any]:
        start = len(self.log.all())
        out = fn()
        reqs = [r for r in self.log.all()[start:] if r.bucket == self.bucket]
        return sum(1 for r in reqs if r.kind == "LIST"), len(reqs), out

    def stop(self) -> None:
        self.server.stop()


def main() -> None:
    import warnings

    import dagster as dg

    warnings.filterwarnings("ignore")
    logging.getLogger("dagster").setLevel(logging.WARNING)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10,100,1000")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    work = Path(tempfile.mkdtemp(prefix="fleet-bench-"))
    local = _write_tables(str(work / "tables"))
    s3 = _S3()
    try:
        remote = _write_tables(f"s3://{s3.bucket}/warehouse", s3.options)
        rows = []
        warm = work / "warm-up.yaml"  # the first load in a process pays for lazy imports: not the fleet's cost
        warm.write_text(yaml.safe_dump(_config(local, 10, fleet=True)))
        _load(warm)
        for model in ("fleet", "per-table"):
            for n in sizes:
                if model == "per-table" and n > 100:
                    continue
                cfg_file = work / f"{model}-{n}.yaml"
                cfg_file.write_text(yaml.safe_dump(_config(local, n, fleet=model == "fleet")))
                load_s, defs = _load(cfg_file)
                row: dict[str, Any] = {
                    "model": model,
                    "tables": n,
                    "load_fresh_s": _load_fresh(cfg_file),
                    "load_s": load_s,
                    **_counts(defs),
                }
                with dg.DagsterInstance.ephemeral() as instance:
                    if model == "fleet":
                        first, cursor = _tick(defs, instance, "fleet__compaction_sensor", None)
                        steady, _ = _tick(defs, instance, "fleet__compaction_sensor", cursor)
                        row |= {"tick_first_s": first, "tick_steady_s": steady}
                    else:
                        row |= {"tick_first_s": _per_table_tick(defs, instance), "tick_steady_s": None}
                    # the same N on moto S3
                    s3_file = work / f"{model}-{n}-s3.yaml"
                    s3_file.write_text(yaml.safe_dump(_config(remote, n, fleet=model == "fleet", storage=s3.storage)))
                    from lake_orchestration.dagster.config import load_config_file
                    from lake_orchestration.dagster.location import definitions_of

                    s3_defs = definitions_of(load_config_file(s3_file))
                    if model == "fleet":
                        lists, total, (first_s, cursor) = s3.count(
                            lambda d=s3_defs: _tick(d, instance, "fleet__compaction_sensor", None)
                        )
                        row |= {"s3_first_list": lists / n, "s3_first_req": total / n, "s3_first_s": first_s}
                        lists, total, (steady_s, _) = s3.count(
                            lambda d=s3_defs, c=cursor: _tick(d, instance, "fleet__compaction_sensor", c)
                        )
                        row |= {"s3_steady_list": lists / n, "s3_steady_req": total / n, "s3_steady_s": steady_s}
                        # every other fleet sensor, first and steady tick: the most requests per table of any
                        most = 0.0
                        for name in ("fleet__clean_sensor", "fleet__archive_sensor", "fleet__stale_inflight_sensor"):
                            _, total, (_, c) = s3.count(lambda d=s3_defs, x=name: _tick(d, instance, x, None))
                            most = max(most, total / n)
                            _, total, _ = s3.count(lambda d=s3_defs, x=name, y=c: _tick(d, instance, x, y))
                            most = max(most, total / n)
                        row |= {"s3_other_sensors_max_req": most}
                    else:
                        lists, total, _ = s3.count(lambda d=s3_defs: _per_table_tick(d, instance))
                        row |= {"s3_first_list": lists / n, "s3_first_req": total / n}
                        row |= {"s3_steady_list": None, "s3_steady_req": None, "s3_other_sensors_max_req": None}
                        row |= {"s3_first_s": None, "s3_steady_s": None}
                rows.append(row)
                print(_fmt(row), flush=True)
    finally:
        s3.stop()
    print()
    print(_table(rows))
    fleet = {r["tables"]: r for r in rows if r["model"] == "fleet"}
    if 10 in fleet and 1000 in fleet:
        fresh = fleet[1000]["load_fresh_s"] / fleet[10]["load_fresh_s"]
        warm = fleet[1000]["load_s"] / fleet[10]["load_s"]
        print(f"\nload(1000) / load(10): new process {fresh:.2f} (target <= 5), warm {warm:.1f}")


def _fmt(row: dict[str, Any]) -> str:
    return ", ".join(f"{k}={round(v, 4) if isinstance(v, float) else v}" for k, v in row.items())


def _table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| model | tables | load, new process (s) | load, warm (s) | jobs | sensors | schedules | asset keys "
        "| first tick (s) | steady tick (s) | S3 first tick (s) | S3 steady tick (s) "
        "| S3 req/table, first tick (LIST) | S3 req/table, steady tick (LIST) | S3 req/table, other sensors (max) |"
    )
    out = [head, "|---|" + "---:|" * 14]

    def f(v: Any, d: int = 2) -> str:
        return "-" if v is None else f"{v:.{d}f}"

    for r in rows:
        out.append(
            f"| {r['model']} | {r['tables']:,} | {f(r['load_fresh_s'])} | {f(r['load_s'], 3)} | {r['jobs']} "
            f"| {r['sensors']} | {r['schedules']} | {r['asset_keys']} | {f(r['tick_first_s'])} "
            f"| {f(r['tick_steady_s'])} | {f(r['s3_first_s'])} | {f(r['s3_steady_s'])} "
            f"| {f(r['s3_first_req'])} ({f(r['s3_first_list'])}) "
            f"| {f(r['s3_steady_req'])} ({f(r['s3_steady_list'])}) | {f(r['s3_other_sensors_max_req'])} |"
        )
    return "\n".join(out)


if __name__ == "__main__":
    main()
