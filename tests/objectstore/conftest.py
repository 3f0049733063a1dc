"""A real S3 server for the object-store tests: moto in server mode on 127.0.0.1, a fresh bucket per test.

The project talks HTTP to it through the clients it uses in production (pyarrow's S3FileSystem, obstore; hudi-rs
in the oracle; subprocesses through the standard AWS environment). moto's in-process mocks are not used.

Fixtures:

- ``s3_server`` (session): the running server (``endpoint``, ``requests`` recorder).
- ``s3`` (function): an :class:`S3Bucket` with a new empty bucket: ``s3.uri("t1")`` -> ``s3://<bucket>/t1``,
  ``s3.storage_options`` (the project's ``Storage`` options), ``s3.env`` (``AWS_*`` variables for subprocesses and
  the CLI), ``s3.requests`` (the requests this bucket received: ``s3.requests.reset()``, ``.counts()``).
"""

from __future__ import annotations

import io
import logging
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote

import pytest

ACCESS_KEY = "lake-orch-test-key"
SECRET_KEY = "lake-orch-test-secret"
REGION = "us-east-1"


@dataclass(frozen=True)
class S3Request:
    """One HTTP request the S3 server answered."""

    method: str
    """``GET``, ``HEAD``, ``PUT``, ``POST``, ``DELETE``."""
    kind: str
    """What it was, S3-wise: ``LIST`` (list objects), ``GET``/``HEAD``/``PUT``/``DELETE`` (one object),
    ``MULTIPART`` (create/complete/abort a multipart upload), ``PUT_PART`` (one part), ``DELETE_MULTI``
    (``POST ?delete``), ``HEAD_BUCKET``, ``PUT_BUCKET``, ``GET_BUCKET`` (other bucket-level calls)."""
    bucket: str
    key: str
    """Object key (empty for bucket-level requests)."""
    query: str
    status: int
    access_key: str = ""
    """Access key id the request was signed with (SigV4 ``Credential=``); empty if unsigned."""
    region: str = ""
    """Region of the SigV4 credential scope."""
    headers: tuple[tuple[str, str], ...] = ()
    """Request headers whose name starts with ``If-`` (conditional requests)."""


def classify(method: str, key: str, query: dict[str, list[str]]) -> str:
    """The S3 operation of a path-style request (``/bucket/key?query``)."""
    if not key:
        if method == "GET":
            bucket_subresources = {"location", "versioning", "acl", "policy", "uploads", "tagging", "cors"}
            return "GET_BUCKET" if bucket_subresources & set(query) else "LIST"
        if method == "POST" and "delete" in query:
            return "DELETE_MULTI"
        return f"{method}_BUCKET"
    if "uploadId" in query or "uploads" in query:
        return "PUT_PART" if method == "PUT" and "partNumber" in query else "MULTIPART"
    return method


@dataclass
class RequestLog:
    """Every request the server answered (thread-safe); filter by bucket with :meth:`for_bucket`."""

    _lock: threading.Lock = field(default_factory=threading.Lock)
    _items: list[S3Request] = field(default_factory=list)

    def record(self, req: S3Request) -> None:
        with self._lock:
            self._items.append(req)

    def all(self) -> list[S3Request]:
        with self._lock:
            return list(self._items)


class RecordingMiddleware:
    """WSGI middleware in front of moto's app: records method, path kind and status of every request."""

    def __init__(self, app: Callable[..., Any], log: RequestLog) -> None:
        self.app = app
        self.log = log
        # moto checks ``If-None-Match``/``If-Match`` and then stores, two steps with no lock between them, so two
        # racing conditional PUTs of one key can both succeed (seen in CI: 2 of 8 racers "won" one instant file).
        # S3 decides a conditional write atomically; the test server must too, or it tests moto's race, not ours.
        self._conditional = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        method = environ.get("REQUEST_METHOD", "")
        path = unquote(environ.get("PATH_INFO", "")).lstrip("/")
        bucket, _, key = path.partition("/")
        qs = environ.get("QUERY_STRING", "")
        status: list[int] = [0]

        def _start(status_line: str, headers: Any, exc_info: Any = None) -> Any:
            status[0] = int(status_line.split(" ", 1)[0])
            return start_response(status_line, headers, exc_info) if exc_info else start_response(status_line, headers)

        auth = environ.get("HTTP_AUTHORIZATION", "")
        scope = auth.split("Credential=", 1)[1].split(",", 1)[0].split("/") if "Credential=" in auth else []
        conditions = tuple(
            (k[5:].replace("_", "-").title(), str(v)) for k, v in environ.items() if k.startswith("HTTP_IF_")
        )
        try:
            if conditions and method in ("PUT", "POST"):
                _buffer_body(environ)  # a slow client's upload must not hold the lock
                with self._conditional:
                    return self.app(environ, _start)
            return self.app(environ, _start)
        finally:
            query = parse_qs(qs, keep_blank_values=True)
            self.log.record(
                S3Request(
                    method,
                    classify(method, key, query),
                    bucket,
                    key,
                    qs,
                    status[0],
                    access_key=scope[0] if scope else "",
                    region=scope[2] if len(scope) > 2 else "",
                    headers=conditions,
                )
            )


def _buffer_body(environ: dict[str, Any]) -> None:
    """Read the request body before the conditional-write lock is taken (moto reads it from ``wsgi.input``)."""
    length = environ.get("CONTENT_LENGTH")
    if length and length.isdigit():
        environ["wsgi.input"] = io.BytesIO(environ["wsgi.input"].read(int(length)))


@dataclass
class BucketRequests:
    """The requests one bucket received since the fixture started (or the last :meth:`reset`)."""

    log: RequestLog
    bucket: str
    _start: int = 0

    def reset(self) -> None:
        """Count from now on."""
        self._start = len(self.log.all())

    def list(self) -> list[S3Request]:
        return [r for r in self.log.all()[self._start :] if r.bucket == self.bucket]

    def counts(self) -> Counter[str]:
        """Requests per kind: ``{"LIST": 3, "GET": 10, "HEAD": 2, "PUT": 4, ...}``."""
        return Counter(r.kind for r in self.list())

    def total(self) -> int:
        return len(self.list())


@dataclass
class S3Server:
    endpoint: str
    """``http://127.0.0.1:<port>``."""
    requests: RequestLog


@dataclass
class S3Bucket:
    """A fresh bucket on the test S3 server."""

    server: S3Server
    bucket: str
    requests: BucketRequests

    @property
    def endpoint(self) -> str:
        return self.server.endpoint

    def uri(self, *parts: str, scheme: str = "s3") -> str:
        """``s3://<bucket>/<parts...>`` (``scheme="s3a"`` for Java Hudi's form)."""
        tail = "/".join(p.strip("/") for p in parts if p)
        return f"{scheme}://{self.bucket}/{tail}" if tail else f"{scheme}://{self.bucket}"

    @property
    def base_uri(self) -> str:
        return self.uri()

    @property
    def storage_options(self) -> dict[str, str]:
        """Options of the project's ``Storage`` / ``HudiTable(storage_options=...)`` (pyarrow's names)."""
        return {
            "endpoint_override": self.endpoint,
            "region": REGION,
            "access_key": ACCESS_KEY,
            "secret_key": SECRET_KEY,
        }

    @property
    def env(self) -> dict[str, str]:
        """The standard AWS environment for subprocesses and the CLI (merge into ``os.environ``)."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            # no ~/.aws/config or EC2 metadata lookups on the test machine
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_CONFIG_FILE": "/dev/null",
            "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
        }

    @property
    def hudi_rs_options(self) -> dict[str, str]:
        """Storage options for hudi-rs (``HudiTableBuilder.with_storage_options``)."""
        return {
            "aws_endpoint_url": self.endpoint,
            "aws_access_key_id": ACCESS_KEY,
            "aws_secret_access_key": SECRET_KEY,
            "aws_region": REGION,
            "aws_allow_http": "true",
        }

    def keys(self, prefix: str = "") -> list[str]:
        """Every object key under ``prefix`` (read through pyarrow, not counted separately)."""
        import pyarrow.fs as pafs

        fs = pafs.S3FileSystem(
            endpoint_override=self.endpoint, region=REGION, access_key=ACCESS_KEY, secret_key=SECRET_KEY
        )
        root = f"{self.bucket}/{prefix.strip('/')}".rstrip("/")
        infos = fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True))
        return sorted(i.path[len(self.bucket) + 1 :] for i in infos if i.type == pafs.FileType.File)


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """moto's S3 server on 127.0.0.1 (a free port), for the whole test session."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    log = RequestLog()
    wsgi = server._server  # the werkzeug server: wrap its app to record requests
    assert wsgi is not None
    wsgi.app = RecordingMiddleware(wsgi.app, log)
    host, port = server.get_host_and_port()
    try:
        yield S3Server(endpoint=f"http://{host}:{port}", requests=log)
    finally:
        server.stop()


@pytest.fixture
def s3(s3_server: S3Server) -> S3Bucket:
    """A new empty bucket on the S3 server (the request log counts from its creation on)."""
    import pyarrow.fs as pafs

    bucket = f"lake-{uuid.uuid4().hex[:20]}"
    fs = pafs.S3FileSystem(
        endpoint_override=s3_server.endpoint,
        region=REGION,
        access_key=ACCESS_KEY,
        secret_key=SECRET_KEY,
        allow_bucket_creation=True,
    )
    fs.create_dir(bucket)
    requests = BucketRequests(s3_server.requests, bucket)
    requests.reset()
    return S3Bucket(server=s3_server, bucket=bucket, requests=requests)


@pytest.fixture
def s3_env(s3: S3Bucket, monkeypatch: pytest.MonkeyPatch) -> S3Bucket:
    """``s3`` with its ``AWS_*`` variables set in this process's environment (other ``AWS_*`` removed)."""
    import os

    for k in list(os.environ):
        if k.startswith("AWS_"):
            monkeypatch.delenv(k)
    for k, v in s3.env.items():
        monkeypatch.setenv(k, v)
    return s3


@pytest.fixture
def proxy(s3: S3Bucket) -> Iterator[Any]:
    """The fault-injecting proxy (:class:`tests.objectstore.fault_proxy.FaultProxy`) in front of this test's S3
    server: clients given its ``endpoint`` reach the store through it."""
    from tests.objectstore.fault_proxy import FaultProxy

    p = FaultProxy(s3.endpoint).start()
    try:
        yield p
    finally:
        p.stop()
