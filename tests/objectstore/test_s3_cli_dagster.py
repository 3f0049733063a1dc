"""How users point ``lake-orch`` and the Dagster layer at an S3 store, against the moto S3 server on 127.0.0.1.

* the CLI with the standard AWS environment and no option at all (a real ``lake-orch`` subprocess), ``s3a://``
  paths included;
* ``--storage-option KEY=VALUE`` on every command that opens a table, secrets from ``--storage-options-file``, every
  service run through the CLI on S3 and the result read back by hudi-rs;
* secrets on the command line refused; no secret ever in stdout, stderr, ``--json`` or error messages;
* a Dagster code location from a YAML config with an ``s3://`` table (endpoint in the config, credentials from
  environment variables): table asset, schedule-compaction job, a compaction partition; no secret in the run logs,
  the event metadata or the repository snapshot the UI shows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result

from lake_orchestration.cli.app import cli
from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.table import HudiTable
from tests.forkserver import ForkServer
from tests.objectstore.conftest import ACCESS_KEY, REGION, SECRET_KEY, S3Bucket

DATA_COLUMNS = ["uuid", "ts", "rider", "driver", "fare", "city"]
SECRETS = (SECRET_KEY, ACCESS_KEY)


def _no_secret(*texts: str) -> None:
    for text in texts:
        for s in SECRETS:
            assert s not in text, f"a secret value appears in the output:\n{text[:2000]}"


@pytest.fixture
def no_aws_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No AWS_* variable in this process (credentials must come from where the test says)."""
    for k in list(os.environ):
        if k.startswith("AWS_"):
            monkeypatch.delenv(k)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
    yield


def _expected(*batches: pa.Table) -> pa.Table:
    """The table's rows after upserting ``batches`` in order (the latest ``ts`` per key wins): pandas, not us."""
    import pandas as pd

    df = pd.concat([b.select(DATA_COLUMNS).to_pandas() for b in batches], ignore_index=True)
    df = df.sort_values("ts", kind="stable").drop_duplicates("uuid", keep="last")
    return pa.Table.from_pandas(df.sort_values("uuid").reset_index(drop=True), preserve_index=False)


def _same_rows(got: pa.Table, expected: pa.Table) -> None:
    a = got.select(DATA_COLUMNS).sort_by("uuid")
    assert a.num_rows == expected.num_rows
    for c in DATA_COLUMNS:
        assert a.column(c).to_pylist() == expected.column(c).cast(a.column(c).type).to_pylist(), c


def _hudi_rs(s3: S3Bucket, uri: str) -> pa.Table:
    from hudi import HudiTableBuilder

    b = HudiTableBuilder.from_base_uri(uri)
    for k, v in s3.hudi_rs_options.items():
        b = b.with_storage_option(k, v)
    return pa.Table.from_batches(b.build().read())


def _batches(tmp_path: Path) -> tuple[Path, Path, pa.Table, pa.Table]:
    base = generate_trips(120, partitions=2, seed=7)
    upd = generate_updates(base, fraction=0.4, seed=8)
    pq.write_table(base, tmp_path / "base.parquet")
    pq.write_table(upd, tmp_path / "upd.parquet")
    return tmp_path / "base.parquet", tmp_path / "upd.parquet", base, upd


WRITE_OPTS = [
    "--table-name",
    "trips",
    "--record-key",
    "uuid",
    "--precombine-field",
    "ts",
    "--partition-field",
    "city",
    "--option",
    "hoodie.parquet.small.file.limit=0",
]


# -- the standard AWS environment, a real lake-orch process ---------------------------------------------------------
_FORKS: list[ForkServer] = []


@pytest.fixture(scope="module", autouse=True)
def _fork_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The module's :mod:`tests.forkserver`: the CLI's imports paid once, each ``lake-orch`` a forked child of it
    (which reads the AWS environment it is given, as a new process does)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    forks = ForkServer(
        sys.executable, ["--import", "lake_orchestration.cli.app"], tmp_path_factory.mktemp("forks") / "log", env
    )
    _FORKS.append(forks)
    yield
    _FORKS.remove(forks)
    forks.close()


def _lake_orch(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``lake-orch ARGS`` as a process of its own with ``env`` as its AWS environment (``python -m``; a forked child
    of the module's fork server, which imported it once)."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    full.update(env)
    (forks,) = _FORKS
    return forks.run(args, module="lake_orchestration.cli.app", env=full, cwd=os.getcwd(), timeout=300)


def test_cli_subprocess_standard_aws_environment_without_options(s3: S3Bucket, tmp_path: Path) -> None:
    base_file, upd_file, base, upd = _batches(tmp_path)
    uri = s3.uri("lake", "trips")
    runs = []
    w = _lake_orch(s3.env, "write", uri, "--input", str(base_file), "--operation", "bulk_insert", *WRITE_OPTS, "--json")
    runs.append(w)
    assert w.returncode == 0, w.stderr
    assert json.loads(w.stdout)["inserted"] == 120
    # s3a:// (what Java Hudi writes in its metadata) reaches the same table
    u = _lake_orch(s3.env, "write", uri.replace("s3://", "s3a://"), "--input", str(upd_file), "--json")
    runs.append(u)
    assert u.returncode == 0, u.stderr
    assert json.loads(u.stdout)["updated"] == upd.num_rows
    tl = _lake_orch(s3.env, "timeline", "show", uri, "--json")
    runs.append(tl)
    assert tl.returncode == 0, tl.stderr
    assert [(r["action"], r["state"]) for r in json.loads(tl.stdout)] == [("deltacommit", "COMPLETED")] * 2
    show = _lake_orch(s3.env, "table", "show", uri.replace("s3://", "s3a://"), "--json")
    runs.append(show)
    assert show.returncode == 0, show.stderr
    assert json.loads(show.stdout)["name"] == "trips" and json.loads(show.stdout)["instants"] == 2
    out = tmp_path / "snapshot.parquet"
    r = _lake_orch(s3.env, "read", uri, "-o", str(out), "--json")
    runs.append(r)
    assert r.returncode == 0, r.stderr
    _same_rows(pq.read_table(out), _expected(base, upd))
    _same_rows(_hudi_rs(s3, uri), _expected(base, upd))
    # an error on S3 (no table there), with the traceback: the message names the path, no secret anywhere
    err = _lake_orch(s3.env, "--verbose", "table", "show", s3.uri("nothing", "here"))
    runs.append(err)
    assert err.returncode == 1
    assert "nothing/here" in err.stderr
    _no_secret(*(p.stdout + p.stderr for p in runs))
    assert any(k.startswith("lake/trips/.hoodie/") for k in s3.keys())


def test_cli_subprocess_refuses_a_secret_on_the_command_line(s3: S3Bucket, tmp_path: Path) -> None:
    base_file, _, _, _ = _batches(tmp_path)
    p = _lake_orch(
        s3.env,
        "write",
        s3.uri("t"),
        "--input",
        str(base_file),
        *WRITE_OPTS,
        "--storage-option",
        f"secret_key={SECRET_KEY}",
    )
    assert p.returncode == 2
    assert "secret_key is a secret" in p.stderr
    assert "AWS_SECRET_ACCESS_KEY" in p.stderr and "--storage-options-file" in p.stderr
    _no_secret(p.stdout + p.stderr)
    assert s3.keys() == []  # nothing written


# -- --storage-option / --storage-options-file, in process ----------------------------------------------------------
def _creds_file(tmp_path: Path) -> Path:
    f = tmp_path / "s3-credentials.yaml"
    f.write_text(f"access_key: {ACCESS_KEY}\nsecret_key: {SECRET_KEY}\n")
    return f


def _run(args: list[str], *, exit_code: int = 0) -> Result:
    res = CliRunner().invoke(cli, args, catch_exceptions=False)
    out = res.stdout + res.stderr
    assert res.exit_code == exit_code, out
    _no_secret(out)
    return res


def test_cli_storage_options_run_every_service_on_s3(s3: S3Bucket, tmp_path: Path, no_aws_env: None) -> None:
    """Endpoint and region on the command line, credentials in a file, no AWS_* variable: write, upsert, log
    compaction, compaction (schedule/show/run), savepoint, clean, archive, rollback, fsview and the snapshot read
    all run on S3; hudi-rs reads the S3 table equal to pandas' expectation."""
    base_file, upd_file, base, upd = _batches(tmp_path)
    upd2 = generate_updates(upd, fraction=0.5, seed=9, ts_offset=10**8)
    upd3 = generate_updates(base, fraction=0.2, seed=10, ts_offset=2 * 10**8)
    pq.write_table(upd2, tmp_path / "upd2.parquet")
    pq.write_table(upd3, tmp_path / "upd3.parquet")
    uri = s3.uri("lake", "trips")
    so = [
        "--storage-option",
        f"endpoint_override={s3.endpoint}",
        "--storage-option",
        f"region={REGION}",
        "--storage-options-file",
        str(_creds_file(tmp_path)),
    ]

    def j(*args: str) -> Any:
        return json.loads(_run([*args, *so, "--json"]).stdout)

    assert j("write", uri, "--input", str(base_file), "--operation", "bulk_insert", *WRITE_OPTS)["inserted"] == 120
    assert j("write", uri, "--input", str(upd_file))["updated"] == upd.num_rows
    assert j("write", uri, "--input", str(tmp_path / "upd2.parquet"))["updated"] == upd2.num_rows
    assert j("table", "show", uri)["type"] == "MERGE_ON_READ"
    res = _run(["log-compaction", "schedule", uri, *so, "--option", "hoodie.log.compaction.blocks.threshold=2"])
    assert res.stdout.startswith("Scheduled log compaction"), res.stdout
    assert _run(["log-compaction", "run", uri, *so]).stdout.startswith("Committed log compaction")
    sched = j("compaction", "schedule", uri, "--force")
    assert sched["scheduled"] and sched["operations"] >= 1
    (plan,) = j("compaction", "show", uri)
    assert plan["instant"] == sched["instant"] and plan["state"] == "REQUESTED"
    (ran,) = j("compaction", "run", uri, "--engine", "local")
    assert ran["instant"] == sched["instant"]
    rb = _run(["compaction", "rollback", uri, *so, "--instant-time", sched["instant"]], exit_code=1)
    assert "is not an inflight compaction" in rb.stderr  # it read the S3 timeline: the compaction is committed
    slices = j("fsview", "show", uri)
    assert slices and all(r["base_instant"] == sched["instant"] for r in slices)
    sp = j("savepoint", "create", uri, "--instant-time", sched["instant"])
    assert sp["instant"] == sched["instant"]
    assert [r["instant_time"] for r in j("savepoint", "show", uri)] == [sched["instant"]]
    _run(["savepoint", "delete", uri, *so, "--instant-time", sched["instant"]])
    assert j("write", uri, "--input", str(tmp_path / "upd3.parquet"))["updated"] == upd3.num_rows
    clean = j("clean", uri, "--option", "hoodie.cleaner.commits.retained=1")
    assert clean["instants"] and clean["deleted"] >= 1, clean
    assert "archived_instants" in j("archive", uri, "--dry-run")
    assert j("rollback", uri, "--stale") == []
    timeline = j("timeline", "show", uri)
    assert {r["action"] for r in timeline} >= {"deltacommit", "commit", "clean"}
    out = tmp_path / "snap.parquet"
    assert j("read", uri, "-o", str(out))["rows"] == 120
    expected = _expected(base, upd, upd2, upd3)
    _same_rows(pq.read_table(out), expected)
    _same_rows(_hudi_rs(s3, uri), expected)


def test_cli_secret_storage_options_refused_and_not_shown(s3: S3Bucket, tmp_path: Path) -> None:
    base_file, _, _, _ = _batches(tmp_path)
    for key in ("secret_key", "access_key", "session_token", "aws_secret_access_key", "AWS_SESSION_TOKEN", "token"):
        res = _run(
            ["write", s3.uri("t"), "--input", str(base_file), *WRITE_OPTS, "--storage-option", f"{key}={SECRET_KEY}"],
            exit_code=2,
        )
        assert f"{key} is a secret and is refused on the command line" in res.stderr
        assert "AWS_ACCESS_KEY_ID" in res.stderr and "--storage-options-file" in res.stderr
    # a pair without '=' may be a pasted secret: not echoed either
    res = _run(["table", "show", s3.uri("t"), "--storage-option", SECRET_KEY], exit_code=2)
    assert "expected KEY=VALUE" in res.stderr
    assert s3.keys() == []  # nothing was written


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        *[(k, True) for k in ("secret_key", "access_key", "session_token", "access_token", "token", "password")],
        *[(k, True) for k in ("aws_secret_access_key", "AWS_ACCESS_KEY_ID", "aws_session_token", "client_secret")],
        *[(k, False) for k in ("region", "endpoint_override", "scheme", "anonymous", "role_arn", "conditional_put")],
        *[(k, False) for k in ("credential_token_expiration", "kerb_ticket", "force_virtual_addressing")],
    ],
)
def test_secret_option_names(key: str, secret: bool) -> None:
    from lake_orchestration.cli.storage_options import is_secret_key

    assert is_secret_key(key) is secret


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (f"- {SECRET_KEY}\n", "expected a mapping of storage option names"),
        (f"secret_key: [{SECRET_KEY}]\n", "secret_key: expected a string, number or boolean"),
        (f"secret_key: '{SECRET_KEY}\n", "not valid YAML"),
        (f"connect_timeout: {SECRET_KEY}\n", "connect_timeout: expected a number"),
    ],
)
def test_cli_bad_storage_options_file_names_the_key_never_the_value(
    tmp_path: Path, content: str, expected: str
) -> None:
    f = tmp_path / "opts.yaml"
    f.write_text(content)
    res = _run(["timeline", "show", str(tmp_path / "t"), "--storage-options-file", str(f)], exit_code=2)
    assert expected in res.stderr and str(f) in res.stderr


def test_cli_storage_options_file_in_json_with_numeric_keys(s3: S3Bucket, tmp_path: Path, no_aws_env: None) -> None:
    """The options file may be JSON (it is YAML); numbers where the store wants strings (an all-digit key id) are
    passed as strings, and the timeouts as numbers."""
    from lake_orchestration.hudi.write import WriteOptions, write_table

    uri = s3.uri("t")
    opts = WriteOptions(table_name="t", record_key_fields=("uuid",), precombine_field="ts")
    write_table(
        uri, generate_trips(10, seed=1), operation="bulk_insert", options=opts, storage_options=s3.storage_options
    )
    f = tmp_path / "opts.json"
    f.write_text(json.dumps({"access_key": 12345678901, "secret_key": 98765432109, "connect_timeout": 30}))
    res = _run(
        [
            "table",
            "show",
            uri,
            "--json",
            "--storage-options-file",
            str(f),
            "--storage-option",
            f"endpoint_override={s3.endpoint}",
        ]
    )
    assert json.loads(res.stdout)["name"] == "t"
    assert "98765432109" not in res.stdout + res.stderr


def test_cli_error_quoting_a_secret_is_masked(s3: S3Bucket, tmp_path: Path, no_aws_env: None) -> None:
    """An error message (and the --verbose traceback) that quotes a secret value prints *** instead: here the
    store's error names a path that happens to contain it."""
    uri = s3.uri("x", SECRET_KEY)
    args = ["table", "show", uri, "--storage-option", f"endpoint_override={s3.endpoint}"]
    args += ["--storage-options-file", str(_creds_file(tmp_path))]
    for verbose in ([], ["--verbose"]):
        res = _run([*verbose, *args], exit_code=1)
        assert f"{s3.bucket}/x/***" in res.stderr


def test_every_table_command_takes_storage_options() -> None:
    """One shared decorator on every command that opens a table (a PATH argument or --path)."""
    missing = []

    def walk(cmd: click.Command, name: str) -> None:
        if isinstance(cmd, click.Group):
            for sub_name, sub in cmd.commands.items():
                walk(sub, f"{name} {sub_name}".strip())
            return
        names = {p.name for p in cmd.params}
        if "path" in names and name != "demo" and not {"storage_option_pairs", "storage_options_file"} <= names:
            missing.append(name)

    walk(cli, "")
    assert not missing, f"commands without --storage-option/--storage-options-file: {missing}"
    cmd = cli.commands["compaction"].commands["run"]  # type: ignore[attr-defined]
    (opt,) = [p for p in cmd.params if p.name == "storage_option_pairs"]
    assert opt.multiple and "--storage-option" in opt.opts


def test_logs_mask_secret_values() -> None:
    """A log record quoting a secret (say, a store client's debug line) is masked by the CLI's log filter."""
    import logging

    from lake_orchestration.cli.storage_options import _RedactFilter

    rec = logging.LogRecord("x", logging.DEBUG, __file__, 1, "signing with %s and %s", (SECRET_KEY, "eu"), None)
    assert _RedactFilter({SECRET_KEY}).filter(rec)
    assert rec.getMessage() == "signing with *** and eu"


# -- Dagster ----------------------------------------------------------------------------------------------------------
def _dagster_config(s3: S3Bucket, how: str, uri: str, monkeypatch: pytest.MonkeyPatch) -> str:
    if how == "config":  # endpoint in the config, credentials in variables the config names
        monkeypatch.setenv("ORDERS_S3_KEY", ACCESS_KEY)
        monkeypatch.setenv("ORDERS_S3_SECRET", SECRET_KEY)
        storage = (
            f"{{provider: s3, endpoint_override: '{s3.endpoint}', region: {REGION}, access_key_env: ORDERS_S3_KEY, "
            "secret_key_env: ORDERS_S3_SECRET}"
        )
    else:  # nothing but the provider: the standard AWS environment (endpoint, region, keys) does the rest
        for k, v in s3.env.items():
            monkeypatch.setenv(k, v)
        storage = "{provider: s3}"
    return f"""\
tables:
  - name: orders
    base_path: {uri}
    engine: local
    storage: {storage}
    compaction_options:
      hoodie.compact.inline.max.delta.commits: 1
  - name: missing                     # no table at this path: its runs fail
    base_path: {s3.uri("lake", "missing")}
    engine: local
    storage: {storage}
"""


@pytest.mark.parametrize("how", ["config", "aws_env"])
def test_dagster_s3_table_config_end_to_end(
    s3: S3Bucket, tmp_path: Path, no_aws_env: None, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """A code location from a YAML config with an S3 table, either with the endpoint in the config and the
    credentials in environment variables the config names, or with only ``provider: s3`` and the standard AWS
    environment (an ``s3a://`` base path). The table asset, the schedule-compaction job and the compaction
    partition run on the S3 server; no secret in the run logs, the event metadata or the repository snapshot."""
    import dagster as dg
    from dagster._core.remote_representation.external_data import RepositorySnap
    from dagster._serdes import serialize_value

    from lake_orchestration.dagster import build_hudi_definitions, load_config_file
    from lake_orchestration.hudi.write import WriteOptions, write_table

    uri = s3.uri("lake", "orders")
    opts = WriteOptions(
        table_name="orders",
        record_key_fields=("uuid",),
        partition_fields=("city",),
        precombine_field="ts",
        small_file_limit=0,
    )
    base = generate_trips(90, partitions=2, seed=3)
    upd = generate_updates(base, fraction=0.5, seed=4)
    write_table(uri, base, operation="bulk_insert", options=opts, storage_options=s3.storage_options)
    write_table(uri, upd, operation="upsert", options=opts, storage_options=s3.storage_options)

    config = tmp_path / "lake_orchestration.yaml"
    config.write_text(
        _dagster_config(s3, how, uri if how == "config" else s3.uri("lake", "orders", scheme="s3a"), monkeypatch)
    )
    file_cfg = load_config_file(config)
    defs = build_hudi_definitions(tables=file_cfg.tables, spark_config=file_cfg.spark_config)
    texts = [config.read_text(), serialize_value(RepositorySnap.from_def(defs.get_repository_def()))]
    orders_checks = [c for c in defs.asset_checks if all(k.asset_key.path == ["hudi", "orders"] for k in c.check_keys)]
    # the four checks of the table, one multi_asset_check (the table listed once)
    assert len(orders_checks) == 1 and len(orders_checks[0].check_keys) == 4
    with dg.instance_for_test() as instance:
        table_run = dg.materialize(
            [defs.resolve_assets_def(dg.AssetKey(["hudi", "orders"])), *orders_checks], instance=instance
        )
        assert table_run.success
        (mat,) = table_run.asset_materializations_for_node("hudi__orders")
        assert mat.metadata["completed_deltacommits"].value == 2
        assert mat.metadata["file_groups"].value >= 2

        sched = defs.resolve_job_def("orders__schedule_compaction").execute_in_process(instance=instance)
        assert sched.success
        (out_md,) = [
            e.event_specific_data.metadata  # type: ignore[union-attr]
            for e in sched.all_events
            if e.event_type_value == "STEP_OUTPUT"
        ]
        assert out_md["scheduled"].value is True
        instant = out_md["instant"].value
        instance.add_dynamic_partitions("orders__compaction_instants", [instant])
        comp = defs.resolve_job_def("orders__compaction").execute_in_process(instance=instance, partition_key=instant)
        assert comp.success
        (cm,) = comp.asset_materializations_for_node("hudi__orders__compaction")
        assert cm.metadata["instant"].value == instant and cm.metadata["rows_written"].value == 90

        # a run that fails on S3 (no table there): the failure names the path, never the secret
        bad = dg.materialize(
            [defs.resolve_assets_def(dg.AssetKey(["hudi", "missing"]))], instance=instance, raise_on_error=False
        )
        assert not bad.success
        (failure,) = [e for e in bad.all_events if e.event_type_value == "STEP_FAILURE"]
        assert "lake/missing" in str(failure.event_specific_data.error)  # type: ignore[union-attr]

        for run in instance.get_runs():
            texts.append(serialize_value(run))
            texts += [serialize_value(rec) for rec in instance.all_logs(run.run_id)]
    for text in texts:
        for s in (SECRET_KEY, ACCESS_KEY):
            assert s not in text, "a secret appears in the Dagster event log, run or repository snapshot"

    t = HudiTable(uri, storage_options=s3.storage_options)
    done = t.timeline.get(instant)
    assert done is not None and done.is_completed
    _same_rows(_hudi_rs(s3, uri), _expected(base, upd))


@pytest.mark.parametrize(("value", "atomic"), [(None, True), ("true", True), ("false", False)])
def test_dagster_s3_config_conditional_put_reaches_the_storage(
    s3: S3Bucket, tmp_path: Path, no_aws_env: None, monkeypatch: pytest.MonkeyPatch, value: str | None, atomic: bool
) -> None:
    """``conditional_put`` in a table's storage config (``false``: a store declared without conditional writes,
    one writer only) reaches the table's Storage; YAML's boolean ``false`` is the same as ``"false"``."""
    from lake_orchestration.dagster import load_config_file

    monkeypatch.setenv("T_KEY", ACCESS_KEY)
    monkeypatch.setenv("T_SECRET", SECRET_KEY)
    extra = f"\n      conditional_put: {value}" if value is not None else ""
    config = tmp_path / "c.yaml"
    config.write_text(
        f"""\
tables:
  - name: t
    base_path: {s3.uri("t")}
    storage:
      provider: s3
      endpoint_override: {s3.endpoint}
      access_key_env: T_KEY
      secret_key_env: T_SECRET{extra}
"""
    )
    (cfg,) = load_config_file(config).tables
    # typed by the one storage-options model, as the CLI's conditional_put=false is (issue 24 item 5)
    assert cfg.storage_options().get("conditional_put") == {"true": True, "false": False}.get(value)
    from lake_orchestration.io import Storage

    assert Storage(cfg.base_path, options=cfg.storage_options()).atomic_create is atomic
