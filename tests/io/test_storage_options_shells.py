"""The three shells parse storage options into the one model (issue 24 item 5): the same options given as the CLI
takes them (``--storage-option KEY=VALUE`` and ``--storage-options-file``), as a Dagster table config and as an
Airflow connection (extra + login/password) come out as equal :class:`StorageOptions`, each value typed as pyarrow
wants it; a bad value is refused by each shell naming its source and the key, never the value.

The Airflow leg calls the hook's pure helper ``location_from_connection`` with a connection-shaped object; the main
test environment has no Airflow (tests/airflow builds its own venv), so ``airflow.sdk.BaseHook`` is a bare class here
when Airflow is not importable (the helper uses nothing of it).
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from lake_orchestration.cli.storage_options import current_storage_options, storage_options
from lake_orchestration.dagster.config import HudiTableConfig
from lake_orchestration.errors import InvalidOptionError
from lake_orchestration.io.storage_options import StorageOptions

SECRET = "s3cr3t-value-never-shown"


@pytest.fixture
def airflow_hooks(monkeypatch: pytest.MonkeyPatch) -> Iterator[types.ModuleType]:
    """``lake_orchestration.airflow.hooks`` (with a bare ``BaseHook`` if Airflow is not installed; that module is
    dropped again afterwards, so no other test sees it)."""
    try:
        import airflow.sdk  # noqa: F401
    except ImportError:
        pass
    else:
        yield importlib.import_module("lake_orchestration.airflow.hooks")
        return
    sdk = types.ModuleType("airflow.sdk")
    sdk.BaseHook = type("BaseHook", (), {})  # type: ignore[attr-defined]
    pkg = types.ModuleType("airflow")
    pkg.sdk = sdk  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "airflow", pkg)
    monkeypatch.setitem(sys.modules, "airflow.sdk", sdk)
    name = "lake_orchestration.airflow.hooks"
    sys.modules.pop(name, None)
    try:
        yield importlib.import_module(name)
    finally:
        sys.modules.pop(name, None)
        parent = sys.modules.get("lake_orchestration.airflow")
        if parent is not None and hasattr(parent, "hooks"):
            delattr(parent, "hooks")


def _cli(pairs: list[str], file_text: str | None, tmp_path: Path) -> tuple[StorageOptions | None, str]:
    """The options a ``lake-orch`` command decorated with ``@storage_options`` sees, and its output."""
    seen: list[StorageOptions] = []

    @click.command()
    @storage_options
    def probe() -> None:
        seen.append(StorageOptions(current_storage_options()))

    args = [a for p in pairs for a in ("--storage-option", p)]
    if file_text is not None:
        f = tmp_path / "opts.yaml"
        f.write_text(file_text)
        args += ["--storage-options-file", str(f)]
    res = CliRunner().invoke(probe, args)
    return (seen[0] if seen else None), res.output


def _airflow(hooks: types.ModuleType, extra: dict[str, Any], login: str | None = None, password: str | None = None):
    conn = types.SimpleNamespace(
        conn_id="hudi_s3", host="s3://bucket/t", extra_dejson=extra, login=login, password=password
    )
    return StorageOptions(hooks.location_from_connection(conn).storage_options)


def test_s3_options_equal_through_cli_dagster_airflow(
    tmp_path: Path, airflow_hooks: types.ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = StorageOptions(
        {
            "region": "eu-west-1",
            "endpoint_override": "http://127.0.0.1:9000",
            "scheme": "http",
            "anonymous": False,
            "force_virtual_addressing": True,
            "conditional_put": False,
            "access_key": "AKIA0123456789",
            "secret_key": SECRET,
        }
    )
    cli, out = _cli(
        [
            "region=eu-west-1",
            "endpoint_override=http://127.0.0.1:9000",
            "scheme=http",
            "anonymous=false",
            "force_virtual_addressing=true",
            "conditional_put=false",
        ],
        f"access_key: AKIA0123456789\nsecret_key: {SECRET}\n",
        tmp_path,
    )
    assert cli is not None, out
    monkeypatch.setenv("MY_AK", "AKIA0123456789")
    monkeypatch.setenv("MY_SK", SECRET)
    dagster = HudiTableConfig.model_validate(
        {
            "name": "trips",
            "base_path": "s3://bucket/t",
            "storage": {
                "provider": "s3",
                "region": "eu-west-1",
                "endpoint_override": "http://127.0.0.1:9000",
                "scheme": "http",
                "anonymous": False,
                "force_virtual_addressing": True,
                "conditional_put": False,
                "access_key_env": "MY_AK",
                "secret_key_env": "MY_SK",
            },
        }
    ).storage_options()
    airflow = _airflow(
        airflow_hooks,
        {
            "storage_options": {
                "region": "eu-west-1",
                "endpoint_override": "http://127.0.0.1:9000",
                "scheme": "http",
                "anonymous": "false",
                "force_virtual_addressing": "true",
                "conditional_put": "false",
            }
        },
        login="AKIA0123456789",
        password=SECRET,
    )
    assert isinstance(dagster, StorageOptions)
    assert cli == dagster == airflow == expected
    assert SECRET not in repr(cli) and SECRET not in repr(dagster)


def test_hdfs_and_gcs_typed_values_equal(
    tmp_path: Path, airflow_hooks: types.ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Integers, a mapping (``extra_conf``) and a datetime (``credential_token_expiration``) from text, YAML and a
    Dagster config come out the same type and value."""
    hdfs = StorageOptions(
        {"user": "hudi", "replication": 3, "buffer_size": 0, "extra_conf": {"dfs.client.use.datanode.hostname": "true"}}
    )
    cli, out = _cli(
        ["user=hudi", "replication=3", 'extra_conf={"dfs.client.use.datanode.hostname": "true"}'],
        "buffer_size: 0\n",
        tmp_path,
    )
    assert cli is not None, out
    dagster = HudiTableConfig.model_validate(
        {
            "name": "t",
            "base_path": "hdfs://nn:8020/t",
            "storage": {
                "provider": "hdfs",
                "user": "hudi",
                "replication": 3,
                "buffer_size": 0,
                "extra_conf": {"dfs.client.use.datanode.hostname": "true"},
            },
        }
    ).storage_options()
    airflow = _airflow(
        airflow_hooks,
        {
            "storage_options": {
                "user": "hudi",
                "replication": "3",
                "buffer_size": "0",
                "extra_conf": {"dfs.client.use.datanode.hostname": "true"},
            }
        },
    )
    assert cli == dagster == airflow == hdfs
    assert type(cli["replication"]) is type(dagster["replication"]) is type(airflow["replication"]) is int

    when = "2030-01-01T00:00:00+00:00"
    gcs = StorageOptions({"project_id": "p1", "credential_token_expiration": datetime(2030, 1, 1, tzinfo=timezone.utc)})
    cli, out = _cli(["project_id=p1", f"credential_token_expiration={when}"], None, tmp_path)
    assert cli == gcs, out
    airflow = _airflow(airflow_hooks, {"storage_options": {"project_id": "p1", "credential_token_expiration": when}})
    assert airflow == gcs
    monkeypatch.setenv("MY_TOKEN", SECRET)
    dagster = HudiTableConfig.model_validate(
        {
            "name": "t",
            "base_path": "gs://bucket/t",
            "storage": {
                "provider": "gcs",
                "project_id": "p1",
                "access_token_env": "MY_TOKEN",
                "credential_token_expiration": when,
            },
        }
    ).storage_options()
    assert dagster == gcs.merged({"access_token": SECRET})


def test_bad_value_names_source_and_key_never_value(tmp_path: Path, airflow_hooks: types.ModuleType) -> None:
    bad = "not-a-number-4711"
    cli, out = _cli([f"replication={bad}"], None, tmp_path)
    assert cli is None
    assert "replication: expected an integer (value not shown)" in out and bad not in out

    cli, out = _cli([], f"request_timeout: {bad}\n", tmp_path)
    assert cli is None
    assert "opts.yaml: request_timeout: expected a number (value not shown)" in out and bad not in out

    with pytest.raises(InvalidOptionError) as err:
        _airflow(airflow_hooks, {"storage_options": {"replication": bad}})
    msg = str(err.value)
    assert "extra 'storage_options' of Airflow connection 'hudi_s3': replication: expected an integer" in msg
    assert bad not in msg
