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
- ``mdt_views``: ``path`` -> the latest base files and latest file slices checks of hudi-utilities'
  ``HoodieMetadataTableValidator`` (``--validate-latest-base-files --validate-latest-file-slices``), which the bundle
  lacks, computed here from the bundle's own classes as the validator does: two in-memory file-system views
  (``FileSystemViewManager.createInMemoryFileSystemView``) on one meta client (its active timeline: the latest
  completed instant), one with ``hoodie.metadata.enable`` on, one listing storage. ``{"instant", "partitions":
  {"metadata": [...], "fs": [...]}, "checked": {partition: {"base_files": n, "file_slices": n}}, "diffs": [{"partition",
  "check", "detail", "metadata", "fs"}], "tolerated": [...]}``: ``diffs`` holds what the validator fails on (a
  different count or sorted list of latest base files: name, file id, size; of latest file slices: file group, base
  instant, base file name and size, and log files that differ and are committed), ``tolerated`` the log files that
  differ but the validator lets pass (no readable block, or a block of an instant that is not completed or whose
  commit metadata does not name the file).
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


# -- HoodieMetadataTableValidator's latest base files / latest file slices checks ----------------------------------


def _base_file(jbase: Any) -> dict[str, Any]:
    return {"file_name": str(jbase.getFileName()), "file_id": str(jbase.getFileId()), "size": int(jbase.getFileSize())}


def _file_slice(jslice: Any) -> dict[str, Any]:
    base = jslice.getBaseFile()
    return {
        "file_id": str(jslice.getFileId()),
        "base_instant": str(jslice.getBaseInstantTime()),
        "base_file": _base_file(base.get()) if base.isPresent() else None,
        "log_files": sorted(
            (
                {"path": str(f.getPath().toString()), "size": int(f.getFileSize())}
                for f in jslice.getLogFiles().toArray()
            ),
            key=lambda f: f["path"],
        ),
    }


def _log_file_committed(jvm: Any, meta: Any, path: str, committed: dict[str, set[str]]) -> tuple[bool, str]:
    """The validator's ``hasCommittedLogFiles`` for one log file: its first block's instant is completed and the
    instant's commit metadata names the file, or the instant is before the active timeline (archived)."""
    storage = meta.getStorage()
    log_path = jvm.org.apache.hudi.storage.StoragePath(path)
    try:
        schema = jvm.org.apache.hudi.common.table.TableSchemaResolver.readSchemaFromLogFile(storage, log_path)
        if schema is None:
            return False, f"no schema readable from {path}"
        reader = jvm.org.apache.hudi.common.table.log.HoodieLogFormat.newReader(
            storage, jvm.org.apache.hudi.common.model.HoodieLogFile(path), schema, False
        )
        try:
            if not reader.hasNext():
                return False, f"no log block in {path}"
            header_type = getattr(jvm.org.apache.hudi.common.table.log.block, "HoodieLogBlock$HeaderMetadataType")
            instant = str(reader.next().getLogBlockHeader().get(header_type.INSTANT_TIME))
        finally:
            reader.close()
    except Exception as err:  # the validator skips an unreadable log file (likely inflight)
        return False, f"cannot read {path}: {type(err).__name__}"
    commits = meta.getCommitsTimeline()
    completed = commits.filterCompletedInstants()
    if completed.containsInstant(instant):
        if instant not in committed:
            found = [i for i in completed.getInstants().toArray() if str(i.getTimestamp()) == instant]
            cls = jvm.org.apache.hudi.common.model.HoodieCommitMetadata
            metadata = cls.fromBytes(completed.getInstantDetails(found[0]).get(), cls._java_lang_class)
            committed[instant] = {str(s.getPath()) for s in metadata.getWriteStats().toArray()}
        base = str(meta.getBasePath()).rstrip("/")
        rel = path.split("://", 1)[-1]
        base_plain = base.split("://", 1)[-1]
        rel = rel[len(base_plain) :].lstrip("/") if rel.startswith(base_plain) else rel
        if rel in committed[instant]:
            return True, f"committed by the completed instant {instant}"
        return False, f"written by {instant} but not in its commit metadata (a retried task's leftover)"
    if completed.isBeforeTimelineStarts(instant):
        return True, f"committed by the archived instant {instant}"
    return False, f"its instant {instant} is inflight or not in the active timeline"


def _mdt_views(spark: SparkSession, path: str) -> dict[str, Any]:
    jvm = spark.sparkContext._jvm
    if "://" not in path and not path.startswith("file:"):
        # as the validator's usage says: a local table's base path with ``file:``, else the MDT-based view's log file
        # paths (no scheme) differ from the storage-based view's (``file:``) and every differing log file fails
        path = f"file:{path}"
    conf = jvm.org.apache.hudi.storage.hadoop.HadoopStorageConfiguration(spark.sparkContext._jsc.hadoopConfiguration())
    meta = (
        jvm.org.apache.hudi.common.table.HoodieTableMetaClient.builder()
        .setConf(conf)
        .setBasePath(path)
        .setLoadActiveTimelineOnLoad(True)
        .build()
    )
    engine = jvm.org.apache.hudi.client.common.HoodieSparkEngineContext(spark.sparkContext._jsc)
    manager = jvm.org.apache.hudi.common.table.view.FileSystemViewManager
    fs_utils = jvm.org.apache.hudi.common.fs.FSUtils

    def config(enable: bool) -> Any:
        return jvm.org.apache.hudi.common.config.HoodieMetadataConfig.newBuilder().enable(enable).build()

    last = meta.getActiveTimeline().filterCompletedInstants().lastInstant()
    out: dict[str, Any] = {
        "instant": str(last.get().getTimestamp()) if last.isPresent() else None,
        "partitions": {
            "metadata": sorted(
                str(p) for p in fs_utils.getAllPartitionPaths(engine, meta.getStorage(), path, True, False)
            ),
            "fs": sorted(str(p) for p in fs_utils.getAllPartitionPaths(engine, meta.getStorage(), path, False, False)),
        },
        "checked": {},
        "diffs": [],
        "tolerated": [],
    }
    views = {"metadata": manager.createInMemoryFileSystemView(engine, meta, config(True))}
    try:
        views["fs"] = manager.createInMemoryFileSystemView(engine, meta, config(False))
        committed: dict[str, set[str]] = {}
        for partition in out["partitions"]["metadata"]:
            base = {
                k: sorted(
                    (_base_file(b) for b in v.getLatestBaseFiles(partition).toArray()), key=lambda b: b["file_name"]
                )
                for k, v in views.items()
            }
            slices = {
                k: sorted(
                    (_file_slice(s) for s in v.getLatestFileSlices(partition).toArray()),
                    key=lambda s: (s["file_id"], s["base_instant"]),
                )
                for k, v in views.items()
            }
            out["checked"][partition] = {"base_files": len(base["fs"]), "file_slices": len(slices["fs"])}

            def diff(check: str, detail: str, mdt: Any, fs: Any, partition: str = partition) -> None:
                out["diffs"].append(
                    {"partition": partition, "check": check, "detail": detail, "metadata": mdt, "fs": fs}
                )

            if base["metadata"] != base["fs"]:
                diff("latest base files", "sorted lists differ", base["metadata"], base["fs"])
            if len(slices["metadata"]) != len(slices["fs"]):
                diff("latest file slices", "number of file slices differs", slices["metadata"], slices["fs"])
                continue
            for mdt_slice, fs_slice in zip(slices["metadata"], slices["fs"], strict=True):
                if (mdt_slice["file_id"], mdt_slice["base_instant"]) != (fs_slice["file_id"], fs_slice["base_instant"]):
                    diff("latest file slices", "file group or base instant differs", mdt_slice, fs_slice)
                    break
                if mdt_slice["base_file"] != fs_slice["base_file"]:
                    diff("latest file slices", "base files differ", mdt_slice, fs_slice)
                    break
                mdt_logs = {f["path"] for f in mdt_slice["log_files"]}
                fs_logs = {f["path"] for f in fs_slice["log_files"]}
                verdicts = {p: _log_file_committed(jvm, meta, p, committed) for p in sorted(mdt_logs ^ fs_logs)}
                flagged = {p: why for p, (is_committed, why) in verdicts.items() if is_committed}
                for p, (is_committed, why) in verdicts.items():
                    if not is_committed:
                        out["tolerated"].append(
                            {
                                "partition": partition,
                                "log_file": p,
                                "only_in": "metadata" if p in mdt_logs else "fs",
                                "why": why,
                            }
                        )
                if flagged:
                    diff("latest file slices", f"committed log files differ: {flagged}", mdt_slice, fs_slice)
                    break
    finally:
        for view in views.values():
            view.close()
    return out


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
    if op == "mdt_views":
        return _mdt_views(spark, cmd["path"])
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
