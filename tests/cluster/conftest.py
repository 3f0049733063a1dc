"""Real Spark deployments for the cluster tests, all on loopback and all from the installed pyspark.

* :class:`StandaloneCluster`: a master and two workers (``bin/spark-class ...deploy.master.Master`` /
  ``...deploy.worker.Worker``, one core and 1 GiB each), ready when the master's JSON page lists both ALIVE.
* :class:`ConnectServer`: ``sbin/start-connect-server.sh --master local[2]`` (it daemonizes; its pid file and log
  live in tmp dirs), ready when its gRPC port accepts connections.
* :func:`run_client`: the Spark driver / Connect client runs in a **subprocess** (:func:`client_main`), never in
  the pytest process: a process can hold one classic SparkContext (the session-scoped ``spark`` fixture of
  tests/conftest.py owns it), and creating a Connect session sets ``SPARK_CONNECT_MODE_ENABLED`` in
  ``os.environ`` for good, which would switch every later classic test of the run to Connect code paths.

Every process is started in its own session (process group) with a timeout; teardown sends SIGTERM then SIGKILL to
the group and SIGKILLs, by pid, any descendant that left the group (pyspark's python daemon calls ``setpgid``).
Ports are free ports picked at start. A missing Java or a port that cannot be set up fails the test (never skips).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
LOOPBACK = "127.0.0.1"
PYTHON = sys.executable  # the venv's interpreter: executors and Connect's python workers run it too
START_TIMEOUT = 240.0
CLIENT_TIMEOUT = 600.0
STOP_TIMEOUT = 20.0


def spark_home() -> Path:
    """The installed pyspark package dir: it carries bin/, sbin/ and jars/ (a full SPARK_HOME)."""
    import pyspark

    home = Path(pyspark.__file__).resolve().parent
    for rel in ("bin/spark-class", "sbin/start-connect-server.sh", "sbin/stop-connect-server.sh"):
        if not (home / rel).is_file():
            pytest.fail(f"the installed pyspark at {home} has no {rel}: cannot start a Spark deployment from it")
    if not list((home / "jars").glob("spark-connect_*.jar")):
        pytest.fail(f"the installed pyspark at {home} has no jars/spark-connect_*.jar (the Spark Connect server)")
    return home


def require_java() -> str:
    """The java executable (Java 17+), or fail the test with the reason."""
    from lake_orchestration.engines.java import check_java
    from lake_orchestration.errors import JavaNotFoundError

    try:
        return check_java()
    except JavaNotFoundError as err:
        reason = str(err)
    pytest.fail(f"the cluster tests need Java 17+ to start Spark daemons: {reason}", pytrace=False)


def require_connect_client() -> None:
    """The Spark Connect client's extras (``pyspark[connect]``) are installed, or fail the test naming them."""
    from pyspark.sql.connect import utils

    reason = None
    try:
        for check in ("pandas", "pyarrow", "grpc", "grpcio_status", "googleapis_common_protos", "zstandard"):
            getattr(utils, f"require_minimum_{check}_version")()
    except Exception as err:  # PySparkImportError, or an AttributeError on a pyspark that renamed a check
        reason = str(err)
    if reason is not None:
        pytest.fail("the Spark Connect client needs the pyspark[connect] extras (grpcio, grpcio-status, "
                    f"googleapis-common-protos, zstandard, pyarrow, pandas): {reason}", pytrace=False)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (the daemon binds it a moment later; start-up fails loudly if lost)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((LOOPBACK, 0))
            return int(s.getsockname()[1])
    except OSError as err:
        pytest.fail(f"cannot bind a free port on {LOOPBACK}: {err}", pytrace=False)


def port_open(port: int) -> bool:
    try:
        with socket.create_connection((LOOPBACK, port), timeout=1.0):
            return True
    except OSError:
        return False


def tail(path: Path, n: int = 40) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"<{path}: unreadable>"
    return f"--- {path} (last {min(n, len(lines))} lines) ---\n" + "\n".join(lines[-n:])


def base_env(root: Path) -> dict[str, str]:
    """The environment of every Spark process: loopback only, hermetic conf, the repo importable on workers."""
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED",
                                                              "PYSPARK_SUBMIT_ARGS", "SPARK_MASTER")}
    conf_dir = root / "conf"  # empty: no spark-defaults.conf / spark-env.sh of the machine leaks in
    conf_dir.mkdir(parents=True, exist_ok=True)
    pythonpath = [str(REPO_ROOT), *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]]
    env.update(
        SPARK_HOME=str(spark_home()),
        SPARK_CONF_DIR=str(conf_dir),
        SPARK_LOG_DIR=str(root / "logs"),
        SPARK_PID_DIR=str(root / "pids"),
        SPARK_IDENT_STRING=f"lo-test-{os.getpid()}",
        SPARK_LOCAL_IP=LOOPBACK,
        SPARK_LOCAL_HOSTNAME=LOOPBACK,
        SPARK_DAEMON_MEMORY="512m",
        PYSPARK_PYTHON=PYTHON,
        PYSPARK_DRIVER_PYTHON=PYTHON,
        PYTHONPATH=os.pathsep.join(dict.fromkeys(pythonpath)),
        TZ="UTC",
    )
    return env


# --------------------------------------------------------------------------------------------- process handling
def _proc_table() -> dict[int, tuple[int, str, str]]:
    """pid -> (ppid, start time, state) from /proc (empty where there is no /proc)."""
    out: dict[int, tuple[int, str, str]] = {}
    if not os.path.isdir("/proc"):
        return out
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        rest = stat[stat.rfind(")") + 2:].split()
        out[int(d)] = (int(rest[1]), rest[19], rest[0])
    return out


def descendants(roots: list[int]) -> list[tuple[int, str]]:
    """(pid, start time) of the live processes below ``roots`` (and the roots), for a kill by pid later."""
    table = _proc_table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    seen: list[tuple[int, str]] = []
    todo = [r for r in roots if r in table]
    while todo:
        pid = todo.pop()
        seen.append((pid, table[pid][1]))
        todo.extend(children.get(pid, ()))
    return seen


def _alive(pid: int, start: str | None = None) -> bool:
    table = _proc_table()
    if table:
        entry = table.get(pid)
        return entry is not None and entry[2] != "Z" and (start is None or entry[1] == start)
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def stop_processes(pgids: list[int], tree: list[tuple[int, str]], popens: list[subprocess.Popen],
                   timeout: float = STOP_TIMEOUT) -> None:
    """SIGTERM the process groups, wait, SIGKILL the groups, then SIGKILL by pid whatever of ``tree`` is left."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pg in pgids:
            try:
                os.killpg(pg, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + (timeout if sig == signal.SIGTERM else 5.0)
        while time.monotonic() < deadline:
            for p in popens:
                p.poll()
            if not any(_alive(pid, start) for pid, start in tree):
                break
            time.sleep(0.2)
    for pid, start in tree:
        if _alive(pid, start):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    for p in popens:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


def spawn(cmd: list[str], env: dict[str, str], log: Path, cwd: Path | None = None) -> subprocess.Popen:
    """Start ``cmd`` in a new session (its own process group), stdout+stderr to ``log``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        return subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=cwd or log.parent, start_new_session=True)


def wait_until(pred: Callable[[], bool], *, timeout: float, what: str, logs: list[Path],
               alive: Callable[[], str | None] = lambda: None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        dead = alive()
        if dead:
            pytest.fail(f"{what}: {dead}\n" + "\n".join(tail(p) for p in logs), pytrace=False)
        time.sleep(0.3)
    pytest.fail(f"{what}: not ready after {timeout:.0f}s\n" + "\n".join(tail(p) for p in logs), pytrace=False)


# --------------------------------------------------------------------------------------------- standalone cluster
@dataclass
class StandaloneCluster:
    """A standalone master + ``workers`` workers on 127.0.0.1 (``with`` starts and stops everything)."""

    root: Path
    workers: int = 2
    master_port: int = 0
    webui_port: int = 0
    worker_dirs: list[Path] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)
    _popens: list[subprocess.Popen] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"spark://{LOOPBACK}:{self.master_port}"

    def master_state(self) -> dict:
        with urllib.request.urlopen(f"http://{LOOPBACK}:{self.webui_port}/json/", timeout=5) as r:
            return json.loads(r.read())

    def _alive_workers(self) -> int:
        try:
            return int(self.master_state().get("aliveworkers", 0))
        except (OSError, ValueError):
            return 0

    def _dead(self) -> str | None:
        for p, log in zip(self._popens, self.logs, strict=True):
            if p.poll() is not None:
                return f"{p.args[1].rsplit('.', 1)[-1]} exited with {p.returncode} ({log})"
        return None

    def __enter__(self) -> StandaloneCluster:
        require_java()
        env = base_env(self.root)
        spark_class = str(spark_home() / "bin" / "spark-class")
        self.master_port, self.webui_port = free_port(), free_port()
        log_dir = self.root / "logs"
        try:
            self.logs.append(log_dir / "master.log")
            self._popens.append(spawn(
                [spark_class, "org.apache.spark.deploy.master.Master", "--host", LOOPBACK,
                 "--port", str(self.master_port), "--webui-port", str(self.webui_port)],
                env, self.logs[-1]))
            for n in range(self.workers):
                work = self.root / f"worker-{n}"
                work.mkdir(parents=True, exist_ok=True)
                self.worker_dirs.append(work)
                self.logs.append(log_dir / f"worker-{n}.log")
                self._popens.append(spawn(
                    [spark_class, "org.apache.spark.deploy.worker.Worker", self.url, "--host", LOOPBACK,
                     "--cores", "1", "--memory", "1g", "--webui-port", str(free_port()), "--work-dir", str(work)],
                    {**env, "SPARK_WORKER_DIR": str(work)}, self.logs[-1]))
            wait_until(lambda: self._alive_workers() == self.workers, timeout=START_TIMEOUT,
                       what=f"standalone master {self.url} with {self.workers} ALIVE workers", logs=self.logs,
                       alive=self._dead)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        master, workers = self._popens[:1], self._popens[1:]
        master_tree = descendants([p.pid for p in master])
        worker_tree = descendants([p.pid for p in workers])
        # workers first (each takes its executors down), then the master
        stop_processes([p.pid for p in workers], worker_tree, workers)
        stop_processes([p.pid for p in master], master_tree, master)

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def executor_dirs(self, app_id: str) -> dict[int, list[str]]:
        """worker n -> the executor ids it launched for ``app_id`` (``<work-dir>/<app-id>/<executor-id>/``)."""
        return {n: sorted(p.name for p in (d / app_id).iterdir() if p.is_dir()) if (d / app_id).is_dir() else []
                for n, d in enumerate(self.worker_dirs)}


# --------------------------------------------------------------------------------------------- Spark Connect
CONNECT_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


@dataclass
class ConnectServer:
    """``sbin/start-connect-server.sh --master local[2]`` on a free loopback port (``with`` starts and stops it)."""

    root: Path
    port: int = 0
    pid: int | None = None
    log: Path | None = None
    _env: dict[str, str] = field(default_factory=dict)
    _launcher: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"sc://{LOOPBACK}:{self.port}"

    @property
    def pid_file(self) -> Path:
        return Path(self._env["SPARK_PID_DIR"]) / f"spark-{self._env['SPARK_IDENT_STRING']}-{CONNECT_CLASS}-1.pid"

    def _logs(self) -> list[Path]:
        return [*sorted((self.root / "logs").glob("*.out")), self.root / "logs" / "launcher.log"]

    def __enter__(self) -> ConnectServer:
        require_java()
        require_connect_client()
        self._env = base_env(self.root)
        self.port = free_port()
        sbin = spark_home() / "sbin"
        cmd = [str(sbin / "start-connect-server.sh"), "--master", "local[2]", "--driver-memory", "1g",
               "--conf", f"spark.connect.grpc.binding.port={self.port}",
               "--conf", f"spark.connect.grpc.binding.address={LOOPBACK}",
               "--conf", "spark.connect.grpc.port.maxRetries=0",
               "--conf", f"spark.driver.host={LOOPBACK}", "--conf", f"spark.driver.bindAddress={LOOPBACK}",
               "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=4",
               "--conf", f"spark.pyspark.python={PYTHON}"]
        try:
            self._launcher = spawn(cmd, self._env, self.root / "logs" / "launcher.log")
            try:
                rc = self._launcher.wait(timeout=60)  # the script daemonizes the server and returns (~3 s)
            except subprocess.TimeoutExpired:
                pytest.fail("start-connect-server.sh did not return within 60s\n"
                            + "\n".join(tail(p) for p in self._logs()), pytrace=False)
            if rc != 0 or not self.pid_file.is_file():
                pytest.fail(f"start-connect-server.sh exited {rc}, pid file {self.pid_file} "
                            f"{'present' if self.pid_file.is_file() else 'missing'}\n"
                            + "\n".join(tail(p) for p in self._logs()), pytrace=False)
            self.pid = int(self.pid_file.read_text().strip())
            self.log = next(iter(sorted((self.root / "logs").glob("*.out"))), None)
            wait_until(lambda: port_open(self.port), timeout=START_TIMEOUT,
                       what=f"Spark Connect server {self.url} (pid {self.pid})", logs=self._logs(),
                       alive=lambda: None if _alive(self.pid) else f"server pid {self.pid} exited")
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        tree = descendants([self.pid]) if self.pid else []
        if self._env:
            try:  # the documented way first: spark-daemon.sh kills the pid of the pid file
                subprocess.run([str(spark_home() / "sbin" / "stop-connect-server.sh")], env=self._env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30,
                               start_new_session=True, check=False)
            except subprocess.TimeoutExpired:
                pass
        # the daemon stays in the launcher's process group (nohup ... &): kill the group, then stragglers by pid
        pgids = [self._launcher.pid] if self._launcher is not None else []
        stop_processes(pgids, tree, [self._launcher] if self._launcher is not None else [])

    def __exit__(self, *exc: object) -> None:
        self.stop()


# --------------------------------------------------------------------------------------------- the client process
def run_client(mode: str, url: str, table: Path, out_dir: Path, root: Path,
               timeout: float = CLIENT_TIMEOUT) -> dict:
    """Run :func:`client_main` in a subprocess (its own process group); returns its JSON report."""
    out_dir.mkdir(parents=True, exist_ok=True)
    env = base_env(root)
    for k in ("SPARK_HOME", "SPARK_LOG_DIR", "SPARK_PID_DIR", "SPARK_IDENT_STRING"):
        env.pop(k, None)  # the driver finds its own SPARK_HOME (the pyspark package)
    log = out_dir / "client.log"
    # ``-m``, not ``-c``: pyspark.sql.connect takes a ``__main__`` without __spec__/__file__ for its doctests and
    # exits 0 ("Skipping doctests") when a Connect extra is missing
    p = spawn([PYTHON, "-m", "tests.cluster.conftest", mode, url, str(table), str(out_dir)], env, log, cwd=REPO_ROOT)
    try:
        rc = p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        rc = None
    finally:
        stop_processes([p.pid], descendants([p.pid]), [p], timeout=5.0)
    report = out_dir / "report.json"
    if rc != 0 or not report.is_file():
        state = "timed out" if rc is None else f"exited {rc}"
        pytest.fail(f"{mode} client ({url}) {state}\n{tail(log, 60)}", pytrace=False)
    return json.loads(report.read_text())


CLIENT_CONF_STANDALONE = {
    "spark.driver.host": LOOPBACK,
    "spark.driver.bindAddress": LOOPBACK,
    "spark.driver.memory": "1g",
    "spark.executor.memory": "1g",
    "spark.executor.cores": "1",
    "spark.cores.max": "2",
    # wait for both executors before the first job, and spread tasks without waiting for locality
    "spark.scheduler.minRegisteredResourcesRatio": "1.0",
    "spark.scheduler.maxRegisteredResourcesWaitingTime": "60s",
    "spark.locality.wait": "0s",
    # executors run the venv's python with the checkout importable (it need not be installed)
    "spark.pyspark.python": PYTHON,
    "spark.executorEnv.PYTHONPATH": str(REPO_ROOT),
}


def _executor_summaries(spark: object) -> list[dict]:
    """id, hostPort and task count of every executor, from the driver's status store (py4j)."""
    sc = spark.sparkContext  # type: ignore[attr-defined]
    seq = sc._jsc.sc().statusStore().executorList(False)
    out = []
    for i in range(seq.size()):
        e = seq.apply(i)
        out.append({"id": e.id(), "hostPort": e.hostPort(), "totalTasks": int(e.totalTasks())})
    return out


def probe_task(payload: str) -> list[str]:
    """A ``SparkEngine.map_tasks`` task (imported by name on the executors): where and as which Spark task it ran."""
    from pyspark import TaskContext

    import lake_orchestration

    tc = TaskContext.get()
    return [json.dumps({
        "payload": payload,
        "partition": tc.partitionId() if tc else None,
        "stage": tc.stageId() if tc else None,
        "attempt": tc.taskAttemptId() if tc else None,
        "pid": os.getpid(),
        "cwd": os.getcwd(),
        "python": sys.executable,
        "package": lake_orchestration.__file__,
    })]


def client_main(argv: list[str]) -> None:
    """Subprocess entry: compaction of the scheduled plan of ``table`` on Spark, then a snapshot read on Spark.

    argv: ``mode`` (``standalone`` | ``connect``), the master / ``sc://`` url, the table path, the output dir.
    Writes ``snapshot.arrow`` (SparkEngine.read_snapshot after the compaction) and ``report.json``.
    """
    mode, url, table_path, out = argv
    import pyarrow as pa

    from lake_orchestration.engines.spark import SparkEngine
    from lake_orchestration.hudi.services.compaction import run_compaction
    from lake_orchestration.hudi.table import HudiTable
    from lake_orchestration.hudi.table.engine_read import read_snapshot_on

    if mode == "standalone":
        from lake_orchestration.engines.spark_session import local_spark_session

        spark = local_spark_session(master=url, app_name="lo-cluster-standalone", conf=CLIENT_CONF_STANDALONE)
    elif mode == "connect":
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.remote(url).getOrCreate()
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    report: dict = {"session_class": f"{type(spark).__module__}.{type(spark).__name__}",
                    "master": spark.conf.get("spark.master")}
    try:
        # One job first: the compaction's single stage then has an id > 0, so a write token from the TaskContext
        # ({partition}-{stage}-{attempt}) is told apart from the Spark-less fallback ({n}-0-{n}).
        spark.range(1).collect()
        t0 = time.monotonic()
        results = run_compaction(HudiTable(table_path), engine=SparkEngine(spark))
        report["compaction_seconds"] = time.monotonic() - t0
        report["results"] = [{"instant": r.instant, "operations": r.operations,
                              "stats": [s.to_json_obj() for s in r.stats]} for r in results]
        # the runner itself, with a probe task: one Spark task per payload, and where the tasks ran
        n = max(1, len(results[0].stats) if results else 1)
        probe = SparkEngine(spark).map_tasks(probe_task, [str(i) for i in range(n)], description="probe")
        report["probe"] = [json.loads(r) for r in probe]
        report["client_pid"] = os.getpid()
        snap = read_snapshot_on(SparkEngine(spark), HudiTable(table_path))
        with pa.OSFile(str(Path(out) / "snapshot.arrow"), "wb") as f, pa.ipc.new_file(f, snap.schema) as w:
            w.write_table(snap)
        if mode == "standalone":
            sc = spark.sparkContext
            report["app_id"] = sc.applicationId
            jobs = sc.statusTracker().getJobIdsForGroup()
            report["jobs"] = len(jobs)
            deadline = time.monotonic() + 20  # the status store is fed asynchronously by the listener bus
            while True:
                report["executors"] = _executor_summaries(spark)
                done = sum(e["totalTasks"] for e in report["executors"] if e["id"] != "driver")
                if done >= report["results"][0]["operations"] or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
        else:
            from pyspark import SparkContext

            report["client_has_jvm"] = SparkContext._active_spark_context is not None
    finally:
        spark.stop()
    (Path(out) / "report.json").write_text(json.dumps(report))


def copy_table(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


if __name__ == "__main__":
    client_main(sys.argv[1:])
