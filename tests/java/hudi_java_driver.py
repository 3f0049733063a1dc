"""Run by the Java Hudi venv's interpreter (PySpark 3.5 + the Hudi Spark bundle from Maven Central), never imported
by the tests: one long-lived Spark session driving Java Hudi, commanded by JSON lines on stdin, each answered by one
JSON line on the protocol stream. Independent of lake_orchestration (it never imports it).

Usage: python hudi_java_driver.py JARS_CSV

Commands (one JSON object per line, ``{"op": ..., ...}``); answer ``{"ok": true, "result": ...}`` or
``{"ok": false, "error": "...", "trace": "..."}``:
- ``write``: ``path``, ``input`` (a parquet file or folder: the rows, exact types), ``options`` (``hoodie.*`` write
  options), ``mode`` (``append`` default, ``overwrite``) -> ``{"instants": [...]}`` (completed instants after).
- ``read``: ``path``, ``options`` (e.g. ``hoodie.datasource.query.type``), ``output`` (a parquet folder written with
  the rows; ``None``: only count) -> ``{"count": n}``.
- ``sql``: ``query`` -> ``{"rows": [...]}`` (each row a dict; values JSON-encoded with ``str`` for the rest).
- ``register``: ``name``, ``path`` -> creates the catalog table ``name`` over the existing table at ``path``.
- ``ping`` -> ``{"spark": version}``.
- ``timed_write``: as ``write``, plus ``seconds``: the JVM-side wall time of the datasource write alone (reading the
  input included, listing the completed instants after it not), and ``cpu``: the CPU seconds (user + system, all
  threads) this process and its descendants (the JVM) used meanwhile; for ``benchmarks/java_peer_benchmark.py``.
- ``timed_sql``: as ``sql``, plus ``seconds`` and ``cpu`` of running and collecting ``query`` (a procedure call).
- ``lock``: ``path`` (table base path), ``action`` (``try``, ``unlock``, ``close``), ``options``
  (``hoodie.write.lock.*``), ``provider`` (a lock provider class, default ``FileSystemBasedLockProvider``) ->
  ``{"acquired": bool, "lock": lock, "owner": current owner info}``: Java's own provider (one per path, kept between
  commands), as a Java writer's ``LockManager`` uses it.
- ``write_loop``: ``path``, ``inputs`` (parquet files, one write each), ``options``, ``pause_s`` -> ``{"writes":
  [{"input", "ok", "error", "instants"}]}``: one write per input, a failed write (a conflict, a lock timeout)
  recorded and the loop going on, as a streaming writer retries its next batch.
- ``pid`` -> ``{"jvm": pid}``: the JVM's process id (to kill it in the middle of a write).
- ``write_background``: as ``write``, but the write runs in a thread of the driver and the answer ``{}`` comes at
  once (the next commands run beside it; e.g. ``lock`` while the write is inflight, before the JVM is killed).
- ``hadoop_conf``: ``conf`` (``{key: value}``) -> ``{}``: set in the session's Hadoop configuration before a file
  system of that scheme is first used (e.g. ``fs.s3a.*``: S3A's endpoint and credentials).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
from typing import Any

# The protocol owns the original stdout; everything else that writes to fd 1 (the JVM started below inherits it,
# log4j, py4j) goes to stderr, so a stray line can never corrupt an answer.
_PROTO = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr

from pyspark.sql import SparkSession  # noqa: E402


def _session(jars: str) -> SparkSession:
    builder = (
        SparkSession.builder.master(os.environ.get("JAVA_HUDI_MASTER", "local[2]"))
        .appName("java-hudi-oracle")
        .config("spark.jars", jars)
        .config("spark.serializer", "org.apache.spark.serializer.KryoSerializer")
        .config("spark.kryo.registrator", "org.apache.spark.HoodieSparkKryoRegistrar")
        .config("spark.sql.extensions", "org.apache.spark.sql.hudi.HoodieSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.hudi.catalog.HoodieCatalog")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", os.environ.get("JAVA_HUDI_DRIVER_MEMORY", "1g"))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC")
        .config("spark.sql.warehouse.dir", os.environ.get("JAVA_HUDI_WAREHOUSE", "/tmp/java-hudi-warehouse"))
    )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _completed_instants(spark: SparkSession, path: str) -> list[str]:
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    builder = jvm.org.apache.hudi.common.table.HoodieTableMetaClient.builder()
    try:  # 0.15: a StorageConfiguration
        builder = builder.setConf(jvm.org.apache.hudi.storage.hadoop.HadoopStorageConfiguration(conf))
    except Exception:
        builder = builder.setConf(conf)
    meta = builder.setBasePath(path).build()
    timeline = meta.getActiveTimeline().filterCompletedInstants()
    return [str(i.getFileName()) for i in timeline.getInstants().toArray()]


def _tree_cpu() -> float:
    """CPU seconds (user + system) of this process and its descendants (the JVM), from ``/proc``."""
    parent: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(entry)] = int(fields[1])
        ticks[int(entry)] = int(fields[11]) + int(fields[12])
    tree, todo = set(), [os.getpid()]
    while todo:
        pid = todo.pop()
        tree.add(pid)
        todo.extend(p for p, pp in parent.items() if pp == pid and p not in tree)
    return sum(ticks.get(p, 0) for p in tree) / os.sysconf("SC_CLK_TCK")


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


_LOCKS: dict[str, Any] = {}


_FS_LOCK = "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"


def _lock_provider(spark: SparkSession, path: str, options: dict[str, str], provider: str = _FS_LOCK) -> Any:
    if path not in _LOCKS:
        jvm = spark.sparkContext._jvm
        props = jvm.java.util.Properties()
        for key, value in {"hoodie.base.path": path, "hoodie.write.lock.filesystem.expire": "0", **options}.items():
            props.setProperty(key, value)
        conf = jvm.org.apache.hudi.storage.hadoop.HadoopStorageConfiguration(
            spark.sparkContext._jsc.hadoopConfiguration()
        )
        lock_conf = jvm.org.apache.hudi.common.config.LockConfiguration(props)
        cls = jvm
        for part in provider.split("."):
            cls = getattr(cls, part)
        _LOCKS[path] = cls(lock_conf, conf)
    return _LOCKS[path]


def _write(spark: SparkSession, cmd: dict[str, Any], source: str) -> list[str]:
    df = spark.read.parquet(source)
    df.write.format("hudi").options(**cmd.get("options", {})).mode(cmd.get("mode", "append")).save(cmd["path"])
    return _completed_instants(spark, cmd["path"])


def handle(spark: SparkSession, cmd: dict[str, Any]) -> Any:
    op = cmd["op"]
    if op == "ping":
        return {"spark": spark.version}
    if op == "write":
        df = spark.read.parquet(cmd["input"])
        df.write.format("hudi").options(**cmd.get("options", {})).mode(cmd.get("mode", "append")).save(cmd["path"])
        return {"instants": _completed_instants(spark, cmd["path"])}
    if op == "read":
        df = spark.read.format("hudi").options(**cmd.get("options", {})).load(cmd["path"])
        if cmd.get("output"):
            df.write.mode("overwrite").parquet(cmd["output"])
            return {"count": spark.read.parquet(cmd["output"]).count()}
        return {"count": df.count()}
    if op == "sql":
        rows = spark.sql(cmd["query"]).collect()
        return {"rows": [_jsonable(r.asDict(recursive=True)) for r in rows]}
    if op == "register":
        spark.sql(f"DROP TABLE IF EXISTS {cmd['name']}")
        spark.sql(f"CREATE TABLE {cmd['name']} USING hudi LOCATION '{cmd['path']}'")
        return {}
    if op == "lock":
        provider = _lock_provider(spark, cmd["path"], cmd.get("options", {}), cmd.get("provider", _FS_LOCK))
        jvm = spark.sparkContext._jvm
        acquired = None
        if cmd["action"] == "try":
            acquired = bool(provider.tryLock(0, jvm.java.util.concurrent.TimeUnit.MILLISECONDS))
        elif cmd["action"] == "unlock":
            provider.unlock()
        elif cmd["action"] == "close":
            provider.close()
            _LOCKS.pop(cmd["path"], None)
        else:
            raise ValueError(f"unknown lock action {cmd['action']!r}")
        return {"acquired": acquired, "lock": str(provider.getLock()), "owner": provider.getCurrentOwnerLockInfo()}
    if op == "write_loop":
        writes = []
        for source in cmd["inputs"]:
            try:
                writes.append({"input": source, "ok": True, "error": "", "instants": _write(spark, cmd, source)})
            except Exception as err:
                writes.append({"input": source, "ok": False, "error": f"{type(err).__name__}: {err}"[:4000]})
            time.sleep(float(cmd.get("pause_s", 0)))
        return {"writes": writes}
    if op == "pid":
        return {"jvm": int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())}
    if op == "write_background":
        threading.Thread(target=_write, args=(spark, cmd, cmd["input"]), daemon=True).start()
        return {}
    if op == "hadoop_conf":
        conf = spark.sparkContext._jsc.hadoopConfiguration()
        for key, value in cmd["conf"].items():
            conf.set(key, str(value))
        return {}
    if op == "instants":
        return {"instants": _completed_instants(spark, cmd["path"])}
    if op == "timed_write":
        cpu0, t0 = _tree_cpu(), time.perf_counter()
        df = spark.read.parquet(cmd["input"])
        df.write.format("hudi").options(**cmd.get("options", {})).mode(cmd.get("mode", "append")).save(cmd["path"])
        seconds, cpu = time.perf_counter() - t0, _tree_cpu() - cpu0
        return {"instants": _completed_instants(spark, cmd["path"]), "seconds": seconds, "cpu": cpu}
    if op == "timed_sql":
        cpu0, t0 = _tree_cpu(), time.perf_counter()
        rows = spark.sql(cmd["query"]).collect()
        seconds, cpu = time.perf_counter() - t0, _tree_cpu() - cpu0
        return {"rows": [_jsonable(r.asDict(recursive=True)) for r in rows], "seconds": seconds, "cpu": cpu}
    raise ValueError(f"unknown op {op!r}")


def main() -> None:
    spark = _session(sys.argv[1])
    _PROTO.write(json.dumps({"ok": True, "result": {"spark": spark.version}}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            answer = {"ok": True, "result": handle(spark, json.loads(line))}
        except Exception as err:
            answer = {"ok": False, "error": f"{type(err).__name__}: {err}"[:20000], "trace": traceback.format_exc()}
        _PROTO.write(json.dumps(answer) + "\n")
    spark.stop()


if __name__ == "__main__":
    main()
