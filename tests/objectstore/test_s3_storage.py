"""Storage on a real S3 server (moto in server mode, tests/objectstore/conftest.py): atomic create-if-absent with
S3 conditional writes, racing processes, the table lock, a table written and read on S3, ``s3a://`` URIs, the
standard AWS environment, and stores without conditional writes (detected, never a silent check-then-PUT)."""

from __future__ import annotations

import http.client
import multiprocessing
import queue
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pandas as pd
import pyarrow as pa
import pytest

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.errors import FileAlreadyExistsError, InvalidOptionError, StorageError
from lake_orchestration.hudi.table import HudiTable, read_snapshot_table
from lake_orchestration.hudi.write import WriteOptions, write_table
from lake_orchestration.io.storage import Storage
from tests.objectstore import _s3_workers
from tests.objectstore.conftest import ACCESS_KEY, S3Bucket
from tests.oracle import assert_same_rows

RACERS = 8
ROUNDS = 6


def _opts() -> WriteOptions:
    return WriteOptions(
        table_name="trips",
        record_key_fields=("uuid",),
        partition_fields=("city",),
        precombine_field="ts",
    )


def _conditional_puts(s3: S3Bucket) -> list[str]:
    """Keys PUT with ``If-None-Match: *``."""
    return [r.key for r in s3.requests.list() if r.kind == "PUT" and ("If-None-Match", "*") in r.headers]


# -- create-if-absent ------------------------------------------------------------------------------------------
def test_create_if_absent_is_one_conditional_put(s3: S3Bucket) -> None:
    st = Storage(s3.uri("t"), options=s3.storage_options)
    path = st.join(".hoodie", "20260101000000000.commit.requested")
    st.create_if_absent(path, b"first")
    with pytest.raises(FileAlreadyExistsError, match=r"s3://.*/t/\.hoodie/20260101000000000\.commit\.requested"):
        st.create_if_absent(path, b"second")
    assert st.read_bytes(path) == b"first"
    # the store decided: both creates were PUTs with If-None-Match, the second refused with 412
    mine = [
        r for r in s3.requests.list() if r.key == "t/.hoodie/20260101000000000.commit.requested" and r.kind == "PUT"
    ]
    assert [(r.status, ("If-None-Match", "*") in r.headers) for r in mine] == [(200, True), (412, True)]
    assert st.atomic_create


def test_racing_processes_create_the_same_instant_file_exactly_one_wins(s3: S3Bucket) -> None:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(RACERS)
    results = ctx.Queue()
    uri = s3.uri("race")
    procs = [
        ctx.Process(target=_s3_workers.race_create, args=(uri, s3.storage_options, ROUNDS, i, barrier, results))
        for i in range(RACERS)
    ]
    for p in procs:
        p.start()
    outcomes = _collect(results, RACERS * ROUNDS, procs)
    for p in procs:
        p.join(timeout=120)
    errors = [o for o in outcomes if o[2] not in ("won", "exists")]
    assert not errors, errors
    st = Storage(uri, options=s3.storage_options)
    for r in range(ROUNDS):
        winners = [ident for rr, ident, what in outcomes if rr == r and what == "won"]
        assert len(winners) == 1, f"round {r}: {len(winners)} racers created the same file: {winners}"
        content = st.read_bytes(st.join(".hoodie", f"20260101000000{r:03d}.deltacommit.requested"))
        assert content == f"racer-{winners[0]}".encode(), f"round {r}: the winner's content was overwritten"


def test_the_test_server_decides_a_conditional_put_atomically(s3: S3Bucket, monkeypatch: pytest.MonkeyPatch) -> None:
    """moto checks ``If-None-Match: *`` and then stores, with no lock between (CI saw 2 of 8 racers win one instant
    file); the server fixture serialises conditional writes so the races above test our code, as S3 would. Here
    moto's existence check is slowed so both creates are inside it together: only one may be answered 200."""
    from moto.s3.models import S3Backend

    real_get_object = S3Backend.get_object

    def slow_get_object(self: Any, bucket_name: str, key_name: str, *args: Any, **kwargs: Any) -> Any:
        found = real_get_object(self, bucket_name, key_name, *args, **kwargs)
        if key_name.startswith("slow/"):
            time.sleep(0.5)  # the window between moto's check and its store
        return found

    monkeypatch.setattr(S3Backend, "get_object", slow_get_object)
    st = Storage(s3.uri("slow"), options=s3.storage_options)
    st.create_if_absent(st.join("warm-up"), b"")  # connection set-up outside the race
    path = st.join("20260101000000000.deltacommit.requested")
    outcomes: dict[int, str] = {}

    def create(ident: int) -> None:
        try:
            st.create_if_absent(path, f"racer-{ident}".encode())
            outcomes[ident] = "won"
        except FileAlreadyExistsError:
            outcomes[ident] = "exists"

    threads = [threading.Thread(target=create, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(outcomes.values()) == ["exists", "won"], outcomes
    winner = next(i for i, what in outcomes.items() if what == "won")
    assert st.read_bytes(path) == f"racer-{winner}".encode()


def _collect(results: Any, n: int, procs: list[Any]) -> list[tuple[int, int, str]]:
    out: list[tuple[int, int, str]] = []
    while len(out) < n:
        try:
            out.append(results.get(timeout=240))
        except queue.Empty:
            alive = [p.exitcode for p in procs]
            pytest.fail(f"racers stopped reporting after {len(out)}/{n} results (exit codes {alive})")
    return out


# -- the table lock on S3 --------------------------------------------------------------------------------------
@pytest.fixture
def s3_table(s3: S3Bucket) -> str:
    uri = s3.uri("trips")
    write_table(
        uri,
        generate_trips(20, partitions=2, seed=1),
        operation="bulk_insert",
        options=_opts(),
        storage_options=s3.storage_options,
    )
    return uri


def test_table_lock_acquire_release_on_s3(s3: S3Bucket, s3_table: str) -> None:
    from lake_orchestration.hudi.table.lock import read_lock, table_lock

    table = HudiTable(s3_table, storage_options=s3.storage_options)
    s3.requests.reset()
    with table_lock(table, operation="archive") as info:
        assert "trips/.hoodie/lock" in s3.keys()
        assert read_lock(table) is not None and read_lock(table).token == info.token  # type: ignore[union-attr]
    assert "trips/.hoodie/lock" not in s3.keys()
    assert "trips/.hoodie/lock" in _conditional_puts(s3), "the lock file must be created with If-None-Match: *"


def test_table_lock_contention_between_two_processes_on_s3(s3: S3Bucket, s3_table: str) -> None:
    from lake_orchestration.errors import TableLockedError
    from lake_orchestration.hudi.table.lock import LockConfig, table_lock

    ctx = multiprocessing.get_context("spawn")
    held, release, results = ctx.Event(), ctx.Event(), ctx.Queue()
    holder = ctx.Process(target=_s3_workers.hold_lock, args=(s3_table, s3.storage_options, held, release, results))
    holder.start()
    try:
        assert held.wait(180), "the holder did not take the lock"
        what, pid = results.get(timeout=10)
        assert what == "held", pid
        table = HudiTable(s3_table, storage_options=s3.storage_options)
        with pytest.raises(TableLockedError, match=rf"locked by .*:{pid} \(holder\)"):
            with table_lock(table, operation="clean", config=LockConfig(wait_time_ms=1500, retry_wait_ms=200)):
                pass
        release.set()
        # the waiter gets it once the holder releases
        with table_lock(table, operation="clean", config=LockConfig(wait_time_ms=120_000, retry_wait_ms=200)) as info:
            assert info.operation == "clean"
        assert results.get(timeout=60) == ("released", pid)
    finally:
        release.set()
        holder.join(timeout=60)
    assert "trips/.hoodie/lock" not in s3.keys()


def test_table_lock_racing_processes_exactly_one_holds_it(s3: S3Bucket, s3_table: str) -> None:
    ctx = multiprocessing.get_context("spawn")
    racers, rounds = 6, 4
    barrier = ctx.Barrier(racers)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=_s3_workers.race_lock, args=(s3_table, s3.storage_options, rounds, i, barrier, results))
        for i in range(racers)
    ]
    for p in procs:
        p.start()
    outcomes = _collect(results, racers * rounds, procs)
    for p in procs:
        p.join(timeout=120)
    assert not [o for o in outcomes if o[2] not in ("won", "locked")], outcomes
    per_round = Counter(r for r, _, what in outcomes if what == "won")
    assert per_round == dict.fromkeys(range(rounds), 1), per_round
    assert "trips/.hoodie/lock" not in s3.keys()


# -- a table on S3 through the Python API ----------------------------------------------------------------------
def test_table_written_and_read_on_s3_equals_pandas_and_hudi_rs(s3: S3Bucket) -> None:
    uri = s3.uri("lake", "trips")
    base = generate_trips(40, partitions=2, seed=3)
    upd = generate_updates(base, fraction=0.3, seed=4)
    write_table(uri, base, operation="bulk_insert", options=_opts(), storage_options=s3.storage_options)
    write_table(uri, upd, operation="upsert", options=_opts(), storage_options=s3.storage_options)

    table = HudiTable(uri, storage_options=s3.storage_options)
    ours = read_snapshot_table(table)
    # independent expectation: the update with the larger ts wins per key
    both = pd.concat([base.to_pandas(), upd.to_pandas()]).sort_values("ts").groupby("uuid").tail(1)
    got = ours.select(base.column_names).to_pandas()
    cols = list(base.column_names)
    pd.testing.assert_frame_equal(
        got.sort_values("uuid").reset_index(drop=True)[cols], both.sort_values("uuid").reset_index(drop=True)[cols]
    )
    # hudi-rs reads the same table over HTTP from the same server
    from hudi import HudiTableBuilder

    batches = HudiTableBuilder.from_base_uri(uri).with_storage_options(s3.hudi_rs_options).build().read()
    assert_same_rows(ours, pa.Table.from_batches(batches))
    # every timeline file and hoodie.properties was created with a conditional PUT
    timeline = [k for k in s3.keys("lake/trips/.hoodie") if k.rsplit("/", 1)[-1][:1].isdigit()]
    assert timeline, "no timeline files on S3"
    conditional = set(_conditional_puts(s3))
    assert set(timeline) <= conditional, sorted(set(timeline) - conditional)
    assert "lake/trips/.hoodie/hoodie.properties" in conditional


def test_s3a_uri_is_the_same_store(s3: S3Bucket) -> None:
    uri = s3.uri("trips", scheme="s3a")
    write_table(
        uri,
        generate_trips(10, partitions=1, seed=5),
        operation="bulk_insert",
        options=_opts(),
        storage_options=s3.storage_options,
    )
    via_s3a = HudiTable(uri, storage_options=s3.storage_options)
    via_s3 = HudiTable(s3.uri("trips"), storage_options=s3.storage_options)
    assert via_s3a.storage.uri(via_s3a.storage.join(".hoodie")) == f"s3a://{s3.bucket}/trips/.hoodie"
    assert_same_rows(read_snapshot_table(via_s3a), read_snapshot_table(via_s3))
    assert "trips/.hoodie/hoodie.properties" in _conditional_puts(s3)


# -- the standard AWS environment ------------------------------------------------------------------------------
def test_environment_only_configuration(s3_env: S3Bucket, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "env-key-id")
    monkeypatch.setenv("AWS_REGION", "eu-west-3")
    st = Storage(s3_env.uri("t"))  # no storage options at all
    st.write_bytes(st.join("data.bin"), b"bulk")  # pyarrow
    st.create_if_absent(st.join(".hoodie", "x.commit"), b"timeline")  # obstore
    assert st.read_bytes(st.join("data.bin")) == b"bulk"
    reqs = s3_env.requests.list()
    assert {(r.access_key, r.region) for r in reqs} == {("env-key-id", "eu-west-3")}, "both clients sign with the env"
    assert sorted(s3_env.keys("t")) == ["t/.hoodie/x.commit", "t/data.bin"]


def test_endpoint_url_s3_wins_over_endpoint_url(s3_env: S3Bucket, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", s3_env.endpoint)
    st = Storage(s3_env.uri("t"))
    st.create_if_absent(st.join("a"), b"1")
    st.write_bytes(st.join("b"), b"2")
    assert s3_env.keys("t") == ["t/a", "t/b"]


def test_aws_profile_configuration(s3_env: S3Bucket, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    creds = tmp_path / "credentials"
    creds.write_text("[lake]\naws_access_key_id = profile-key-id\naws_secret_access_key = profile-secret\n")
    config = tmp_path / "config"
    config.write_text("[profile lake]\nregion = ap-southeast-2\n")
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_PROFILE", "lake")
    st = Storage(s3_env.uri("t"))
    st.write_bytes(st.join("data.bin"), b"bulk")
    st.create_if_absent(st.join(".hoodie", "x.commit"), b"timeline")
    assert {(r.access_key, r.region) for r in s3_env.requests.list()} == {("profile-key-id", "ap-southeast-2")}


def test_explicit_options_win_over_the_environment(s3: S3Bucket, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "env-key-id")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "env-token")
    st = Storage(s3.uri("t"), options=s3.storage_options)
    st.create_if_absent(st.join("a"), b"1")
    st.write_bytes(st.join("b"), b"2")
    assert {r.access_key for r in s3.requests.list()} == {ACCESS_KEY}


# -- stores without conditional writes -------------------------------------------------------------------------
class _Proxy(ThreadingHTTPServer):
    """An S3-compatible store in front of moto that lacks conditional writes: ``ignore`` drops ``If-None-Match``
    (the store overwrites), ``501`` answers ``501 Not Implemented`` to a PUT carrying it (as stores do that do
    not implement the header)."""

    daemon_threads = True

    def __init__(self, upstream: str, mode: str) -> None:
        self.upstream = urlparse(upstream)
        self.mode = mode
        super().__init__(("127.0.0.1", 0), _ProxyHandler)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _ProxyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Proxy

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _forward(self) -> None:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = self._read_chunked()
        else:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
        hop = ("connection", "keep-alive", "transfer-encoding", "content-length", "expect")
        headers = {k: v for k, v in self.headers.items() if k.lower() not in hop}
        headers["Content-Length"] = str(len(body))
        if self.command == "PUT" and "If-None-Match" in self.headers:
            if self.server.mode == "501":
                payload = (
                    b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>NotImplemented</Code><Message>A header you '
                    b"provided implies functionality that is not implemented</Message><Header>If-None-Match</Header>"
                    b"</Error>"
                )
                self.send_response(501)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                return
            headers = {k: v for k, v in headers.items() if k.lower() != "if-none-match"}
        conn = http.client.HTTPConnection(self.server.upstream.hostname, self.server.upstream.port, timeout=60)
        try:
            conn.request(self.command, self.path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            self.send_response(resp.status)
            for k, v in resp.getheaders():
                if k.lower() not in ("transfer-encoding", "connection", "content-length", "server", "date"):
                    self.send_header(k, v)
            length = resp.getheader("Content-Length", "0") if self.command == "HEAD" else str(len(data))
            self.send_header("Content-Length", length)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
        finally:
            conn.close()

    def _read_chunked(self) -> bytes:
        out = b""
        while True:
            size = int(self.rfile.readline().split(b";", 1)[0].strip(), 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return out
            out += self.rfile.read(size)
            self.rfile.readline()

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _forward


@pytest.fixture(params=["ignore", "501"])
def weak_store(request: pytest.FixtureRequest, s3: S3Bucket) -> Iterator[tuple[S3Bucket, dict[str, str], str]]:
    """``(bucket, storage options through the proxy, mode)``."""
    proxy = _Proxy(s3.endpoint, request.param)
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    try:
        yield s3, {**s3.storage_options, "endpoint_override": proxy.endpoint}, request.param
    finally:
        proxy.shutdown()
        proxy.server_close()


def test_store_without_conditional_writes_is_detected(weak_store: tuple[S3Bucket, dict[str, str], str]) -> None:
    from lake_orchestration.errors import ConditionalWriteUnsupportedError

    s3, options, mode = weak_store
    st = Storage(s3.uri("t"), options=options)
    path = st.join(".hoodie", "20260101000000000.commit.requested")
    with pytest.raises(ConditionalWriteUnsupportedError) as caught:
        st.create_if_absent(path, b"x")
    msg = str(caught.value)
    expected = "ignores the header" if mode == "ignore" else "501 Not Implemented"
    assert expected in msg
    for needed in ("would not be atomic", "conditional_put=false", "InProcessLockProvider", path):
        assert needed in msg, (needed, msg)
    assert s3.keys() == [], "nothing (no instant file, no probe object) may stay behind"
    # the verdict holds for the process: the next create fails the same way without probing again
    s3.requests.reset()
    with pytest.raises(ConditionalWriteUnsupportedError):
        st.create_if_absent(st.join(".hoodie", "hoodie.properties"), b"x")
    assert s3.requests.total() == 0


@pytest.mark.parametrize("weak_store", ["ignore"], indirect=True)
def test_declared_store_without_conditional_writes_needs_a_lock_without_atomic_creates(
    weak_store: tuple[S3Bucket, dict[str, str], str],
) -> None:
    from lake_orchestration.hudi.table.lock import IN_PROCESS_LOCK_PROVIDER, LockConfig

    s3, options, _ = weak_store
    declared = {**options, "conditional_put": "false"}
    uri = s3.uri("trips")
    in_process = WriteOptions(
        table_name="trips",
        record_key_fields=("uuid",),
        partition_fields=("city",),
        precombine_field="ts",
        lock=LockConfig(provider=IN_PROCESS_LOCK_PROVIDER),
    )
    with pytest.raises(InvalidOptionError, match=r"needs atomic creates.*conditional_put=false.*InProcessLockProvider"):
        write_table(
            uri,
            generate_trips(10, partitions=1, seed=5),
            operation="bulk_insert",
            options=_opts(),
            storage_options=declared,
        )
    assert not [k for k in s3.keys() if "/.hoodie/" in k and k.rsplit("/", 1)[-1][:1].isdigit()], s3.keys()
    # a single writer with the in-process lock: creates are a check then a PUT, as the user declared
    write_table(
        uri,
        generate_trips(10, partitions=1, seed=5),
        operation="bulk_insert",
        options=in_process,
        storage_options=declared,
    )
    table = HudiTable(uri, storage_options=declared)
    assert not table.storage.atomic_create
    assert read_snapshot_table(table).num_rows == 10
    with pytest.raises(FileAlreadyExistsError):
        table.storage.create_if_absent(table.storage.join(".hoodie", "hoodie.properties"), b"x")


def test_invalid_conditional_put_value(s3: S3Bucket) -> None:
    with pytest.raises(StorageError, match=r"conditional_put='sometimes': expected auto, true or false"):
        Storage(s3.uri("t"), options={**s3.storage_options, "conditional_put": "sometimes"})


def test_role_arn_is_refused_for_timeline_files_not_silently_ignored(s3: S3Bucket) -> None:
    opts = {"endpoint_override": s3.endpoint, "region": "us-east-1", "role_arn": "arn:aws:iam::123456789012:role/lake"}
    st = Storage(s3.uri("t"), options=opts)
    with pytest.raises(StorageError, match=r"role_arn is not supported for timeline files"):
        st.create_if_absent(st.join(".hoodie", "20260101000000000.commit.requested"), b"x")
    assert s3.keys() == []
