"""Run by the PySpark venv's interpreter (the one :mod:`tests.java.harness` builds), never imported by the tests: one
long-lived JVM with Java Paimon (``paimon-bundle`` on the driver class path, driven through its Java API over py4j;
no Spark session is started), commanded by JSON lines on stdin, each answered by one JSON line on the protocol
stream. Independent of lake_orchestration (it never imports it).

Usage: python paimon_java_driver.py BUNDLE_JAR PAIMON_VERSION  (the JAR argument may be a comma-separated list)

Commands (one JSON object per line, ``{"op": ..., ...}``); answer ``{"ok": true, "result": ...}`` or
``{"ok": false, "error": "...", "trace": "..."}``. ``warehouse`` is a filesystem catalog's root, ``table`` is
``database.table``:
- ``ping`` -> ``{"paimon": version}``. The first line, unasked: ``{"spark": pyspark version, "paimon": version}``.
- ``read``: ``warehouse``, ``table``, ``snapshot_id`` (optional: time travel with ``scan.snapshot-id``) ->
  ``{"rows": [[...], ...], "row_kinds": [...], "snapshot_id": id}``: the merged batch read, values JSON-able (strings
  for strings, numbers as numbers, ``str`` of anything else), in Java's order.
- ``snapshots``: ``warehouse``, ``table`` -> ``{"snapshots": [{"id", "commit_kind", "index_manifest"}, ...]}``.
- ``write``: ``warehouse``, ``table``, ``rows`` (lists in column order; strings, ints, None) -> ``{"snapshot_id"}``:
  one batch commit through ``BatchWriteBuilder``.
- ``compact``: ``warehouse``, ``table`` -> ``{"snapshot_id", "buckets"}``: a full compaction of every (partition,
  bucket) of the latest snapshot, as Java's ``compact`` procedure does for a batch job (``BatchTableWrite.compact``
  with ``fullCompaction`` = true), committed as one batch commit.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Any

# The protocol owns the original stdout; everything else that writes to fd 1 (the JVM, log4j, py4j) goes to stderr.
_PROTO = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr

import pyspark  # noqa: E402
from pyspark import SparkConf  # noqa: E402
from pyspark.java_gateway import launch_gateway  # noqa: E402


class Paimon:
    """Java Paimon's API in the gateway JVM (interface methods called reflectively: py4j does not resolve default
    methods of the table interfaces)."""

    def __init__(self, jar: str, version: str) -> None:
        conf = (
            SparkConf()
            .set("spark.driver.extraClassPath", jar.replace(",", os.pathsep))
            .set("spark.driver.memory", "512m")
        )
        conf.set("spark.driver.extraJavaOptions", "-Duser.timezone=UTC")
        self.gateway = launch_gateway(conf)
        self.jvm = self.gateway.jvm
        self.version = version
        self.jvm.java.lang.Class.forName("org.apache.paimon.catalog.CatalogFactory")  # the bundle is there
        self._catalogs: dict[str, Any] = {}
        self._methods: dict[tuple[str, str, int], Any] = {}

    def call(self, obj: Any, interface: str, name: str, *args: Any) -> Any:
        key = (interface, name, len(args))
        method = self._methods.get(key)
        if method is None:
            for candidate in self.jvm.java.lang.Class.forName(interface).getMethods():
                if candidate.getName() == name and len(candidate.getParameterTypes()) == len(args):
                    method = self._methods[key] = candidate
                    break
            else:
                raise AttributeError(f"{interface} has no method {name} of {len(args)} arguments")
        array = self.gateway.new_array(self.jvm.java.lang.Object, len(args))
        for i, arg in enumerate(args):
            array[i] = arg
        return method.invoke(obj, array)

    def table(self, warehouse: str, name: str, dynamic: dict[str, str] | None = None) -> Any:
        if warehouse not in self._catalogs:
            options = self.jvm.org.apache.paimon.options.Options()
            options.set("warehouse", warehouse)
            options.set("cache-enabled", "false")  # every command sees the files as they are now
            context = self.jvm.org.apache.paimon.catalog.CatalogContext.create(options)
            self._catalogs[warehouse] = self.jvm.org.apache.paimon.catalog.CatalogFactory.createCatalog(context)
        database, table = name.split(".")
        identifier = self.jvm.org.apache.paimon.catalog.Identifier.create(database, table)
        table_obj = self._catalogs[warehouse].getTable(identifier)
        if dynamic:
            java_map = self.jvm.java.util.HashMap()
            for key, value in dynamic.items():
                java_map.put(key, value)
            table_obj = self.call(table_obj, "org.apache.paimon.table.Table", "copy", java_map)
        return table_obj

    def _value(self, value: Any) -> Any:
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        return str(value)

    def read(self, cmd: dict[str, Any]) -> dict[str, Any]:
        dynamic = {"scan.snapshot-id": str(cmd["snapshot_id"])} if cmd.get("snapshot_id") is not None else None
        table = self.table(cmd["warehouse"], cmd["table"], dynamic)
        builder = self.call(table, "org.apache.paimon.table.Table", "newReadBuilder")
        plan = builder.newScan().plan()
        read = builder.newRead()
        row_type = self.call(table, "org.apache.paimon.table.Table", "rowType")
        internal_row = self.jvm.org.apache.paimon.data.InternalRow
        getters = [internal_row.createFieldGetter(row_type.getTypeAt(i), i) for i in range(row_type.getFieldCount())]
        rows: list[list[Any]] = []
        kinds: list[str] = []
        for split in plan.splits():
            reader = read.createReader(split)
            iterator = self.call(reader, "org.apache.paimon.reader.RecordReader", "toCloseableIterator")
            try:
                while iterator.hasNext():
                    row = iterator.next()
                    rows.append([self._value(g.getFieldOrNull(row)) for g in getters])
                    kinds.append(str(row.getRowKind().shortString()))
            finally:
                iterator.close()
        snapshot = self.call(table, "org.apache.paimon.table.FileStoreTable", "snapshotManager").latestSnapshot()
        latest = None if snapshot is None else int(snapshot.id())
        asked = cmd.get("snapshot_id")
        return {"rows": rows, "row_kinds": kinds, "snapshot_id": latest if asked is None else asked}

    def snapshots(self, cmd: dict[str, Any]) -> dict[str, Any]:
        table = self.table(cmd["warehouse"], cmd["table"])
        manager = self.call(table, "org.apache.paimon.table.FileStoreTable", "snapshotManager")
        out = []
        iterator = manager.snapshots()
        while iterator.hasNext():
            snap = iterator.next()
            out.append(
                {"id": int(snap.id()), "commit_kind": str(snap.commitKind()), "index_manifest": snap.indexManifest()}
            )
        return {"snapshots": out}

    def _new_write(self, builder: Any) -> Any:
        """A ``BatchTableWrite`` with an IO manager (lookup compaction, deletion vectors) in ``<cwd>/io-tmp``."""
        tmp = os.path.join(os.getcwd(), "io-tmp")
        os.makedirs(tmp, exist_ok=True)
        io_manager = self.jvm.org.apache.paimon.disk.IOManager.create(tmp)
        return builder.newWrite().withIOManager(io_manager)

    def _commit(self, builder: Any, write: Any) -> None:
        commit = builder.newCommit()
        try:
            commit.commit(write.prepareCommit())
        finally:
            commit.close()
            write.close()

    def write(self, cmd: dict[str, Any]) -> dict[str, Any]:
        table = self.table(cmd["warehouse"], cmd["table"])
        row_type = self.call(table, "org.apache.paimon.table.Table", "rowType")
        builder = self.call(table, "org.apache.paimon.table.Table", "newBatchWriteBuilder")
        write = self._new_write(builder)
        for values in cmd["rows"]:
            row = self.jvm.org.apache.paimon.data.GenericRow(len(values))
            for i, value in enumerate(values):
                if isinstance(value, str):
                    value = self.jvm.org.apache.paimon.data.BinaryString.fromString(value)
                elif isinstance(value, int) and str(row_type.getTypeAt(i).getTypeRoot()) == "BIGINT":
                    value = self.jvm.java.lang.Long(value)
                row.setField(i, value)
            write.write(row)
        self._commit(builder, write)
        return {"snapshot_id": self._latest(cmd)}

    def compact(self, cmd: dict[str, Any]) -> dict[str, Any]:
        table = self.table(cmd["warehouse"], cmd["table"])
        scan_builder = self.call(table, "org.apache.paimon.table.Table", "newReadBuilder")
        splits = scan_builder.newScan().plan().splits()
        builder = self.call(table, "org.apache.paimon.table.Table", "newBatchWriteBuilder")
        write = self._new_write(builder)
        seen = set()
        for split in splits:
            key = (bytes(split.partition().toBytes()), int(split.bucket()))
            if key in seen:
                continue
            seen.add(key)
            write.compact(split.partition(), split.bucket(), True)
        self._commit(builder, write)
        return {"snapshot_id": self._latest(cmd), "buckets": len(seen)}

    def _latest(self, cmd: dict[str, Any]) -> int | None:
        table = self.table(cmd["warehouse"], cmd["table"])
        snapshot = self.call(table, "org.apache.paimon.table.FileStoreTable", "snapshotManager").latestSnapshot()
        return None if snapshot is None else int(snapshot.id())


def handle(paimon: Paimon, cmd: dict[str, Any]) -> Any:
    op = cmd["op"]
    if op == "ping":
        return {"paimon": paimon.version}
    if op in ("read", "snapshots", "write", "compact"):
        return getattr(paimon, op)(cmd)
    raise ValueError(f"unknown op {op!r}")


def main() -> None:
    paimon = Paimon(sys.argv[1], sys.argv[2])
    started = {"spark": pyspark.__version__, "paimon": paimon.version}
    _PROTO.write(json.dumps({"ok": True, "result": started}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            answer = {"ok": True, "result": handle(paimon, json.loads(line))}
        except Exception as err:
            answer = {"ok": False, "error": f"{type(err).__name__}: {err}"[:20000], "trace": traceback.format_exc()}
        _PROTO.write(json.dumps(answer) + "\n")


if __name__ == "__main__":
    main()
