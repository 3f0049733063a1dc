"""A real browser on the Dagster UI: the demo's compaction asset lists its pending plans as partitions; a run shows
execute_plan and commit as separate steps.

What a user does, end to end: the demo MOR table ``demo_trips`` with a compaction plan scheduled on it, the code
location (``workspace.yaml`` -> ``definitions``) serving it, its ``demo_trips__pending_compaction_sensor`` registering
that instant as a partition of ``hudi/demo_trips/compaction`` (applied to the instance as the sensor daemon applies
it), then ``dagster-webserver`` serving the UI and headless Chromium (Debian's package, driven over the DevTools
protocol by ``tests/browser/cdp.py``) opening the asset's partitions page.

A second test launches a run of that partition through the webserver and opens the run's page: ``execute_plan`` and
``commit`` are two steps of the compaction run. The demo runs on the in-process engine (the single-machine default),
so the run worker executes both steps in its own process (``in_process_executor``), in an instance configured as the
demo's (``DEMO_INSTANCE_YAML``: each table's pool takes one step at a time). Dagster with Spark is
``tests/dagster/test_demo.py::test_demo_run_spark_engine_compacts_every_plan_through_dagster``.

The expected instants come from the table's timeline (``.hoodie/<t>.compaction.requested``), not from Dagster.
Set ``LAKE_ORCH_UPDATE_SCREENSHOT=1`` to refresh the screenshot kept in ``docs/img/``; otherwise it goes to tmp.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest

from lake_orchestration.demo.definitions import DEMO_INSTANCE_YAML
from tests.browser.cdp import Browser, find_chromium
from tests.conftest import REPO_ROOT, REQUIRE_SHARED

pytestmark = [pytest.mark.dagster, pytest.mark.browser]

TABLE = "demo_trips"
TABLE_KEY = f"hudi/{TABLE}"
PARTITIONS_DEF = f"{TABLE}__compaction_instants"
SCREENSHOT = REPO_ROOT / "docs" / "img" / "dagster-compaction-partitions.png"
# Read at import: the autouse _isolate_env fixture removes every LAKE_ORCH_* variable before a test runs.
UPDATE_SCREENSHOT = os.environ.get("LAKE_ORCH_UPDATE_SCREENSHOT") == "1"
# Keys that would point the code location at a tables config instead of the demo table.
TABLES_CONFIG_VARS = ("LAKE_ORCHESTRATION_CONFIG", "LAKE_ORCH_TABLES_YAML")


@pytest.fixture
def chromium() -> str:
    """Debian's chromium executable; skips (fails in CI) when it is absent."""
    exe = find_chromium()
    if exe is None:
        explicit = os.environ.get("CHROMIUM_BIN")
        where = f"CHROMIUM_BIN={explicit!r} is not an executable" if explicit else "no 'chromium' on PATH"
        reason = (
            f"headless Chromium not found ({where}): scripts/test.sh installs Debian's package via "
            "scripts/ensure-chromium.sh when it can (root or sudo); or run `apt-get install chromium`"
        )
        if REQUIRE_SHARED:  # CI: a browser test that cannot run is a failure, not a skip
            pytest.fail(reason)
        pytest.skip(reason)
    return exe


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class DemoLocation:
    demo_dir: Path
    dagster_home: Path
    cwd: Path  # empty: the code location finds no ./lake_orchestration.yaml there
    pending: list[str]


@pytest.fixture
def demo_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[DemoLocation]:
    """The demo code location with one pending compaction plan registered as a partition in a temp instance."""
    from lake_orchestration.demo.table import build_demo_table
    from lake_orchestration.hudi.services.compaction import CompactionConfig, schedule_compaction
    from lake_orchestration.hudi.table import HudiTable

    for var in TABLES_CONFIG_VARS:
        monkeypatch.delenv(var, raising=False)
    demo_dir, home, cwd = tmp_path / "demo-tables", tmp_path / "dagster-home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.syspath_prepend(str(REPO_ROOT))  # the code location's module, as workspace.yaml loads it
    # runs launched through the webserver start at once (no daemon dequeues them in these tests)
    (home / "dagster.yaml").write_text(
        "telemetry:\n  enabled: false\nrun_coordinator:\n  module: dagster._core.run_coordinator\n"
        "  class: DefaultRunCoordinator\n" + DEMO_INSTANCE_YAML
    )
    monkeypatch.setenv("LAKE_ORCH_DEMO_DIR", str(demo_dir))
    monkeypatch.setenv("DAGSTER_HOME", str(home))

    # The demo table (bulk_insert, then upserts and deletes: log files in every file group), present before the
    # code location loads so the location serves it as is; one compaction plan over it, whatever trigger the demo
    # location configures (`lake-orch compaction schedule --option hoodie.compact.inline.max.delta.commits=1`).
    base = demo_dir / TABLE
    build_demo_table(base, rows=1000, echo=lambda _msg: None)
    config = CompactionConfig.from_options({"hoodie.compact.inline.max.delta.commits": "1"})
    scheduled = schedule_compaction(HudiTable(str(base)), config=config)
    assert scheduled.scheduled, scheduled.reason

    sys.modules.pop("definitions", None)
    sys.modules.pop("definitions.definitions", None)
    try:
        defs = importlib.import_module("definitions").defs
        with dg.DagsterInstance.get() as instance:
            sensor = defs.resolve_sensor_def(f"{TABLE}__pending_compaction_sensor")
            result = sensor(dg.build_sensor_context(instance=instance, definitions=defs))
            for req in result.dynamic_partitions_requests:  # what the sensor daemon does with the result
                assert isinstance(req, dg.AddDynamicPartitionsRequest)
                instance.add_dynamic_partitions(req.partitions_def_name, list(req.partition_keys))
            registered = instance.get_dynamic_partitions(PARTITIONS_DEF)
    finally:
        sys.modules.pop("definitions", None)
        sys.modules.pop("definitions.definitions", None)

    on_disk = sorted(p.name.split(".")[0] for p in (base / ".hoodie").glob("*.compaction.requested"))
    assert on_disk == [str(scheduled.instant)], f"pending plans under {base / '.hoodie'}: {on_disk}"
    assert sorted(str(i.time) for i in HudiTable(str(base)).timeline.pending_compactions()) == on_disk
    assert sorted(registered) == on_disk
    yield DemoLocation(demo_dir=demo_dir, dagster_home=home, cwd=cwd, pending=on_disk)


@pytest.fixture
def webserver(demo_location: DemoLocation) -> Iterator[str]:
    """``dagster-webserver -w workspace.yaml`` on a free loopback port; yields its URL once the location loaded."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in TABLES_CONFIG_VARS}
    env.update(
        LAKE_ORCH_DEMO_DIR=str(demo_location.demo_dir),
        DAGSTER_HOME=str(demo_location.dagster_home),
        PYTHONPATH=str(REPO_ROOT),
        DAGSTER_DISABLE_TELEMETRY="1",
    )
    exe = Path(sys.executable).parent / "dagster-webserver"
    log = demo_location.dagster_home / "webserver.log"
    # The repo's workspace.yaml, run from an empty directory: a ./lake_orchestration.yaml left in the checkout
    # (the code location's default config file) must not replace the demo table.
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(exe), "-w", str(REPO_ROOT / "workspace.yaml"), "-h", "127.0.0.1", "-p", str(port)],
            cwd=demo_location.cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_loaded(url, proc, log, timeout=60)
        yield url
    finally:
        _kill_group(proc)


def _graphql(url: str, query: str, variables: dict[str, object] | None = None) -> dict[str, object]:
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    req = urllib.request.Request(f"{url}/graphql", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        answer = json.loads(resp.read().decode())
    if answer.get("errors"):
        pytest.fail(f"GraphQL errors: {answer['errors']}")
    return answer["data"]


def _wait_loaded(url: str, proc: subprocess.Popen[bytes], log: Path, *, timeout: float) -> None:
    """Until GraphQL reports the code location ``definitions`` loaded; fail at once on a load error."""
    query = (
        "{ workspaceOrError { ... on Workspace { locationEntries { name loadStatus"
        " locationOrLoadError { __typename ... on PythonError { message } } } } } }"
    )
    body = json.dumps({"query": query}).encode()
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"dagster-webserver exited with {proc.returncode}; its log:\n{log.read_text()[-3000:]}")
        try:
            req = urllib.request.Request(f"{url}/graphql", data=body, headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=5) as resp:
                last = resp.read().decode()
            entries = json.loads(last)["data"]["workspaceOrError"].get("locationEntries") or []
        except (OSError, ValueError, KeyError, TypeError) as err:
            last, entries = f"{last[:300]} ({err})", []
        for entry in entries:
            if entry["name"] == "definitions" and entry["loadStatus"] == "LOADED":
                loaded = entry["locationOrLoadError"] or {}
                if loaded.get("__typename") == "RepositoryLocation":
                    return
                pytest.fail(f"the code location failed to load: {loaded.get('message', loaded)}; webserver log:\n"
                            f"{log.read_text()[-3000:]}")  # fmt: skip
        time.sleep(0.5)
    pytest.fail(f"{url}: code location not loaded within {timeout}s (last answer: {last[:500]}); log:\n"
                f"{log.read_text()[-3000:]}")  # fmt: skip


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)
        except ProcessLookupError:
            pass


def _dismiss_community_dialog(browser: Browser) -> None:
    """The UI's first-visit 'Join the Dagster community' dialog: press its Skip button if it shows up."""
    click = (
        "(() => { const b = [...document.querySelectorAll('button')].find(b => b.innerText.trim() === 'Skip');"
        " if (b) { b.click(); return true; } return false; })()"
    )
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if browser.evaluate(click):
            browser.wait_for(lambda t: "Join the Dagster community" not in t, timeout=5, what="the dialog closed")
            return
        time.sleep(0.25)


def test_compaction_partitions_page_shows_table_asset_and_pending_plans(
    chromium: str, demo_location: DemoLocation, webserver: str, tmp_path: Path
) -> None:
    asset_url = f"{webserver}/assets/{TABLE_KEY}/compaction"
    with Browser(chromium) as browser:
        # The partitions page: every pending plan of the timeline is a partition, none materialized yet.
        browser.goto(f"{asset_url}?view=partitions")
        text = browser.wait_for(
            lambda t: all(p in t for p in demo_location.pending), timeout=45, what=f"partitions {demo_location.pending}"
        )
        assert "No assets were found" not in text
        assert f"Missing ({len(demo_location.pending)})" in text
        assert "Materialized (0)" in text
        _dismiss_community_dialog(browser)
        lines = [ln.strip() for ln in browser.text().splitlines()]
        assert TABLE in lines  # the breadcrumb: Assets > hudi > demo_trips > compaction
        shot = SCREENSHOT if UPDATE_SCREENSHOT else tmp_path / SCREENSHOT.name
        time.sleep(0.5)  # let the dialog's fade-out finish before the picture
        browser.screenshot(shot)
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

        # The breadcrumb comes from the URL; the table asset itself is shown as the upstream of the compaction
        # asset, which only the loaded definitions know.
        browser.goto(f"{asset_url}?view=overview")
        description = f"Compaction plans of {TABLE}: one partition per compaction instant"
        table_label = TABLE_KEY.replace("/", " / ")

        def upstream_of(t: str) -> str:
            return t.split("Upstream assets", 1)[1].split("Downstream assets", 1)[0] if "Upstream assets" in t else ""

        # the lineage loads after the section headers render (a dash until then): wait for the upstream asset itself
        text = browser.wait_for(
            lambda t: "Downstream assets" in t and description in t and table_label in upstream_of(t),
            timeout=30,
            what="the asset overview with its description and the table asset upstream",
        )
        assert table_label in upstream_of(text)


LAUNCH_RUN = """
mutation($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
    ... on InvalidSubsetError { message }
    ... on RunConfigValidationInvalid { errors { message } }
  }
}
"""
RUN_STATUS = """
query($runId: ID!) {
  runOrError(runId: $runId) {
    __typename
    ... on Run { status stepStats { stepKey status attempts { startTime } } }
  }
}
"""
EXECUTE_PLAN_OP = f"{TABLE}__compaction_execute_plan_op"
COMMIT_OP = f"{TABLE}__compaction_commit_op"
RUN_SCREENSHOT = REPO_ROOT / "docs" / "img" / "dagster-compaction-run.png"


def test_compaction_run_page_shows_execute_plan_and_commit_steps(
    chromium: str, demo_location: DemoLocation, webserver: str, tmp_path: Path
) -> None:
    """A run of the compaction partition launched through the webserver (a run worker executing both steps in its
    process, the in-process engine, the table's pool limited to one step) shows execute_plan and commit as two steps
    of the run; the plan is committed once and the independent reader returns the same rows."""
    from lake_orchestration.hudi.table import HudiTable
    from tests.oracle import REWRITTEN_BY_SERVICES, assert_same_rows, hudi_rs_snapshot

    (instant,) = demo_location.pending
    base = demo_location.demo_dir / TABLE
    before = hudi_rs_snapshot(base)
    params = {
        "selector": {
            "repositoryLocationName": "definitions",
            "repositoryName": "__repository__",
            "jobName": f"{TABLE}__compaction",
            "assetSelection": [{"path": [*TABLE_KEY.split("/"), "compaction"]}],
        },
        "mode": "default",
        "runConfigData": {},
        "executionMetadata": {"tags": [{"key": "dagster/partition", "value": instant}]},
    }
    launched = _graphql(webserver, LAUNCH_RUN, {"params": params})["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    run_id = launched["run"]["runId"]
    deadline = time.monotonic() + 300
    run: dict = {}
    while time.monotonic() < deadline:
        run = _graphql(webserver, RUN_STATUS, {"runId": run_id})["runOrError"]
        if run.get("status") in ("SUCCESS", "FAILURE", "CANCELED"):
            break
        time.sleep(1)
    assert run.get("status") == "SUCCESS", (run, (demo_location.dagster_home / "webserver.log").read_text()[-3000:])
    steps = {s["stepKey"].rsplit(".", 1)[-1]: s for s in run["stepStats"]}
    assert set(steps) == {EXECUTE_PLAN_OP, COMMIT_OP}
    assert all(s["status"] == "SUCCESS" for s in steps.values())
    assert len(steps[EXECUTE_PLAN_OP]["attempts"]) == 1  # the plan executed once

    # the table: the plan is committed, the snapshot unchanged, as the independent reader sees it
    done = HudiTable(str(base)).timeline.get(instant)
    assert done is not None and done.is_completed and done.action.value == "commit"
    assert_same_rows(hudi_rs_snapshot(base), before, ignore=REWRITTEN_BY_SERVICES)

    with Browser(chromium) as browser:
        browser.goto(f"{webserver}/runs/{run_id}")
        text = browser.wait_for(
            lambda t: EXECUTE_PLAN_OP in t and COMMIT_OP in t and "Success" in t,
            timeout=60,
            what=f"the run page with the steps {EXECUTE_PLAN_OP} and {COMMIT_OP}",
        )
        assert "Failure" not in text
        _dismiss_community_dialog(browser)
        # for the picture: the Gantt chart's first mode (flat: one box per step, named), the toolbar's first button
        browser.evaluate(
            "(() => { const l = [...document.querySelectorAll('label')]"
            ".find(l => l.innerText.includes('Hide not started steps')); let el = l;"
            " for (let i = 0; i < 4 && el; i++) { el = el.parentElement; const b = el && el.querySelector('button');"
            " if (b) { b.click(); return true; } } return false; })()"
        )
        shot = RUN_SCREENSHOT if UPDATE_SCREENSHOT else tmp_path / RUN_SCREENSHOT.name
        time.sleep(0.5)
        browser.screenshot(shot)
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
