"""A minimal Chrome DevTools Protocol client over Debian's headless ``chromium`` (no browser download, no Node).

Only what the browser tests need: launch, open a page, evaluate JavaScript, poll until the page shows text, take a
screenshot. Protocol reference: https://chromedevtools.github.io/devtools-protocol/ (Target, Page, Runtime,
Emulation domains; flattened sessions addressed by ``sessionId``).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from websockets.sync.client import ClientConnection, connect

CHROMIUM_CANDIDATES = ("chromium", "chromium-browser")


def find_chromium() -> str | None:
    """The Chromium executable: ``CHROMIUM_BIN`` if set, else Debian's ``chromium`` on PATH."""
    explicit = os.environ.get("CHROMIUM_BIN")
    if explicit:
        return shutil.which(explicit)
    for name in CHROMIUM_CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


class CdpError(RuntimeError):
    pass


class Browser:
    """One headless Chromium process with one page, driven over its DevTools websocket."""

    def __init__(self, executable: str, *, width: int = 1440, height: int = 900, timeout: float = 30.0) -> None:
        self._profile = tempfile.mkdtemp(prefix="lake-orch-chromium-")
        args = [
            executable,
            "--headless=new",
            "--remote-debugging-port=0",
            f"--user-data-dir={self._profile}",
            f"--window-size={width},{height}",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-extensions",
            "--disable-background-networking",
            "--hide-scrollbars",
            "about:blank",
        ]
        if os.geteuid() == 0:
            args.insert(1, "--no-sandbox")  # Chromium refuses to run as root with its sandbox on
        try:
            self._proc = subprocess.Popen(
                args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True
            )
        except OSError:
            shutil.rmtree(self._profile, ignore_errors=True)
            raise
        self._stderr: list[str] = []
        self._ws_url: str | None = None
        self._ws_ready = threading.Event()
        self._stack = contextlib.ExitStack()
        try:
            self._attach(executable, width, height, timeout)
        except BaseException:
            self.close()  # never leave a browser behind
            raise

    def _attach(self, executable: str, width: int, height: int, timeout: float) -> None:
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        if not self._ws_ready.wait(timeout) or self._ws_url is None:
            raise CdpError(
                f"chromium ({executable}) did not open its DevTools endpoint within {timeout}s; its stderr:\n"
                + "".join(self._stderr)[-2000:]
            )
        self._ws: ClientConnection = self._stack.enter_context(
            connect(self._ws_url, max_size=None, open_timeout=timeout)
        )
        self._next_id = 0
        target = self._call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self._session = self._call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.send("Page.enable")
        self.send("Runtime.enable")
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )

    def _drain_stderr(self) -> None:
        """Read chromium's stderr (so it never blocks on a full pipe) and catch its DevTools websocket URL."""
        assert self._proc.stderr is not None
        for line in self._proc.stderr:
            self._stderr = [*self._stderr[-200:], line]
            m = re.search(r"DevTools listening on (ws://\S+)", line)
            if m and self._ws_url is None:
                self._ws_url = m.group(1)
                self._ws_ready.set()
        self._ws_ready.set()  # chromium exited: stop waiting

    def _call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self._ws.send(json.dumps(msg))
        while True:
            reply = json.loads(self._ws.recv(timeout=60))
            if reply.get("id") != self._next_id:
                continue  # an event, or a reply to nothing we wait for
            if "error" in reply:
                raise CdpError(f"{method} failed: {reply['error']}")
            return reply.get("result", {})

    def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a command to the page and return its result."""
        return self._call(method, params, session=self._session)

    def goto(self, url: str) -> None:
        result = self.send("Page.navigate", {"url": url})
        if result.get("errorText"):
            raise CdpError(f"navigating to {url} failed: {result['errorText']}")

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise CdpError(f"{expression!r} raised in the page: {result['exceptionDetails']}")
        return result["result"].get("value")

    def text(self) -> str:
        """The page's visible text (``document.body.innerText``)."""
        return self.evaluate("document.body ? document.body.innerText : ''") or ""

    def wait_for(self, predicate: Callable[[str], bool], *, timeout: float, what: str) -> str:
        """Poll the page text until ``predicate(text)`` holds; return that text or raise naming ``what``."""
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            try:
                text = self.text()
            except CdpError:  # mid-navigation: no execution context yet
                text = ""
            if predicate(text):
                return text
            time.sleep(0.25)
        raise CdpError(f"page did not show {what} within {timeout}s; its text was:\n{text[:3000]}")

    def screenshot(self, path: Path) -> Path:
        data = self.send("Page.captureScreenshot", {"format": "png"})["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._stack.close()
        if self._proc.poll() is None:
            try:
                os.killpg(self._proc.pid, signal.SIGTERM)
                self._proc.wait(timeout=10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self._proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self._proc.wait(timeout=10)
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
