"""Table config: storage options per provider (secrets only from the environment), service options, config files."""

from pathlib import Path

import pyarrow.fs as pafs
import pytest

from lake_orchestration.dagster import HudiConfigError, HudiTableConfig, load_config_file
from lake_orchestration.dagster.config import validate_tables
from lake_orchestration.io.storage import Storage

pytestmark = pytest.mark.dagster

SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def test_s3_storage_options_read_secrets_from_named_env_vars(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_AK", "AKIAEXAMPLE")
    monkeypatch.setenv("TEST_SK", SECRET)
    cfg = HudiTableConfig(
        name="trips",
        base_path="s3://bucket/lake/trips",
        storage={
            "provider": "s3",
            "region": "eu-west-1",
            "endpoint_override": "localhost:9000",
            "scheme": "http",
            "access_key_env": "TEST_AK",
            "secret_key_env": "TEST_SK",
        },
    )
    assert SECRET not in repr(cfg) and SECRET not in cfg.model_dump_json()
    opts = cfg.storage_options()
    assert opts == {
        "region": "eu-west-1",
        "endpoint_override": "localhost:9000",
        "scheme": "http",
        "access_key": "AKIAEXAMPLE",
        "secret_key": SECRET,
    }
    # what HudiTable hands to pyarrow is accepted by pyarrow's S3 file system as is (no connection is made)
    storage = Storage(cfg.base_path, options=opts)
    assert isinstance(storage.fs, pafs.S3FileSystem) and storage.fs.region == "eu-west-1"
    assert storage.base_path == "bucket/lake/trips"


def test_gcs_and_hdfs_storage_options_map_to_pyarrow_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_GCS_TOKEN", "ya29.token")
    gcs = HudiTableConfig(
        name="g",
        base_path="gs://bucket/t",
        storage={
            "provider": "gcs",
            "project_id": "p",
            "access_token_env": "TEST_GCS_TOKEN",
            "credential_token_expiration": "2030-01-01T00:00:00+00:00",
        },
    )
    opts = gcs.storage_options()
    assert opts["access_token"] == "ya29.token" and opts["project_id"] == "p"
    assert isinstance(Storage(gcs.base_path, options=opts).fs, pafs.GcsFileSystem)
    hdfs = HudiTableConfig(
        name="h",
        base_path="hdfs://namenode:8020/lake/t",
        storage={
            "provider": "hdfs",
            "user": "hudi",
            "replication": 2,
            "extra_conf": {"dfs.client.use.datanode.hostname": "true"},
        },
    )
    assert hdfs.storage_options() == {
        "user": "hudi",
        "replication": 2,
        "extra_conf": {"dfs.client.use.datanode.hostname": "true"},
    }
    local = HudiTableConfig(name="l", base_path="/data/t", storage={"provider": "local"})
    assert local.storage_options() == {} and HudiTableConfig(name="n", base_path="s3://b/t").storage_options() == {}


def test_unset_secret_env_var_fails_naming_table_field_and_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TEST_UNSET_SK", raising=False)
    monkeypatch.setenv("TEST_AK", "AKIA")
    cfg = HudiTableConfig(
        name="trips",
        base_path="s3://b/t",
        storage={"provider": "s3", "access_key_env": "TEST_AK", "secret_key_env": "TEST_UNSET_SK"},
    )
    with pytest.raises(HudiConfigError, match=r"table 'trips'.*storage\.secret_key_env.*'TEST_UNSET_SK'.*not set"):
        cfg.storage_options()


def test_literal_secret_in_env_field_is_refused_without_echoing_it() -> None:
    entry = {
        "name": "trips",
        "base_path": "s3://b/t",
        "storage": {"provider": "s3", "access_key_env": "AK", "secret_key_env": SECRET},
    }
    with pytest.raises(HudiConfigError) as err:
        validate_tables([entry], where="lake.yaml")
    msg = str(err.value)
    assert SECRET not in msg
    assert (
        "lake.yaml: tables[0] ('trips')" in msg and "secret_key_env" in msg and "NAME of an environment variable" in msg
    )


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (
            {"name": "a", "base_path": "/x", "storage": {"provider": "s3"}},
            r"provider 's3' does not match base_path '/x'",
        ),
        ({"name": "a", "base_path": "s3://b/t", "storage": {"provider": "azure"}}, r"'local', 's3', 'gcs', 'hdfs'"),
        ({"name": "a-b", "base_path": "/x"}, r"name: expected letters, digits and underscores"),
        (
            {"name": "a", "base_path": "/x", "compaction_options": {"hoodie.compact.inline.max.delta.commits": "x"}},
            r"hoodie\.compact\.inline\.max\.delta\.commits='x': expected an integer >= 0",
        ),
        ({"name": "a", "base_path": "/x", "clean_options": {"commits_retained": 3}}, r"clean_options take Hudi's keys"),
        (
            {"name": "a", "base_path": "/x", "storage": {"provider": "s3", "secret_key_env": "SK"}},
            r"access_key_env and secret_key_env go together",
        ),
        ({"name": "a"}, r"base_path: Field required"),
        ({"name": "a", "base_path": "/x", "colour": "red"}, r"colour: Extra inputs are not permitted"),
    ],
)
def test_invalid_entry_error_names_entry_and_expectation(entry: dict, expected: str) -> None:
    with pytest.raises(HudiConfigError, match=rf"^lake\.yaml: tables\[0\] \('{entry['name']}'\): .*{expected}"):
        validate_tables([entry], where="lake.yaml")


def test_service_options_from_yaml_scalars_become_hudi_strings(tmp_path: Path) -> None:
    f = tmp_path / "lake.yaml"
    f.write_text(
        "tables:\n"
        "  - name: trips\n"
        "    base_path: /data/trips\n"
        "    compaction_options: {hoodie.compact.inline.max.delta.commits: 3}\n"
        "    clean_options: {hoodie.cleaner.commits.retained: 10, hoodie.clean.automatic: false}\n"
        "    archive_options: {hoodie.keep.min.commits: 20, hoodie.keep.max.commits: 30}\n"
        "spark_config: {spark.master: 'local[2]', spark.executor.cores: 2}\n"
    )
    cfg = load_config_file(f)
    (t,) = cfg.tables
    assert t.compaction_options == {"hoodie.compact.inline.max.delta.commits": "3"}
    assert t.clean_options == {"hoodie.cleaner.commits.retained": "10", "hoodie.clean.automatic": "false"}
    assert t.archive_options == {"hoodie.keep.min.commits": "20", "hoodie.keep.max.commits": "30"}
    assert cfg.spark_config == {"spark.master": "local[2]", "spark.executor.cores": 2}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("tables: [\n  {name: a, base_path: /x\n", r"not valid YAML at line \d+, column \d+"),
        ("- name: a\n  base_path: /x\n", r"expected a mapping with 'tables:'"),
        ("tabels:\n  - {name: a, base_path: /x}\n", r"unknown top-level keys \['tabels'\]"),
        ("spark_config: {}\n", r"missing 'tables:'"),
        ("tables: []\n", r"expected 'tables:' to be a non-empty list"),
        (
            "tables:\n  - {name: a, base_path: /x}\n  - {name: a, base_path: /y}\n",
            r"tables\[1\] \('a'\): duplicate table name 'a' \(also tables\[0\]\)",
        ),
        (
            "tables:\n  - {name: a, base_path: /x}\nspark_config: {master: local}\n",
            r"spark_config: expected Spark configuration keys \(spark\.\*\), got 'master'",
        ),
    ],
)
def test_bad_config_file_error_names_file_and_problem(tmp_path: Path, text: str, expected: str) -> None:
    f = tmp_path / "lake.yaml"
    f.write_text(text)
    with pytest.raises(HudiConfigError, match=rf"^{f}: .*{expected}"):
        load_config_file(f)


def test_missing_config_file_error_names_it(tmp_path: Path) -> None:
    with pytest.raises(HudiConfigError, match=rf"^{tmp_path / 'nope.yaml'}: cannot read the config file"):
        load_config_file(tmp_path / "nope.yaml")


def test_options_unknown_hudi_key_refused_naming_table_map_and_closest_key(tmp_path: Path) -> None:
    """A typo in a YAML option map used to keep Hudi's default silently; now loading the file fails."""
    f = tmp_path / "tables.yaml"
    f.write_text(
        "tables:\n"
        "  - name: trips\n"
        "    base_path: /data/trips\n"
        "    compaction_options: {hoodie.compact.inline.max.delta.commit: 1}\n"
    )
    with pytest.raises(HudiConfigError) as err:
        load_config_file(f)
    msg = str(err.value)
    assert str(f) in msg and "tables[0] ('trips')" in msg
    assert "'hoodie.compact.inline.max.delta.commit'" in msg and "compaction_options of table 'trips'" in msg
    assert "did you mean hoodie.compact.inline.max.delta.commits?" in msg and "passthrough_keys" in msg


def test_options_passthrough_keys_let_an_unmodelled_key_through() -> None:
    (t,) = validate_tables(
        [
            {
                "name": "trips",
                "base_path": "/data/trips",
                "passthrough_keys": ["hoodie.my.site.setting"],
                "clean_options": {"hoodie.my.site.setting": 1, "hoodie.clean.automatic": False},
            }
        ],
        where="x.yaml",
    )
    assert t.clean_options == {"hoodie.my.site.setting": "1", "hoodie.clean.automatic": "false"}
    assert t.clean_config().commits_retained == 10
    with pytest.raises(HudiConfigError, match=r"passthrough_keys: expected Hudi keys \(hoodie\.\*\)"):
        validate_tables([{"name": "t", "base_path": "/d", "passthrough_keys": ["spark.x"]}], where="x.yaml")


def test_heartbeat_fields_are_the_hoodie_client_heartbeat_keys_of_every_service() -> None:
    """One source of the heartbeat settings: the table's fields are laid into every service's options (the services
    beat by them, the stale-write sensor judges by them); the key in an options map works too; both must agree."""
    cfg = HudiTableConfig(name="t", base_path="/tmp/t", heartbeat_interval_ms=10_000)
    assert cfg.service_options("clean")["hoodie.client.heartbeat.interval_in_ms"] == "10000"
    assert cfg.heartbeat_config().interval_ms == 10_000 and cfg.heartbeat_config().tolerable_misses == 2
    assert cfg.clean_config().heartbeat.interval_ms == 10_000
    assert cfg.rollback_config().heartbeat.interval_ms == 10_000
    keyed = HudiTableConfig(
        name="t", base_path="/tmp/t", compaction_options={"hoodie.client.heartbeat.tolerable.misses": 5}
    )
    assert keyed.heartbeat_config().tolerable_misses == 5 and keyed.heartbeat_config().interval_ms == 60_000
    assert HudiTableConfig(name="t", base_path="/tmp/t").heartbeat_config().expiry_ms == 120_000
    with pytest.raises(
        HudiConfigError, match=r"heartbeat_interval_ms=10000 and hoodie\.client\.heartbeat\.interval_in_ms=5"
    ):
        validate_tables(
            [
                {
                    "name": "t",
                    "base_path": "/tmp/t",
                    "heartbeat_interval_ms": 10_000,
                    "clean_options": {"hoodie.client.heartbeat.interval_in_ms": 5},
                }
            ],
            where="lake.yaml",
        )
