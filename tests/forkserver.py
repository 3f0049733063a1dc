"""A fork server for tests that start many short Python processes: the imports paid once, each run a forked child.

``python forkserver.py [--import MODULE | --script PATH] ...`` imports the modules (``--script``: runs the file as a
module named ``__forkserver_preload__``, so its ``if __name__ == "__main__"`` part does not run), then answers one
request per stdin line, ``{"argv": [...], "code" | "script" | "module": ..., "env": {...}, "cwd": ...}``, each in a
forked child, a fresh copy of the server as it was before any request: the child takes the request's environment and
working folder, sends stdout and stderr to files, and runs ``code`` as ``python -c code *argv`` would, ``script`` as
``python script *argv`` or ``module`` as ``python -m module *argv`` would (``__name__ == "__main__"``, ``sys.argv``;
an uncaught exception prints its traceback and exits 1; ``SystemExit`` / ``os._exit`` as in any process; at the end
non-daemon threads are waited for and the atexit callbacks the run registered are called). One answer line per
request: ``{"returncode": ..., "stdout": ..., "stderr": ...}``. So no state carries from one run to the next (as with
a process per run) and a kill (``os._exit``) is a real process's, without paying the interpreter's start and the
imports (~2 s of CPU for pyarrow, polars, pypaimon or lake_orchestration) per run.

:class:`ForkServer` is the tests' side (stdlib only here: the server also runs in other venvs, e.g. pypaimon's).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

SERVER = Path(__file__).resolve()


def _child(request: dict[str, Any], out: int, err: int) -> None:
    """The forked child: run the request as its own process would, then exit (never returns)."""
    import atexit
    import runpy
    import threading
    import time
    import traceback

    code = 0
    # the server's atexit callbacks are not the child's: they may wait on threads a forked child does not have
    # (polars' spill-file cleaner); the child runs only the callbacks its own run registers
    atexit._clear()
    try:
        os.dup2(out, 1)
        os.dup2(err, 2)
        os.environ.clear()
        os.environ.update(request["env"])
        time.tzset()
        os.chdir(request["cwd"])
        if "script" in request:
            sys.argv = [request["script"], *request["argv"]]
            sys.path[0] = os.path.dirname(os.path.abspath(request["script"]))
            runpy.run_path(request["script"], run_name="__main__")
        elif "module" in request:
            sys.argv = ["-m", *request["argv"]]
            sys.path[0] = os.getcwd()
            sys.modules.pop(request["module"], None)  # as with -m: run as __main__, not the preloaded copy
            runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
        else:
            sys.argv = ["-c", *request["argv"]]
            sys.path[0] = ""
            exec(compile(request["code"], "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        try:  # then as the interpreter exits: wait for non-daemon threads, run the atexit callbacks, flush
            threading._shutdown()  # type: ignore[attr-defined]
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def serve(argv: Sequence[str]) -> None:
    import importlib
    import runpy
    import tempfile

    # not this file's folder (tests/, whose packages would shadow dagster, airflow ...): as ``python -c`` until a
    # child sets its own (the script's folder, or "" for code)
    sys.path[0] = ""
    args = list(argv)
    while args:
        flag, target = args[0], args[1]
        del args[:2]
        if flag == "--import":
            # and what the module's commands import when they run (lake_orchestration.cli.app's PRELOAD: the CLI
            # starts light, its children here should not each pay those imports)
            for name in (target, *getattr(importlib.import_module(target), "PRELOAD", ())):
                importlib.import_module(name)
        elif flag == "--script":
            runpy.run_path(target, run_name="__forkserver_preload__")
        else:
            raise SystemExit(f"forkserver: unknown option {flag!r} (expected --import MODULE or --script PATH)")
    proto = os.fdopen(os.dup(1), "w")  # answers; fd 1 itself goes to stderr, so no stray print breaks the protocol
    os.dup2(2, 1)
    for line in sys.stdin:
        request = json.loads(line)
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                _child(request, out.fileno(), err.fileno())
            _, status = os.waitpid(pid, 0)
            answer: dict[str, Any] = {"returncode": os.waitstatus_to_exitcode(status)}
            for name, f in (("stdout", out), ("stderr", err)):
                f.seek(0)
                answer[name] = f.read().decode(errors="replace")
        proto.write(json.dumps(answer) + "\n")
        proto.flush()


class ForkServer:
    """A :mod:`forkserver` process (started on first use, restarted if it died or a run timed out)."""

    def __init__(
        self,
        python: Path | str,
        preload: Sequence[str],
        log: Path,
        env: Mapping[str, str] | None = None,
        cwd: Path | str | None = None,
    ) -> None:
        """``preload``: the server's options (``--import MODULE``, ``--script PATH``); ``env``/``cwd``: the server's
        own (``PYTHONPATH`` there decides what the runs can import)."""
        self.python = str(python)
        self.preload = list(preload)
        self.log = log
        self.env = dict(os.environ if env is None else env)
        self.cwd = str(cwd) if cwd is not None else None
        self._proc: subprocess.Popen[str] | None = None

    def _start(self) -> subprocess.Popen[str]:
        if self._proc is None or self._proc.poll() is not None:
            with open(self.log, "a") as log:
                self._proc = subprocess.Popen(
                    [self.python, str(SERVER), *self.preload],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    text=True,
                    env=self.env,
                    cwd=self.cwd,
                    start_new_session=True,  # a timed-out run is stopped with the server (its process group)
                )
        return self._proc

    def run(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path | str,
        timeout: float,
        code: str | None = None,
        script: Path | str | None = None,
        module: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """``python -c code *argv`` (or ``python script *argv``, ``python -m module *argv``) in ``cwd`` with ``env``,
        in a forked child."""
        assert [code, script, module].count(None) == 2, "give one of code, script and module"
        request: dict[str, Any] = {"argv": list(argv), "env": dict(env), "cwd": str(cwd)}
        if code is not None:
            request["code"] = code
        elif script is not None:
            request["script"] = str(script)
        else:
            request["module"] = module
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        line = proc.stdout.readline() if ready else ""
        if not line:
            if not ready:
                self.close()
                raise subprocess.TimeoutExpired([self.python, *(argv or [])], timeout)
            rc = proc.wait()
            self.close()
            raise AssertionError(f"the fork server ({self.preload}) exited {rc}; its log:\n{self.log_tail()}")
        answer = json.loads(line)
        return subprocess.CompletedProcess(list(argv), answer["returncode"], answer["stdout"], answer["stderr"])

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()


if __name__ == "__main__":
    serve(sys.argv[1:])
