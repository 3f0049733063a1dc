"""The table lock with ``DynamoDBBasedLockProvider`` (hudi-aws's lock item) against moto's DynamoDB in server mode:
the item Java's lock client reads, exclusion of a second holder in another process, a Java item that blocks our
services until its lease expires, and a lost lock stopping the section.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lake_orchestration.errors import TableLockedError, TableLockLostError
from lake_orchestration.hudi.services.clean import run_clean
from lake_orchestration.hudi.services.clean.config import CleanConfig
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.lock import LockConfig, table_lock
from tests.conftest import REPO_ROOT
from tests.trips import trips_options, write_trips_history

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1"}


@pytest.fixture(scope="module")
def dynamodb_endpoint() -> Iterator[str]:
    """moto's server on 127.0.0.1 (a free port): DynamoDB over HTTP, as the Java lock client would reach it."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def options(dynamodb_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for k, v in CREDENTIALS.items():
        monkeypatch.setenv(k, v)
    return {
        "hoodie.write.lock.provider": "org.apache.hudi.aws.transaction.lock.DynamoDBBasedLockProvider",
        "hoodie.write.lock.dynamodb.table": f"locks_{uuid.uuid4().hex[:8]}",
        "hoodie.write.lock.dynamodb.endpoint_url": dynamodb_endpoint,
        "hoodie.write.lock.wait_time_ms": "3000",
        "hoodie.write.lock.wait_time_ms_between_retry": "100",
    }


def _client(options: dict[str, str]) -> Any:
    import boto3

    return boto3.client(
        "dynamodb", region_name="us-east-1", endpoint_url=options["hoodie.write.lock.dynamodb.endpoint_url"]
    )


def _item(options: dict[str, str], key: str) -> dict[str, Any] | None:
    got = _client(options).get_item(
        TableName=options["hoodie.write.lock.dynamodb.table"], Key={"key": {"S": key}}, ConsistentRead=True
    )
    return got.get("Item")


def _table(tmp_path: Path) -> Path:
    path = tmp_path / "t"
    write_trips_history(path, trips_options(), rows=20, upserts=1, fraction=0.3)
    return path


_HOLDER = """
import json, sys, time
from pathlib import Path
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.lock import LockConfig, table_lock
path, opts, held, release = sys.argv[1], json.loads(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4])
with table_lock(HudiTable(path), operation="holder", config=LockConfig.from_options(opts)) as info:
    held.write_text(info.owner)
    deadline = time.monotonic() + 120
    while not release.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
"""


def test_dynamodb_lock_item_is_java_lock_clients_and_excludes_another_process(
    tmp_path: Path, options: dict[str, str]
) -> None:
    path = _table(tmp_path)
    held, release = tmp_path / "held", tmp_path / "release"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_HOLDER), str(path), json.dumps(options), str(held), str(release)],
        env=env,
        cwd=REPO_ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not held.exists():
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline, "the holder did not take the lock"
            time.sleep(0.05)
        # the item as the Java lock client writes it: partition key = the Hudi table name
        item = _item(options, "t")
        assert item is not None, "no lock item for the table name"
        assert item["ownerName"]["S"] == held.read_text()
        assert item["leaseDuration"]["S"] == "3000" and item["recordVersionNumber"]["S"]
        first = item["recordVersionNumber"]["S"]
        # a second holder waits past the wait time and fails, naming the holder; the holder's heartbeat (lease / 3)
        # keeps renewing the version number meanwhile, so the lease never runs out
        with pytest.raises(TableLockedError) as exc:
            run_clean(HudiTable(str(path)), CleanConfig.from_options(options))
        assert held.read_text() in str(exc.value) and "dynamodb://" in str(exc.value)
        again = _item(options, "t")
        assert again is not None and again["recordVersionNumber"]["S"] != first, "no heartbeat"
    finally:
        release.write_text("1")
        proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert _item(options, "t") is None, "release did not delete the item"
    run_clean(HudiTable(str(path)), CleanConfig.from_options(options))  # free again


def test_java_lock_item_blocks_until_its_lease_ran_out_unrenewed(tmp_path: Path, options: dict[str, str]) -> None:
    """An item written by a Java writer that died (no heartbeat): stale only once its version number stayed the same
    for its own lease; then taken over with a conditional put on that version number."""
    path = _table(tmp_path)
    table_name = options["hoodie.write.lock.dynamodb.table"]
    with table_lock(HudiTable(str(path)), operation="create the table", config=LockConfig.from_options(options)):
        pass
    java_item = {
        "key": {"S": "t"},
        "ownerName": {"S": "java-host5b1e0d0a-0000-4000-8000-000000000000"},
        "leaseDuration": {"S": "2000"},
        "recordVersionNumber": {"S": str(uuid.uuid4())},
    }
    _client(options).put_item(TableName=table_name, Item=java_item)
    # a wait (1 s) shorter than the item's lease (2 s): as Java's lock client, the waiter waits its wait time plus
    # the lease of the item it found held, so one waiter takes a dead holder's item over (before, each waiter gave up
    # at its own wait time and the next started judging anew: a dead Java writer's item, whose lease is Java's
    # hoodie.write.lock.wait_time_ms, blocked our services with the same setting for ever)
    fast = {**options, "hoodie.write.lock.wait_time_ms": "1000"}
    started = time.monotonic()
    with table_lock(HudiTable(str(path)), operation="archive", config=LockConfig.from_options(fast)) as info:
        assert time.monotonic() - started >= 2.0, "taken over before the Java item's lease ran out"
        item = _item(options, "t")
        assert item is not None and item["ownerName"]["S"] == info.owner
    assert _item(options, "t") is None


def test_dynamodb_lock_lost_stops_the_section(tmp_path: Path, options: dict[str, str]) -> None:
    path = _table(tmp_path)
    table = HudiTable(str(path))
    with pytest.raises(TableLockLostError):
        with table_lock(table, operation="archive", config=LockConfig.from_options(options)):
            table.check_lock()
            _client(options).delete_item(TableName=options["hoodie.write.lock.dynamodb.table"], Key={"key": {"S": "t"}})
            table.check_lock()


def test_dynamodb_lock_is_reentrant_and_round_trips_its_options(tmp_path: Path, options: dict[str, str]) -> None:
    path = _table(tmp_path)
    cfg = LockConfig.from_options({**options, "hoodie.write.lock.dynamodb.partition_key": "trips"})
    assert LockConfig.from_options(cfg.to_options()) == cfg
    table = HudiTable(str(path))
    with table_lock(table, operation="outer", config=cfg) as outer:
        with table_lock(table, operation="inner", config=cfg) as inner:
            assert inner == outer
        assert _item(options, "trips") is not None
    assert _item(options, "trips") is None
