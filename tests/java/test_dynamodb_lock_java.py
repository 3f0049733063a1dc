"""Our ``DynamoDBBasedLockProvider`` lock and Java's (hudi-aws 0.15 + dynamodb-lock-client 1.2.0 + AWS SDK v2 from
Maven Central, in a JVM of its own) exclude each other on moto's DynamoDB server.

A JVM with the AWS jars costs a start of its own, so this module runs with ``LAKE_ORCH_JAVA_DYNAMODB=1`` only (the
lock protocol itself is tested without Java in ``tests/safety/test_dynamodb_lock.py``).
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from lake_orchestration.errors import TableLockedError
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.clean import run_clean
from lake_orchestration.hudi.services.clean.config import CleanConfig
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.lock import LockConfig, table_lock
from tests._venv import cache_root
from tests.java.conftest import skip_or_fail
from tests.java.harness import HUDI_VERSION, JavaHudi, JavaHudiError, hudi_jars, java_hudi_python
from tests.java.interop import PARTITIONED, JavaTable, Model, java_write, trips

pytestmark = [
    pytest.mark.java,
    pytest.mark.skipif(
        os.environ.get("LAKE_ORCH_JAVA_DYNAMODB") != "1", reason="a JVM with the AWS jars: LAKE_ORCH_JAVA_DYNAMODB=1"
    ),
]

DYNAMODB_PROVIDER = "org.apache.hudi.aws.transaction.lock.DynamoDBBasedLockProvider"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1"}
_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
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
_ON_SPARKS_CLASSPATH = ("netty-", "slf4j-", "commons-logging-", "commons-codec-", "httpclient-", "httpcore-")
"""Jars Spark 3.5 ships itself (newer): left out, Spark's own are used."""


def aws_jars() -> list[Path]:
    """hudi-aws 0.15.0, the DynamoDB lock client and the AWS SDK v2 DynamoDB client, fetched once with Maven."""
    folder = cache_root() / "maven" / f"hudi-aws-lock-{HUDI_VERSION}"
    if not (folder / ".complete").is_file():
        if shutil.which("mvn") is None:
            skip_or_fail("'mvn' is not on PATH: needed to fetch hudi-aws and the AWS SDK")
        folder.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".aws-", dir=folder.parent))
        try:
            (tmp / "pom.xml").write_text(_POM)
            steps = [
                ["dependency:copy", f"-Dartifact=org.apache.hudi:hudi-aws:{HUDI_VERSION}", f"-DoutputDirectory={tmp}"],
                ["dependency:copy-dependencies", f"-DoutputDirectory={tmp}", "-DincludeScope=runtime"],
            ]
            for step in steps:
                proc = subprocess.run(["mvn", "-q", "-B", *step], capture_output=True, text=True, cwd=tmp, timeout=900)
                if proc.returncode != 0:
                    skip_or_fail(f"mvn {step[0]} failed: {(proc.stdout + proc.stderr)[-2000:]}")
            for jar in tmp.glob("*.jar"):
                jar.replace(folder / jar.name)
            (folder / ".complete").write_text(HUDI_VERSION)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return sorted(j for j in folder.glob("*.jar") if not j.name.startswith(_ON_SPARKS_CLASSPATH))


@pytest.fixture(scope="module")
def dynamodb_endpoint() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture(scope="module")
def java_aws(tmp_path_factory: pytest.TempPathFactory, dynamodb_endpoint: str) -> Iterator[JavaHudi]:
    """A JVM with the Spark bundle plus hudi-aws, its AWS credentials those of moto's server."""
    saved = {k: os.environ.get(k) for k in CREDENTIALS}
    os.environ.update(CREDENTIALS)  # the JVM inherits them (and so does boto3 here)
    workdir = tmp_path_factory.mktemp("java-aws")
    try:
        jars = hudi_jars(on_missing=skip_or_fail) + aws_jars()
        java = JavaHudi(java_hudi_python(skip_or_fail), jars, workdir / "java-aws.log", HUDI_VERSION)
        yield java
        java.close()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _options(endpoint: str, lock_table: str) -> dict[str, str]:
    return {
        "hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
        "hoodie.cleaner.policy.failed.writes": "LAZY",
        "hoodie.write.lock.provider": DYNAMODB_PROVIDER,
        "hoodie.write.lock.dynamodb.table": lock_table,
        "hoodie.write.lock.dynamodb.partition_key": "t",
        "hoodie.write.lock.dynamodb.region": "us-east-1",
        "hoodie.write.lock.dynamodb.endpoint_url": endpoint,
        "hoodie.write.lock.wait_time_ms": "3000",
        "hoodie.write.lock.wait_time_ms_between_retry": "200",
        "hoodie.write.lock.client.num_retries": "1",
        "hoodie.write.lock.client.wait_time_ms_between_retry": "200",
    }


def test_java_dynamodb_lock_and_ours_exclude_each_other(
    java_aws: JavaHudi, dynamodb_endpoint: str, tmp_path: Path
) -> None:
    opts = _options(dynamodb_endpoint, f"locks_{uuid.uuid4().hex[:8]}")
    t = JavaTable(
        tmp_path / "t", PARTITIONED, TableType.MERGE_ON_READ, Model(("city", "uuid")), trips(1, 0).schema, [], tmp_path
    )
    java_write(java_aws, t, trips(60, seed=1), "insert", **opts)  # Java creates the lock table on its first lock

    # Java's provider holds the item: our service waits, then names Java's owner
    held = java_aws.call("lock", path=str(t.path), action="try", options=opts, provider=DYNAMODB_PROVIDER)
    assert held["acquired"], held
    try:
        with pytest.raises(TableLockedError) as exc:
            run_clean(HudiTable(str(t.path)), CleanConfig.from_options(opts))
        assert "dynamodb://" in str(exc.value)
    finally:
        java_aws.call("lock", path=str(t.path), action="unlock", provider=DYNAMODB_PROVIDER)
    run_clean(HudiTable(str(t.path)), CleanConfig.from_options(opts))  # released: ours runs

    # ours holds it: Java's provider cannot take it, and a Java write fails to get it
    with table_lock(HudiTable(str(t.path)), operation="test hold", config=LockConfig.from_options(opts)):
        tried = java_aws.call("lock", path=str(t.path), action="try", options=opts, provider=DYNAMODB_PROVIDER)
        assert tried["acquired"] is False, tried
        src = tmp_path / "blocked.parquet"
        pq.write_table(trips(10, seed=2), src)
        options = {**t.options, **opts, "hoodie.datasource.write.operation": "upsert"}
        with pytest.raises(JavaHudiError, match=r"(?i)lock"):
            java_aws.call("write", path=str(t.path), input=str(src), options=options)
    java_aws.call("lock", path=str(t.path), action="close", provider=DYNAMODB_PROVIDER)
    java_write(java_aws, t, trips(10, seed=3), "upsert", **opts)  # and once released, Java writes
