"""Bad input gets a clear error (key, value, what was expected; the file to repair and the command that repairs it),
never a traceback nor silence, and nothing is written when it is refused.

Covered: a bad Spark master (CLI and Dagster resource), non-integer or negative numeric options and non-boolean
flags of every service, ``generate --rows -5``, ``compaction run --max-plans 0``, a broken stdout pipe
(``| head``), a ``.compaction.inflight`` without its ``.requested`` (repaired by ``compaction rollback``), a pending
rollback whose ``.rollback.requested`` does not decode (removed by ``rollback --instant-time <R>``), and a corrupt
latest ``.deltacommit`` (refused as hudi-rs refuses it).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result

from lake_orchestration.cli.app import cli
from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.table import HudiTable, read_snapshot_table
from lake_orchestration.hudi.write import write_table
from tests.conftest import REPO_ROOT
from tests.oracle import assert_same_rows, hudi_rs_snapshot
from tests.trips import trips_options

ROWS = generate_trips(120, partitions=3, seed=21)


def _tree(base: Path) -> dict[str, bytes]:
    """Every file under ``base`` (relative path -> bytes)."""
    return {str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}


def _mor(tmp_path: Path, name: str = "t", upserts: int = 2) -> Path:
    """A MERGE_ON_READ table written by this project: a bulk insert and ``upserts`` upserts (log files)."""
    path = tmp_path / name
    opts = trips_options(table_name=name)
    write_table(str(path), ROWS, operation="bulk_insert", options=opts)
    for i in range(upserts):
        write_table(str(path), generate_updates(ROWS, fraction=0.3, seed=30 + i, ts_offset=i + 1), operation="upsert")
    return path


def _input(tmp_path: Path) -> Path:
    f = tmp_path / "in.parquet"
    pq.write_table(generate_updates(ROWS, fraction=0.2, seed=99, ts_offset=50), f)
    return f


def _run(args: list[str]) -> Result:
    return CliRunner().invoke(cli, args)


def _assert_clear_error(r: Result, *needles: str, exit_codes: tuple[int, ...] = (1, 2)) -> None:
    """A non-zero exit, no traceback, every needle in the output."""
    assert r.exit_code in exit_codes, f"exit {r.exit_code}:\n{r.output}"
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert "Traceback" not in r.output, r.output
    for n in needles:
        assert n in r.output, f"{n!r} not in:\n{r.output}"


@pytest.fixture(scope="module")
def mor_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _mor(tmp_path_factory.mktemp("template"))


@pytest.fixture
def mor(mor_template: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "t"
    shutil.copytree(mor_template, dst)
    return dst


# -- Spark master ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("master", ["bogus://x", "local[abc]", "local[0]"])
@pytest.mark.parametrize("command", ["write", "clean", "compaction-run"])
def test_bad_spark_master_cli_usage_error_names_value_nothing_written(
    mor: Path, tmp_path: Path, master: str, command: str
) -> None:
    args = {
        "write": ["write", str(mor), "--input", str(_input(tmp_path)), "--engine", "spark"],
        "clean": ["clean", str(mor), "--engine", "spark", "--option", "hoodie.cleaner.commits.retained=1"],
        "compaction-run": [
            "compaction",
            "run",
            str(mor),
            "--schedule",
            "--engine",
            "spark",
            "--option",
            "hoodie.compact.inline.max.delta.commits=1",
        ],
    }[command]
    before = _tree(mor)
    r = _run([*args, "--spark-master", master])
    _assert_clear_error(r, "--spark-master", repr(master), "expected local", exit_codes=(2,))
    assert _tree(mor) == before


@pytest.mark.parametrize("master", ["bogus://x", "local[abc]"])
def test_bad_spark_master_dagster_resource_and_definitions_refused_naming_key_and_value(master: str) -> None:
    from lake_orchestration.dagster.config import HudiConfigError, HudiTableConfig
    from lake_orchestration.dagster.definitions import build_hudi_definitions
    from lake_orchestration.dagster.resources import build_spark_resource

    with pytest.raises(HudiConfigError) as err:
        build_spark_resource({"spark.master": master})
    assert "spark.master" in str(err.value) and repr(master) in str(err.value) and "expected" in str(err.value)
    with pytest.raises(HudiConfigError, match=r"spark\.master"):
        build_hudi_definitions(
            tables=[HudiTableConfig(name="t", base_path="/tmp/t")], spark_config={"spark.master": master}
        )
    assert build_spark_resource({"spark.master": "local[2]"}).spark_config["spark.master"] == "local[2]"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("heartbeat_interval_ms", 0),
        ("heartbeat_interval_ms", -5),
        ("heartbeat_tolerable_misses", -1),
        ("inflight_timeout_seconds", 0),
    ],
)
def test_dagster_table_config_heartbeat_out_of_range_refused_naming_field_and_value(field: str, value: int) -> None:
    # the stale-write sensor rolls back writes whose heartbeat is older than interval x misses: 0 would roll back
    # live writers
    from lake_orchestration.dagster.config import HudiConfigError, validate_tables

    with pytest.raises(HudiConfigError) as err:
        validate_tables([{"name": "t", "base_path": "/tmp/t", field: value}], where="lake.yaml")
    msg = str(err.value)
    assert "lake.yaml" in msg and field in msg and f"got {value}" in msg and "greater than" in msg, msg


# -- numeric and boolean options --------------------------------------------------------------------------------------
BAD_OPTIONS = [
    ("write", "hoodie.client.heartbeat.interval_in_ms", "abc"),
    ("write", "hoodie.client.heartbeat.interval_in_ms", "-5"),
    ("write", "hoodie.client.heartbeat.interval_in_ms", "0"),
    ("write", "hoodie.parquet.small.file.limit", "-1"),
    ("write", "hoodie.parquet.max.file.size", "1.5"),
    ("write", "hoodie.combine.before.insert", "yes"),
    ("write", "hoodie.datasource.write.table.type", "MOR"),
    ("compaction-schedule", "hoodie.compact.inline.max.delta.commits", "-1"),
    ("compaction-schedule", "hoodie.compact.inline.max.delta.commits", "abc"),
    ("compaction-schedule", "hoodie.compaction.target.io", "-100"),
    ("compaction-run", "hoodie.compaction.logfile.num.threshold", "-2"),
    ("log-compaction-schedule", "hoodie.log.compaction.blocks.threshold", "-3"),
    ("clean", "hoodie.cleaner.commits.retained", "-1"),
    ("clean", "hoodie.cleaner.fileversions.retained", "abc"),
    ("archive", "hoodie.keep.min.commits", "abc"),
    ("archive", "hoodie.archive.merge.small.file.limit.bytes", "-1"),
    ("archive", "hoodie.cleaner.hours.retained", "-24"),
    ("rollback", "hoodie.client.heartbeat.interval_in_ms", "abc"),
    ("rollback", "hoodie.client.heartbeat.interval_in_ms", "-1"),
    ("rollback", "hoodie.client.heartbeat.tolerable.misses", "-1"),
]


@pytest.mark.parametrize(("command", "key", "value"), BAD_OPTIONS, ids=[f"{c}-{k}={v}" for c, k, v in BAD_OPTIONS])
def test_bad_option_value_error_names_key_value_and_expectation_nothing_written(
    mor: Path, tmp_path: Path, command: str, key: str, value: str
) -> None:
    p = str(mor)
    args = {
        "write": ["write", p, "--input", str(_input(tmp_path))],
        "compaction-schedule": ["compaction", "schedule", p, "--force"],
        "compaction-run": ["compaction", "run", p, "--schedule", "--engine", "local"],
        "log-compaction-schedule": ["log-compaction", "schedule", p],
        "clean": ["clean", p],
        "archive": ["archive", p],
        "rollback": ["rollback", p, "--stale", "--timeout", "1s"],
    }[command]
    before = _tree(mor)
    r = _run([*args, "--option", f"{key}={value}"])
    _assert_clear_error(r, "expected", exit_codes=(1,))
    assert re.search(f"{re.escape(key)}='?{re.escape(value)}'?", r.output), r.output
    assert _tree(mor) == before


# -- click ranges -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "option", "value"),
    [
        (["--rows", "-5"], "--rows", "-5"),
        (["--rows", "5", "--partitions", "9"], "--partitions", "9"),
        (["--rows", "5", "--partitions", "0"], "--partitions", "0"),
    ],
)
def test_generate_out_of_range_usage_error_no_file(tmp_path: Path, args: list[str], option: str, value: str) -> None:
    out = tmp_path / "g.parquet"
    r = _run(["generate", str(out), *args])
    _assert_clear_error(r, option, value, "range", exit_codes=(2,))
    assert not out.exists()


def test_generate_fraction_out_of_range_usage_error(tmp_path: Path) -> None:
    src = tmp_path / "src.parquet"
    pq.write_table(ROWS, src)
    out = tmp_path / "g.parquet"
    r = _run(["generate", str(out), "--from", str(src), "--update-fraction", "1.5"])
    _assert_clear_error(r, "--update-fraction", "1.5", "range", exit_codes=(2,))
    assert not out.exists()


def test_demo_rows_zero_usage_error_no_table(tmp_path: Path) -> None:
    path = tmp_path / "demo"
    r = _run(["demo", "--path", str(path), "--rows", "0", "--engine", "local"])
    _assert_clear_error(r, "--rows", "0", "range", exit_codes=(2,))
    assert not path.exists()


@pytest.mark.parametrize("timeout", ["-5m", "0", "nan"])
def test_rollback_stale_non_positive_timeout_refused_nothing_rolled_back(mor: Path, timeout: str) -> None:
    res = write_table(str(mor), generate_updates(ROWS, fraction=0.4, seed=56, ts_offset=91), operation="upsert")
    (mor / ".hoodie" / f"{res.instant}.deltacommit").unlink()  # a pending write without a heartbeat file
    before = _tree(mor)
    r = _run(["rollback", str(mor), "--stale", "--timeout", timeout])
    _assert_clear_error(r, "--timeout", repr(timeout), "positive", exit_codes=(1,))
    assert _tree(mor) == before


def test_compaction_run_max_plans_zero_usage_error_plan_untouched(mor: Path) -> None:
    assert _run(["compaction", "schedule", str(mor), "--force"]).exit_code == 0
    before = _tree(mor)
    r = _run(["compaction", "run", str(mor), "--max-plans", "0", "--engine", "local"])
    _assert_clear_error(r, "--max-plans", "0", "range", exit_codes=(2,))
    assert _tree(mor) == before


# -- broken pipe ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args",
    [
        ["timeline", "show", "{p}"],
        ["timeline", "show", "{p}", "--json"],
        ["fsview", "show", "{p}", "--json"],
        ["read", "{p}", "-o", "{out}", "--json"],
    ],
    ids=["timeline", "timeline-json", "fsview-json", "read-json"],
)
def test_broken_stdout_pipe_exits_quietly(mor: Path, tmp_path: Path, args: list[str]) -> None:
    out = tmp_path / "snap.parquet"
    argv = [a.format(p=mor, out=out) for a in args]
    # the reader of stdout is gone before the command prints (``lake-orch ... | head -0``)
    proc = subprocess.Popen(
        [sys.executable, "-m", "lake_orchestration.cli.app", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO_ROOT,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    code = proc.wait(timeout=300)
    assert err == "", err
    assert code in (0, 1), code
    if "read" in argv:
        assert pq.read_table(out).num_rows == ROWS.num_rows  # the data was written before the summary


# -- .compaction.inflight without .requested ------------------------------------------------------------------------
def _crashed_compaction(mor: Path) -> str:
    """Run a compaction, then undo its commit file: the state of a compaction killed just before committing, whose
    attempt wrote every new base file. Returns its instant."""
    r = _run(
        [
            "compaction",
            "run",
            str(mor),
            "--schedule",
            "--engine",
            "local",
            "--option",
            "hoodie.compact.inline.max.delta.commits=1",
        ]
    )
    assert r.exit_code == 0, r.output
    [commit] = (mor / ".hoodie").glob("*.commit")
    commit.unlink()
    t = commit.name.split(".")[0]
    assert (mor / ".hoodie" / f"{t}.compaction.inflight").exists()
    assert list(mor.glob(f"*/*_{t}.parquet")), "the attempt wrote base files"
    return t


def test_compaction_inflight_without_requested_clear_error_then_compaction_rollback_repairs(
    mor: Path, tmp_path: Path
) -> None:
    oracle_before = hudi_rs_snapshot(mor)
    t = _crashed_compaction(mor)
    (mor / ".hoodie" / f"{t}.compaction.requested").unlink()
    before = _tree(mor)
    repair = f"lake-orch compaction rollback {mor} --instant-time {t}"
    for args in (
        ["read", str(mor), "-o", str(tmp_path / "o.parquet")],
        ["fsview", "show", str(mor)],
        ["write", str(mor), "--input", str(_input(tmp_path))],
        ["compaction", "run", str(mor), "--engine", "local"],
        ["compaction", "schedule", str(mor), "--force"],
    ):
        r = _run(args)
        _assert_clear_error(r, f"{t}.compaction.requested", repair, exit_codes=(1,))
        assert _tree(mor) == before, args
    dry = _run(["compaction", "rollback", str(mor), "--instant-time", t, "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert f"_{t}.parquet" in dry.output and _tree(mor) == before
    r = _run(["compaction", "rollback", str(mor), "--instant-time", t])
    assert r.exit_code == 0, r.output
    assert "plan was missing" in r.output and "removed from the timeline" in r.output, r.output
    table = HudiTable(str(mor))
    assert table.timeline.get(t) is None, "the compaction whose plan was lost is gone from the timeline"
    assert [i for i in table.timeline.completed() if i.action.value == "rollback"]
    assert not list(mor.glob(f"*/*_{t}.parquet"))
    assert_same_rows(hudi_rs_snapshot(mor), oracle_before)  # type: ignore[arg-type]
    assert_same_rows(read_snapshot_table(table), oracle_before)
    # the table works again: a new compaction is scheduled and run
    assert (
        _run(
            [
                "compaction",
                "run",
                str(mor),
                "--schedule",
                "--engine",
                "local",
                "--option",
                "hoodie.compact.inline.max.delta.commits=1",
            ]
        ).exit_code
        == 0
    )
    assert_same_rows(read_snapshot_table(HudiTable(str(mor))), oracle_before, ignore=("_hoodie_file_name",))


def test_compaction_inflight_without_requested_with_later_log_files_rollback_refused(mor: Path, tmp_path: Path) -> None:
    assert _run(["compaction", "schedule", str(mor), "--force"]).exit_code == 0
    [req] = (mor / ".hoodie").glob("*.compaction.requested")
    t = req.name.split(".")[0]
    # a write while the plan is pending: new log files on top of the plan (slice base instant t)
    write_table(str(mor), generate_updates(ROWS, fraction=0.3, seed=77, ts_offset=70), operation="upsert")
    assert list(mor.glob(f"*/.*_{t}.log.*"))
    (mor / ".hoodie" / f"{t}.compaction.inflight").write_bytes(b"")
    req.unlink()
    before = _tree(mor)
    r = _run(["compaction", "rollback", str(mor), "--instant-time", t])
    _assert_clear_error(r, f"{t}.compaction.requested", "log file", "Restore the plan", exit_codes=(1,))
    assert _tree(mor) == before


# -- corrupt .rollback.requested ------------------------------------------------------------------------------------
def _failed_write(mor: Path) -> str:
    """An upsert whose completed file is removed: a write that failed before its commit. Returns its instant."""
    res = write_table(str(mor), generate_updates(ROWS, fraction=0.4, seed=55, ts_offset=90), operation="upsert")
    (mor / ".hoodie" / f"{res.instant}.deltacommit").unlink()
    return res.instant


@pytest.mark.parametrize("with_inflight", [False, True], ids=["requested", "inflight"])
def test_corrupt_rollback_requested_clear_error_then_removed_by_rollback_command(
    mor: Path, with_inflight: bool
) -> None:
    oracle_before = hudi_rs_snapshot(mor)
    w = _failed_write(mor)
    r_time = str(int(w) + 1)
    bad = mor / ".hoodie" / f"{r_time}.rollback.requested"
    bad.write_bytes(b"Obj\x01 torn plan")
    if with_inflight:
        (mor / ".hoodie" / f"{r_time}.rollback.inflight").write_bytes(b"")
    before = _tree(mor)
    repair = f"lake-orch rollback {mor} --instant-time {r_time}"
    for args in (
        ["rollback", str(mor), "--instant-time", w],
        ["rollback", str(mor), "--stale", "--timeout", "1s"],
    ):
        r = _run(args)
        _assert_clear_error(r, str(bad), repair, exit_codes=(1,))
        assert _tree(mor) == before, args
    dry = _run(["rollback", str(mor), "--instant-time", r_time, "--dry-run"])
    assert dry.exit_code == 0 and _tree(mor) == before, dry.output
    r = _run(["rollback", str(mor), "--instant-time", r_time])
    assert r.exit_code == 0, r.output
    after = _tree(mor)
    removed = {f".hoodie/{r_time}.rollback.requested", f".hoodie/{r_time}.rollback.inflight"}
    assert {k: v for k, v in before.items() if k not in removed} == after, "only the broken rollback's files go"
    # the failed write is rolled back as usual now
    r = _run(["rollback", str(mor), "--instant-time", w])
    assert r.exit_code == 0, r.output
    assert_same_rows(hudi_rs_snapshot(mor), oracle_before)  # type: ignore[arg-type]
    assert_same_rows(read_snapshot_table(HudiTable(str(mor))), oracle_before)


def test_rollback_command_on_readable_pending_rollback_refuses_to_remove_it(mor: Path) -> None:
    w = _failed_write(mor)
    from lake_orchestration.hudi.model.avro import InstantInfo, RollbackPlan

    r_time = str(int(w) + 1)
    plan = RollbackPlan(
        instant_to_rollback=InstantInfo(commit_time=w, action="deltacommit"), rollback_requests=(), version=1
    )
    (mor / ".hoodie" / f"{r_time}.rollback.requested").write_bytes(plan.to_bytes())
    before = _tree(mor)
    r = _run(["rollback", str(mor), "--instant-time", r_time])
    _assert_clear_error(r, "reads fine", f"--instant-time {w}", exit_codes=(1,))
    assert _tree(mor) == before


# -- corrupt latest .deltacommit -------------------------------------------------------------------------------------
@pytest.mark.parametrize("content", [b"{not json", b"[1, 2]"], ids=["not-json", "not-an-object"])
def test_corrupt_latest_deltacommit_refused_naming_file_like_hudi_rs(mor: Path, tmp_path: Path, content: bytes) -> None:
    latest = sorted((mor / ".hoodie").glob("*.deltacommit"))[-1]
    latest.write_bytes(content)
    with pytest.raises(Exception, match="commit metadata"):  # the oracle refuses the table too
        hudi_rs_snapshot(mor)
    before = _tree(mor)
    out = tmp_path / "o.parquet"
    for args in (
        ["read", str(mor), "-o", str(out)],
        ["read", str(mor), "-o", str(out), "--json"],
        ["write", str(mor), "--input", str(_input(tmp_path))],
        [
            "compaction",
            "run",
            str(mor),
            "--schedule",
            "--engine",
            "local",
            "--option",
            "hoodie.compact.inline.max.delta.commits=1",
        ],
    ):
        r = _run(args)
        _assert_clear_error(r, str(latest), exit_codes=(1,))
        assert _tree(mor) == before, args
    assert not out.exists()
