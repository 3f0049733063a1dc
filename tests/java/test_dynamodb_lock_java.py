"""Java Hudi beside our services on S3, sharing hudi-aws' ``DynamoDBBasedLockProvider`` lock (moto in server mode
serves both S3 and DynamoDB; one JVM with the Spark bundle, hudi-aws 0.15 + dynamodb-lock-client 1.2.0 + AWS SDK v2,
and hadoop-aws 3.3.4 + its AWS SDK v1 modules for ``s3a://``, all from Maven Central).

1. Our DynamoDB lock and Java's provider exclude each other (Java's item stops our service, ours stops Java's
   provider and a Java write).
2. A Java writer upserting in a loop to ``s3a://bucket/t`` (OCC, LAZY failed writes, the DynamoDB lock) while our
   compaction schedule/run, clean and archive run on ``s3://bucket/t`` with the same lock; in the round our
   compaction is killed before its commit (a rerun recovers it) and the Java writer's JVM is killed in the middle of a
   write while it holds the DynamoDB lock (our rollback of stale writes takes the dead writer's item over once its
   lease ran out, and removes the write). Afterwards Java (a JVM started while the heartbeat expires), our
   reader and hudi-rs read exactly the model of the successful Java writes: no lost update, no duplicate key, no
   corrupt instant.

One round runs in CI; ``LAKE_ORCH_JAVA_WRITER_ROUNDS=N`` runs N rounds (a fresh bucket, lock table and writer JVM
each). The module starts one JVM and, after the kill, one replacement. No Java, Maven or download: a failure in CI,
a skip in a user's clone (``skip_or_fail``).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_orchestration.datagen import generate_updates
from lake_orchestration.errors import TableLockedError
from lake_orchestration.hudi.model.instant import Action, State
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.clean import run_clean
from lake_orchestration.hudi.services.clean.config import CleanConfig
from lake_orchestration.hudi.services.rollback import rollback_stale_writes
from lake_orchestration.hudi.services.rollback.config import RollbackConfig
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.lock import LockConfig, table_lock
from lake_orchestration.hudi.table.snapshot import read_snapshot_table
from tests.java.beside import BesideServices, wait_for
from tests.java.conftest import skip_or_fail
from tests.java.harness import HUDI_VERSION, JavaHudi, JavaHudiError, hudi_jars, java_hudi_python, maven_jars
from tests.java.interop import PARTITIONED, JavaTable, Model, assert_rows_equal, java_write, keyed_meta, trips

pytestmark = [pytest.mark.java]

MOR = TableType.MERGE_ON_READ
ROUNDS = int(os.environ.get("LAKE_ORCH_JAVA_WRITER_ROUNDS", "1"))
DYNAMODB_PROVIDER = "org.apache.hudi.aws.transaction.lock.DynamoDBBasedLockProvider"
REGION = "us-east-1"
ACCESS_KEY, SECRET_KEY = "testing", "testing"
HADOOP_AWS_VERSION = "3.3.4"
"""The Hadoop of Spark 3.5.1 (``hadoop-client-api-3.3.4``): its S3A needs the AWS SDK v1 of that release."""
AWS_SDK_V1_VERSION = "1.12.262"
JAVA_HEARTBEAT_MS = 4000
"""The Java writer's heartbeat interval: a killed Java write is stale 2 x this after its last beat. (With 2 s, a
Java writer on a loaded 2-core machine missed its own beats and aborted its write: "missed generating heartbeat
within allowable interval".)"""

_AWS_LOCK_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>lake</groupId><artifactId>aws-lock-deps</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>com.amazonaws</groupId><artifactId>dynamodb-lock-client</artifactId><version>1.2.0</version>
    </dependency>
    <dependency><groupId>software.amazon.awssdk</groupId><artifactId>dynamodb</artifactId><version>2.20.8</version>
    </dependency>
  </dependencies>
</project>
"""
_S3A_POM = f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>lake</groupId><artifactId>s3a-deps</artifactId><version>1</version>
  <dependencies>
    <!-- hadoop-aws alone: the rest of Hadoop is Spark's; instead of its 280 MB aws-java-sdk-bundle, the SDK v1
         modules S3A loads (s3 brings core, kms, jmespath; sts for its credential providers; dynamodb because
         S3A 3.3's S3Guard classes name its exception types even when S3Guard is off) -->
    <dependency><groupId>org.apache.hadoop</groupId><artifactId>hadoop-aws</artifactId>
      <version>{HADOOP_AWS_VERSION}</version>
      <exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion></exclusions></dependency>
    <dependency><groupId>com.amazonaws</groupId><artifactId>aws-java-sdk-s3</artifactId>
      <version>{AWS_SDK_V1_VERSION}</version></dependency>
    <dependency><groupId>com.amazonaws</groupId><artifactId>aws-java-sdk-sts</artifactId>
      <version>{AWS_SDK_V1_VERSION}</version></dependency>
    <dependency><groupId>com.amazonaws</groupId><artifactId>aws-java-sdk-dynamodb</artifactId>
      <version>{AWS_SDK_V1_VERSION}</version></dependency>
  </dependencies>
</project>
"""
_ON_SPARKS_CLASSPATH = (
    "netty-",
    "slf4j-",
    "commons-logging-",
    "commons-codec-",
    "httpclient-",
    "httpcore-",
    "jackson-annotations-",
    "jackson-core-",
    "jackson-databind-",
    "joda-time-",
)
"""Jars Spark 3.5 ships itself (newer): left out, Spark's own are used."""


def aws_jars() -> list[Path]:
    """hudi-aws 0.15.0, the DynamoDB lock client and the AWS SDK v2 DynamoDB client; hadoop-aws and the SDK v1 S3
    client (fetched once with Maven)."""
    lock = maven_jars(
        f"hudi-aws-lock-{HUDI_VERSION}",
        artifacts=[f"org.apache.hudi:hudi-aws:{HUDI_VERSION}"],
        pom=_AWS_LOCK_POM,
        on_missing=skip_or_fail,
        what="hudi-aws and the AWS SDK v2",
    )
    s3a = maven_jars(
        f"hadoop-aws-{HADOOP_AWS_VERSION}-{hashlib.sha1(_S3A_POM.encode()).hexdigest()[:8]}",
        pom=_S3A_POM,
        on_missing=skip_or_fail,
        what=f"hadoop-aws {HADOOP_AWS_VERSION} and the AWS SDK v1 S3 client",
    )
    return [j for j in lock + s3a if not j.name.startswith(_ON_SPARKS_CLASSPATH)]


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    """moto's server (S3 and DynamoDB) on 127.0.0.1; the module's processes reach it through the AWS environment."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    env = {
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": "/dev/null",
        "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
    }
    with pytest.MonkeyPatch.context() as mp:  # the JVMs, our child processes, boto3 and our storage inherit it
        for k in list(os.environ):
            if k.startswith("AWS_"):
                mp.delenv(k)
        for k, v in env.items():
            mp.setenv(k, v)
        try:
            yield endpoint
        finally:
            server.stop()


def s3a_conf(endpoint: str) -> dict[str, str]:
    """Java's S3A pointed at moto's server: path-style, plain HTTP, static credentials."""
    return {
        "fs.s3a.endpoint": endpoint,
        "fs.s3a.endpoint.region": REGION,
        "fs.s3a.path.style.access": "true",
        "fs.s3a.connection.ssl.enabled": "false",
        "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        "fs.s3a.access.key": ACCESS_KEY,
        "fs.s3a.secret.key": SECRET_KEY,
        "fs.s3a.bucket.probe": "0",
        "fs.s3a.directory.marker.retention": "keep",  # fewer requests per file written
        "fs.s3a.attempts.maximum": "3",
        "fs.s3a.retry.limit": "3",
    }


class AwsJvms:
    """The module's JVM with the AWS jars (started on first use; after a test killed it, :meth:`prestart` starts the
    next one in the background and :meth:`get` waits for it)."""

    def __init__(self, workdir: Path, endpoint: str) -> None:
        self.workdir = workdir
        self.endpoint = endpoint
        if shutil.which("java") is None:
            skip_or_fail("'java' is not on PATH: the Java Hudi tests need a Java 17 runtime")
        self.jars = hudi_jars(on_missing=skip_or_fail) + aws_jars()
        self.python = java_hudi_python(skip_or_fail)
        self.started = 0
        self.start_seconds: list[float] = []
        self._current: JavaHudi | None = None
        self._next: threading.Thread | None = None
        self._next_result: dict[str, Any] = {}

    def _start(self) -> JavaHudi:
        self.started += 1
        t0 = time.monotonic()
        java = JavaHudi(self.python, self.jars, self.workdir / f"java-aws-{self.started}.log", HUDI_VERSION)
        java.call("hadoop_conf", conf=s3a_conf(self.endpoint))
        self.start_seconds.append(time.monotonic() - t0)
        return java

    def prestart(self) -> None:
        def run() -> None:
            try:
                self._next_result["java"] = self._start()
            except BaseException as err:
                self._next_result["error"] = err

        self._next = threading.Thread(target=run, daemon=True)
        self._next.start()

    def get(self) -> JavaHudi:
        if self._current is not None and self._current._proc.poll() is None:
            return self._current
        if self._current is not None:
            self._current.close()
        if self._next is not None:
            self._next.join()
            self._next = None
            result, self._next_result = self._next_result, {}
            if "error" in result:
                raise result["error"]
            self._current = result["java"]
        else:
            self._current = self._start()
        return self._current

    def close(self) -> None:
        if self._next is not None:
            self._next.join()
            if "java" in self._next_result:
                self._next_result["java"].close()
        if self._current is not None:
            self._current.close()


@pytest.fixture(scope="module")
def java_aws(tmp_path_factory: pytest.TempPathFactory, moto_endpoint: str) -> Iterator[AwsJvms]:
    jvms = AwsJvms(tmp_path_factory.mktemp("java-aws"), moto_endpoint)
    yield jvms
    print(
        f"\nJVMs with the AWS jars started: {jvms.started}, start seconds {[round(s, 1) for s in jvms.start_seconds]}"
    )
    jvms.close()


def java_lock_settings(endpoint: str, lock_table: str, **overrides: str) -> dict[str, str]:
    """The Java writer's multi-writer settings on S3 with the DynamoDB lock (docs/how-to/concurrency.md); our services
    take the same ``hoodie.write.lock.*`` keys."""
    return {
        "hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
        "hoodie.cleaner.policy.failed.writes": "LAZY",
        "hoodie.write.lock.provider": DYNAMODB_PROVIDER,
        "hoodie.write.lock.dynamodb.table": lock_table,
        "hoodie.write.lock.dynamodb.partition_key": "t",
        "hoodie.write.lock.dynamodb.region": REGION,
        "hoodie.write.lock.dynamodb.endpoint_url": endpoint,
        **overrides,
    }


def _options(endpoint: str, lock_table: str) -> dict[str, str]:
    return java_lock_settings(
        endpoint,
        lock_table,
        **{
            "hoodie.write.lock.wait_time_ms": "3000",
            "hoodie.write.lock.wait_time_ms_between_retry": "200",
            "hoodie.write.lock.client.num_retries": "1",
            "hoodie.write.lock.client.wait_time_ms_between_retry": "200",
        },
    )


# -- 1. one lock: Java's DynamoDB provider and ours exclude each other ----------------------------------------------


def test_java_dynamodb_lock_and_ours_exclude_each_other(java_aws: AwsJvms, moto_endpoint: str, tmp_path: Path) -> None:
    java = java_aws.get()
    opts = _options(moto_endpoint, f"locks_{uuid.uuid4().hex[:8]}")
    t = JavaTable(
        tmp_path / "t", PARTITIONED, TableType.MERGE_ON_READ, Model(("city", "uuid")), trips(1, 0).schema, [], tmp_path
    )
    java_write(java, t, trips(60, seed=1), "insert", **opts)  # Java creates the lock table on its first lock

    # Java's provider holds the item: our service waits, then names Java's owner
    held = java.call("lock", path=str(t.path), action="try", options=opts, provider=DYNAMODB_PROVIDER)
    assert held["acquired"], held
    try:
        with pytest.raises(TableLockedError) as exc:
            run_clean(HudiTable(str(t.path)), CleanConfig.from_options(opts))
        assert "dynamodb://" in str(exc.value)
    finally:
        java.call("lock", path=str(t.path), action="unlock", provider=DYNAMODB_PROVIDER)
    run_clean(HudiTable(str(t.path)), CleanConfig.from_options(opts))  # released: ours runs

    # ours holds it: Java's provider cannot take it, and a Java write fails to get it
    with table_lock(HudiTable(str(t.path)), operation="test hold", config=LockConfig.from_options(opts)):
        tried = java.call("lock", path=str(t.path), action="try", options=opts, provider=DYNAMODB_PROVIDER)
        assert tried["acquired"] is False, tried
        src = tmp_path / "blocked.parquet"
        pq.write_table(trips(10, seed=2), src)
        options = {**t.options, **opts, "hoodie.datasource.write.operation": "upsert"}
        with pytest.raises(JavaHudiError, match=r"(?i)lock"):
            java.call("write", path=str(t.path), input=str(src), options=options)
    java.call("lock", path=str(t.path), action="close", provider=DYNAMODB_PROVIDER)
    java_write(java, t, trips(10, seed=3), "upsert", **opts)  # and once released, Java writes


# -- 2. a Java writer on S3 beside our services, one DynamoDB lock, with kills --------------------------------------


def java_writer_settings(endpoint: str, lock_table: str) -> dict[str, str]:
    """What the Java writer of the loop sets (besides its table's options)."""
    return java_lock_settings(
        endpoint,
        lock_table,
        **{
            # the lease of Java's item (and how long one tryLock waits, plus the lease of an item it finds held): a
            # killed holder's item is taken over once its version stayed the same for this long
            "hoodie.write.lock.wait_time_ms": "10000",
            "hoodie.write.lock.wait_time_ms_between_retry": "500",
            "hoodie.write.lock.client.num_retries": "3",
            "hoodie.write.lock.client.wait_time_ms_between_retry": "500",
            "hoodie.client.heartbeat.interval_in_ms": str(JAVA_HEARTBEAT_MS),
            "hoodie.client.heartbeat.tolerable.misses": "2",
        },
    )


def our_lock_settings(endpoint: str, lock_table: str) -> dict[str, str]:
    """Our services' lock: the Java writer's provider, table and item; a lease as Java's."""
    return java_lock_settings(
        endpoint,
        lock_table,
        **{"hoodie.write.lock.wait_time_ms": "10000", "hoodie.write.lock.wait_time_ms_between_retry": "100"},
    )


class S3Table:
    """The Java-written table on S3: ``s3a://`` for Java, ``s3://`` for us; the model of the successful writes."""

    def __init__(self, bucket: str, scratch: Path, endpoint: str, lock_table: str) -> None:
        self.bucket = bucket
        self.ours = f"s3://{bucket}/t"
        self.java = f"s3a://{bucket}/t"
        self.scratch = scratch
        self.endpoint = endpoint
        self.schema = trips(1, seed=0).schema
        self.model = Model(("city", "uuid"))
        self.options = {**PARTITIONED.java_options(MOR), **java_writer_settings(endpoint, lock_table)}
        self._n = 0

    def expected(self) -> pa.Table:
        return self.model.table(self.schema)

    def input(self, data: pa.Table) -> str:
        self._n += 1
        src = self.scratch / f"input-{self._n}.parquet"
        pq.write_table(data, src)
        return str(src)

    def write(self, java: JavaHudi, data: pa.Table, operation: str) -> None:
        options = {**self.options, "hoodie.datasource.write.operation": operation}
        java.call("write", path=self.java, input=self.input(data), options=options)
        self.model.upsert(data)

    def read(self, java: JavaHudi) -> pa.Table:
        self._n += 1
        out = self.scratch / f"read-{self._n}"
        java.call("read", path=self.java, options={"hoodie.datasource.query.type": "snapshot"}, output=str(out))
        return pq.read_table(out)

    def table(self) -> HudiTable:
        return HudiTable(self.ours)  # endpoint and credentials: the AWS environment

    def keys(self, prefix: str = "") -> list[str]:
        import pyarrow.fs as pafs

        fs = pafs.S3FileSystem(
            endpoint_override=self.endpoint, region=REGION, access_key=ACCESS_KEY, secret_key=SECRET_KEY
        )
        root = f"{self.bucket}/t/{prefix}".rstrip("/")
        infos = fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True))
        return [i.path[len(self.bucket) + 3 :] for i in infos if i.type == pafs.FileType.File]

    def timeline_names(self) -> set[str]:
        import pyarrow.fs as pafs

        fs = pafs.S3FileSystem(
            endpoint_override=self.endpoint, region=REGION, access_key=ACCESS_KEY, secret_key=SECRET_KEY
        )
        infos = fs.get_file_info(pafs.FileSelector(f"{self.bucket}/t/.hoodie", allow_not_found=True))
        return {i.base_name for i in infos if i.type == pafs.FileType.File and i.base_name[:1].isdigit()}


def _batch(expected: pa.Table, n: int, fraction: float = 0.3) -> pa.Table:
    """Updates of existing keys (newer ts) plus a few new keys: each batch changes most file groups."""
    upd = generate_updates(expected, fraction=fraction, seed=100 + n, ts_offset=(n + 1) * 10**7)
    return pa.concat_tables([upd, trips(5, seed=1000 + n).select(expected.column_names)])


def _write_loop(writer: JavaHudi, t: S3Table, batches: list[pa.Table], out: dict[str, Any]) -> None:
    inputs = [t.input(b) for b in batches]
    options = {**t.options, "hoodie.datasource.write.operation": "upsert"}
    try:
        out["writes"] = writer.call("write_loop", path=t.java, inputs=inputs, options=options, pause_s=0.3)["writes"]
    except BaseException as err:  # reported by the test thread
        out["error"] = err


def _kill_java_mid_write(writer: JavaHudi, t: S3Table, batch: pa.Table) -> str:
    """Start a Java upsert; once it is inflight (its data being written), Java's provider in the same JVM takes the
    DynamoDB lock (the write's commit now waits for it), and the JVM is SIGKILLed: a writer killed mid-write that
    leaves its lock item behind, as one killed in its commit does. Returns the killed write's instant."""
    jvm = writer.call("pid")["jvm"]
    known = t.timeline_names()
    options = {**t.options, "hoodie.datasource.write.operation": "upsert"}
    writer.call("write_background", path=t.java, input=t.input(batch), options=options)

    def inflight() -> str | None:
        new = [n for n in t.timeline_names() - known if n.endswith(".deltacommit.inflight")]
        return new[0].split(".")[0] if new else None

    wait_for(lambda: inflight() is not None, "the Java write to be inflight")
    held = writer.call("lock", path=t.java, action="try", options=t.options, provider=DYNAMODB_PROVIDER)
    assert held["acquired"], held
    os.kill(jvm, signal.SIGKILL)
    writer._proc.kill()  # its driver would wait on the dead JVM when closed: the whole writer crashed
    writer._proc.wait()
    instant = inflight()
    assert instant is not None
    assert f"{instant}.deltacommit" not in t.timeline_names(), "the Java write committed before the kill"
    return instant


def _assert_everyone_reads_the_model(java: JavaHudi, t: S3Table, what: str) -> None:
    from hudi import HudiTableBuilder

    theirs = t.read(java)
    assert_rows_equal(theirs, t.expected(), f"{what}: Java's read vs the model of the successful Java writes")
    keys = list(zip(theirs.column("city").to_pylist(), theirs.column("uuid").to_pylist(), strict=True))
    assert len(keys) == len(set(keys)), f"{what}: duplicate keys in Java's read"
    ours = read_snapshot_table(t.table())
    assert_rows_equal(ours, theirs, f"{what}: our read vs Java's")
    assert keyed_meta(ours) == keyed_meta(theirs), f"{what}: meta columns, ours vs Java's"
    rs_options = {
        "aws_endpoint_url": t.endpoint,
        "aws_access_key_id": ACCESS_KEY,
        "aws_secret_access_key": SECRET_KEY,
        "aws_region": REGION,
        "aws_allow_http": "true",
    }
    batches = HudiTableBuilder.from_base_uri(t.ours).with_storage_options(rs_options).build().read()
    assert batches, f"{what}: hudi-rs read nothing"
    assert_rows_equal(pa.Table.from_batches(batches), theirs, f"{what}: hudi-rs vs Java's")
    # no corrupt or unknown timeline file: our timeline reads every file, Java's has the same completed instants
    table = t.table()
    assert table.timeline.ignored_files == (), table.timeline.ignored_files
    ours_completed = {f"{i.time}.{i.action.value}" for i in table.timeline if i.state is State.COMPLETED}
    assert set(java.call("instants", path=t.java)["instants"]) == ours_completed


@pytest.mark.parametrize("round_no", range(ROUNDS))
def test_java_writer_on_s3_beside_our_services_with_kills(
    java_aws: AwsJvms, moto_endpoint: str, tmp_path: Path, round_no: int, caplog: pytest.LogCaptureFixture
) -> None:
    import boto3

    started = time.monotonic()
    bucket = f"lake-java-{uuid.uuid4().hex[:16]}"
    boto3.client("s3").create_bucket(Bucket=bucket)
    lock_table = f"locks_{uuid.uuid4().hex[:8]}"
    t = S3Table(bucket, tmp_path, moto_endpoint, lock_table)
    services = BesideServices(
        t.ours,
        t.keys,
        our_lock_settings(moto_endpoint, lock_table),
        # as docs/how-to/concurrency.md asks: the Java writer's concurrency mode, so a plan may be scheduled beside
        # a pending Java write (whose own conflict check then fails it)
        {
            "hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
            "hoodie.cleaner.policy.failed.writes": "LAZY",
        },
    )
    writer = java_aws.get()
    services.note("writer JVM ready")
    t.write(writer, trips(150, seed=1 + round_no).select(t.schema.names), "insert")
    services.note("Java's insert committed")

    # the Java writer upserts in a loop while our services run: each batch is based on the model so far (a batch
    # that fails leaves its keys as they were)
    batches = []
    shadow = Model(t.model.key, dict(t.model.rows))
    for n in range(1, 4):
        b = _batch(shadow.table(t.schema), n)
        shadow.upsert(b)
        batches.append(b)
    out: dict[str, Any] = {}
    loop = threading.Thread(target=_write_loop, args=(writer, t, batches, out), daemon=True)
    loop.start()
    rounds = 0
    while loop.is_alive() or rounds < 2:
        services.round(kill_compaction=True)  # the first plan scheduled is killed before its commit, then rerun
        rounds += 1
        time.sleep(1.0)  # services run periodically, not back to back
    loop.join()
    services.note("Java's write loop ended")
    if "error" in out:
        raise out["error"]
    writes = out["writes"]
    for b, w in zip(batches, writes, strict=True):
        if w["ok"]:
            t.model.upsert(b)
    failed = [w["error"][:300] for w in writes if not w["ok"]]
    assert any(w["ok"] for w in writes), f"no Java write succeeded beside our services: {failed}"
    # a Java write may only fail for a conflict with our compaction plan or a lock it did not get in time
    assert all("conflict" in e.lower() or "lock" in e.lower() for e in failed), failed
    if services.killed_compaction is None:
        t.write(writer, _batch(t.expected(), 8), "upsert")
    services.round(kill_compaction=True)  # the killed compaction is rerun, more is compacted and cleaned
    assert services.compacted, f"no compaction committed beside the Java writer: {services.log}"
    killed_ours = services.killed_compaction
    assert killed_ours is not None and killed_ours in services.recovered, (
        f"no killed compaction recovered: {services.log}"
    )

    # kill the Java writer in the middle of a write: nothing of it may become visible; our rollback removes it
    killed = _kill_java_mid_write(writer, t, _batch(t.expected(), 9))
    services.note(f"killed the Java writer in the middle of {killed}")
    left = boto3.client("dynamodb").get_item(TableName=lock_table, Key={"key": {"S": "t"}}, ConsistentRead=True)
    assert "Item" in left, "the killed Java writer's lock item is gone"
    java_aws.prestart()  # the reader JVM starts while the killed write's heartbeat expires
    time.sleep(2 * JAVA_HEARTBEAT_MS / 1000 + 1)
    rollback = RollbackConfig.from_options(services.opts)
    rolled = rollback_stale_writes(t.table(), interval_ms=JAVA_HEARTBEAT_MS, tolerable_misses=2, config=rollback)
    assert killed in {str(s.instant.time) for s, _ in rolled}, (killed, rolled)
    # the dead writer's item was taken over once unchanged for its lease (our wait alone is not longer than it)
    assert any("Taking over the expired DynamoDB table lock" in r.getMessage() for r in caplog.records)
    services.note(f"rolled back {[str(s.instant.time) for s, _ in rolled]}")
    assert not list(t.table().timeline.pending().with_actions(Action.DELTA_COMMIT))
    services.round(kill_compaction=False)
    ok = sum(w["ok"] for w in writes)
    print(f"round {round_no}: {ok}/{len(writes)} Java loop writes committed, failed: {failed}; ours: {services.log}")
    reader = java_aws.get()
    services.note("reader JVM ready")
    _assert_everyone_reads_the_model(reader, t, f"round {round_no} ({'; '.join(services.log)[:3000]})")
    if ROUNDS > 1:  # locally: Java writes on, the table is as usable for it as before
        t.write(reader, _batch(t.expected(), 10), "upsert")
        assert_rows_equal(t.read(reader), t.expected(), "Java's read after it wrote on")
    print(f"round {round_no}: {time.monotonic() - started:.1f} s; {services.log[-3:]}")
