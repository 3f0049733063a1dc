"""A fault-injecting HTTP proxy in front of the test S3 server (moto), for ambiguous-commit tests.

Clients (obstore, pyarrow's S3 client, hudi-rs, subprocesses through ``AWS_ENDPOINT_URL``) talk to the proxy as if
it were the store; every request is forwarded byte for byte (headers unchanged, so SigV4 signatures stay valid),
one request per connection. A :class:`Fault` matching a request (method + regex on the path) changes what happens
to it, ``times`` times:

- ``drop_response``: the request is forwarded and applied by the store, then the connection is closed without the
  response (a lost response: the client cannot know the write happened);
- ``error``: ``status`` (default 503) is answered without forwarding (the store never sees the request);
- ``hang``: the connection is held ``seconds`` and then closed without an answer; nothing is forwarded, or, with
  ``forward=True``, the request is forwarded (and applied) first (a store slower to answer than the client waits).

Every faulted request is recorded in :attr:`FaultProxy.hits` (method, path, action) so tests can assert that the
fault really fired.
"""

from __future__ import annotations

import re
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Literal
from urllib.parse import urlsplit

Action = Literal["drop_response", "error", "hang"]


@dataclass
class Fault:
    """One fault: what to do with the next ``times`` requests whose method and path match."""

    method: str
    """HTTP method (``PUT``, ``GET``, ...), or ``*`` for any."""
    path: str
    """Regular expression searched in the request path (``/bucket/key``, without the query)."""
    action: Action
    times: int = 1
    """How many matching requests get the fault (then it is spent)."""
    status: int = 503
    """Status answered by ``error``."""
    seconds: float = 2.0
    """How long ``hang`` holds the connection before closing it."""
    forward: bool = False
    """``hang`` only: forward the request to the store before hanging."""
    after: Fault | None = None
    """Active only once this other fault is spent (e.g. reads fail only after the create's answer was lost)."""
    _regex: re.Pattern[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._regex = re.compile(self.path)

    def matches(self, method: str, path: str) -> bool:
        if self.after is not None and self.after.times > 0:
            return False
        return self.times > 0 and self.method in ("*", method) and self._regex.search(path) is not None


@dataclass(frozen=True)
class Hit:
    """A request a fault was applied to."""

    method: str
    path: str
    action: Action


class FaultProxy:
    """The proxy: ``FaultProxy(upstream="http://127.0.0.1:5000")``, ``start()``, then use :attr:`endpoint`.

    Thread-safe: faults can be added while clients run (:meth:`add`), :meth:`clear` removes the unspent ones.
    """

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self._faults: list[Fault] = []
        self._guard = threading.Lock()
        self.hits: list[Hit] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _handle(self) -> None:
                proxy._serve(self)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fault-proxy", daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FaultProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def add(self, fault: Fault) -> Fault:
        with self._guard:
            self._faults.append(fault)
        return fault

    def clear(self) -> None:
        with self._guard:
            self._faults.clear()

    def hits_of(self, action: Action) -> list[Hit]:
        with self._guard:
            return [h for h in self.hits if h.action == action]

    # -- serving -------------------------------------------------------------------------------------------------
    def _take(self, method: str, path: str) -> Fault | None:
        with self._guard:
            for f in self._faults:
                if f.matches(method, path):
                    f.times -= 1
                    self.hits.append(Hit(method, path, f.action))
                    return f
        return None

    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        h.close_connection = True
        body = _read_body(h)
        path = urlsplit(h.path).path
        fault = self._take(h.command, path)
        if fault is not None and fault.action == "error":
            payload = b"<Error><Code>ServiceUnavailable</Code><Message>injected</Message></Error>"
            h.send_response(fault.status)
            h.send_header("Content-Type", "application/xml")
            h.send_header("Content-Length", str(len(payload)))
            h.send_header("Connection", "close")
            h.end_headers()
            h.wfile.write(payload)
            return
        if fault is not None and fault.action == "hang":
            if fault.forward:
                self._forward(h, body)
            time.sleep(fault.seconds)
            _abort(h)
            return
        response = self._forward(h, body)
        if fault is not None and fault.action == "drop_response":
            _abort(h)  # the store applied the request; its answer is lost
            return
        h.wfile.write(response)
        h.wfile.flush()

    def _forward(self, h: BaseHTTPRequestHandler, body: bytes) -> bytes:
        lines = [f"{h.command} {h.path} HTTP/1.1"]
        for k, v in h.headers.items():
            if k.lower() in ("connection", "keep-alive", "proxy-connection"):
                continue
            lines.append(f"{k}: {v}")
        lines.append("Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        with socket.create_connection(self.upstream, timeout=60) as up:
            up.sendall(head + body)
            chunks = []
            while True:
                data = up.recv(65536)
                if not data:
                    break
                chunks.append(data)
        return b"".join(chunks)


def _read_body(h: BaseHTTPRequestHandler) -> bytes:
    """The raw request body: ``Content-Length`` bytes, or the chunked encoding as sent (forwarded unchanged)."""
    length = h.headers.get("Content-Length")
    if length is not None:
        return h.rfile.read(int(length))
    if "chunked" in (h.headers.get("Transfer-Encoding") or "").lower():
        out = bytearray()
        while True:
            size_line = h.rfile.readline()
            out += size_line
            size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while True:  # trailers up to the empty line
                    line = h.rfile.readline()
                    out += line
                    if line in (b"\r\n", b"\n", b""):
                        return bytes(out)
            out += h.rfile.read(size + 2)
    return b""


def _abort(h: BaseHTTPRequestHandler) -> None:
    """Close the client's connection without an answer."""
    try:
        h.connection.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
