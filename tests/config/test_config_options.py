"""The config registry (``config/keys.py``) and its one parser (``config/options.py``): every typed config is
built from Hudi's keys the same way, and a bad value names the key, the raw value and what was expected."""

from __future__ import annotations

import dataclasses
import logging
import re

import pytest

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.config.options import (
    HeartbeatConfig,
    option,
    option_specs,
    parse_options,
)
from lake_orchestration.errors import InvalidOptionError
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.archive.config import ArchiveConfig
from lake_orchestration.hudi.services.clean.config import CleanConfig, CleaningPolicy
from lake_orchestration.hudi.services.compaction.config import CompactionConfig, CompactionStrategyName
from lake_orchestration.hudi.services.rollback.config import RollbackConfig
from lake_orchestration.hudi.table.lock import IN_PROCESS_LOCK_PROVIDER, LockConfig
from lake_orchestration.hudi.write.base_file import ParquetWriteConfig
from lake_orchestration.hudi.write.options import WriteOptions

CONFIGS = [
    CompactionConfig,
    CleanConfig,
    ArchiveConfig,
    RollbackConfig,
    LockConfig,
    ParquetWriteConfig,
    HeartbeatConfig,
    WriteOptions,
]


@pytest.mark.parametrize("cls", CONFIGS, ids=lambda c: c.__name__)
def test_config_defaults_equal_registry_defaults_parsed(cls: type) -> None:
    """A field's default is its key's registry default, parsed (the registry documents what the code does)."""
    defaults = {f.name: f.default for f in dataclasses.fields(cls)}
    for attr, spec in option_specs(cls).items():
        if spec.key.default is None or defaults[attr] is None:
            continue
        parsed = parse_options(cls, {spec.key.key: spec.key.default})
        assert getattr(parsed, attr) == defaults[attr], (cls.__name__, attr, spec.key.key, spec.key.default)


def test_parse_options_absent_keys_keep_defaults_given_keys_parsed() -> None:
    cfg = CompactionConfig.from_options(
        {
            HoodieKey.COMPACTION_STRATEGY.key: "org.apache.hudi.table.action.compact.strategy.UnBoundedCompaction"
            "Strategy",
            HoodieKey.PARQUET_COMPRESSION_CODEC.key: "ZSTD",
            HoodieKey.PARQUET_DICTIONARY_ENABLED.key: " False ",
            HoodieKey.COMPACT_MAX_DELTA_COMMITS.key: " 7 ",
        }
    )
    assert cfg.strategy is CompactionStrategyName.UNBOUNDED
    assert (cfg.compression, cfg.dictionary_enabled, cfg.max_delta_commits) == ("zstd", False, 7)
    assert cfg.target_io_mb == CompactionConfig().target_io_mb


def test_parse_options_enum_by_name_any_case_and_overrides_win() -> None:
    cfg = CleanConfig.from_options({HoodieKey.CLEANER_POLICY.key: "keep_latest_by_hours"}, commits_retained=4)
    assert cfg.policy is CleaningPolicy.KEEP_LATEST_BY_HOURS and cfg.commits_retained == 4


def test_parse_options_alias_read_when_key_absent_or_blank() -> None:
    opts = WriteOptions.from_hudi_options(
        {
            HoodieKey.TABLE_NAME.key: "",
            "hoodie.datasource.write.table.name": "t",
            "hoodie.table.type": "COPY_ON_WRITE",
            "hoodie.table.recordkey.fields": "a, b",
        }
    )
    assert (opts.table_name, opts.table_type, opts.record_key_fields) == ("t", TableType.COPY_ON_WRITE, ("a", "b"))
    # the key itself wins over its alias
    both = {HoodieKey.WRITE_TABLE_TYPE.key: "MERGE_ON_READ", "hoodie.table.type": "COPY_ON_WRITE"}
    assert WriteOptions.from_hudi_options(both).table_type is TableType.MERGE_ON_READ


def test_parse_options_deprecated_name_read_last_with_warning(caplog: pytest.LogCaptureFixture) -> None:
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Formats:
        base: str = option(HoodieKey.BASE_FILE_FORMAT, "PARQUET")

    (old,) = HoodieKey.BASE_FILE_FORMAT.deprecated
    with caplog.at_level(logging.WARNING, logger="lake_orchestration.config.options"):
        assert parse_options(Formats, {old: "ORC"}).base == "ORC"
    assert old in caplog.text and HoodieKey.BASE_FILE_FORMAT.key in caplog.text
    assert parse_options(Formats, {old: "ORC", HoodieKey.BASE_FILE_FORMAT.key: "HFILE"}).base == "HFILE"


BAD = [
    (CompactionConfig, HoodieKey.COMPACT_MAX_DELTA_COMMITS, "-1", "compaction", "an integer >= 0"),
    (CompactionConfig, HoodieKey.COMPACTION_STRATEGY, "Fastest", "compaction", "one of LogFileSizeBased"),
    (CompactionConfig, HoodieKey.COMPACT_TRIGGER_STRATEGY, "sometimes", "compaction", "one of NUM_COMMITS"),
    (CompactionConfig, HoodieKey.PARQUET_BLOCK_SIZE, "0", "compaction", "an integer >= 1"),
    (CompactionConfig, HoodieKey.METADATA_ENABLE, "yes", "compaction", "true or false"),
    (CleanConfig, HoodieKey.CLEANER_FILEVERSIONS_RETAINED, "abc", "clean", "an integer >= 1"),
    (CleanConfig, HoodieKey.HEARTBEAT_INTERVAL_MS, "0", "clean", "an integer >= 1"),
    (ArchiveConfig, HoodieKey.KEEP_MIN_COMMITS, "1.5", "archive", "an integer >= 0"),
    (ArchiveConfig, HoodieKey.ARCHIVE_MERGE_ENABLE, "1", "archive", "true or false"),
    (LockConfig, HoodieKey.LOCK_PROVIDER, "ZookeeperBasedLockProvider", "", "org.apache.hudi.client"),
    (LockConfig, HoodieKey.LOCK_HEARTBEAT_INTERVAL_MS, "0", "", "an integer >= 1"),
    (WriteOptions, HoodieKey.WRITE_TABLE_TYPE, "MOR", "write", "one of COPY_ON_WRITE, MERGE_ON_READ"),
    (WriteOptions, HoodieKey.PARQUET_SMALL_FILE_LIMIT, "", "write", "an integer >= 0"),
]


@pytest.mark.parametrize(("cls", "key", "raw", "service", "expected"), BAD, ids=[f"{b[1].name}={b[2]}" for b in BAD])
def test_parse_options_bad_value_error_names_service_key_value_expectation(
    cls: type, key: HoodieKey, raw: str, service: str, expected: str
) -> None:
    build = getattr(cls, "from_hudi_options", None) or cls.from_options
    with pytest.raises(InvalidOptionError) as err:
        build({key.key: raw})
    what = f"Invalid {service} option" if service else "Invalid option"
    # a value that parses but is out of range is named as parsed (key=0), any other as given (key='abc')
    shown = int(raw) if raw.lstrip("-").isdigit() and expected.startswith("an integer") else repr(raw)
    assert str(err.value).startswith(f"{what} {key.key}={shown}: expected {expected}"), str(err.value)


@pytest.mark.parametrize(
    ("cls", "field", "value", "key"),
    [
        (CompactionConfig, "target_io_mb", -5, HoodieKey.COMPACTION_TARGET_IO),
        (CleanConfig, "max_commits", 0, HoodieKey.CLEAN_MAX_COMMITS),
        (ArchiveConfig, "min_commits", -1, HoodieKey.KEEP_MIN_COMMITS),
        (LockConfig, "tolerable_misses", 0, HoodieKey.HEARTBEAT_TOLERABLE_MISSES),
        (HeartbeatConfig, "interval_ms", 0, HoodieKey.HEARTBEAT_INTERVAL_MS),
        (WriteOptions, "max_file_size", 0, HoodieKey.PARQUET_MAX_FILE_SIZE),
    ],
)
def test_config_constructed_below_minimum_refused_naming_key(cls: type, field: str, value: int, key: HoodieKey) -> None:
    with pytest.raises(InvalidOptionError, match=rf"{re.escape(key.key)}={value}: expected an integer >= "):
        cls(**{field: value})


def test_compaction_rollback_config_keeps_lock_heartbeat_and_metadata_setting() -> None:
    cfg = CompactionConfig.from_options(
        {
            HoodieKey.LOCK_WAIT_TIME_MS.key: "5",
            HoodieKey.HEARTBEAT_INTERVAL_MS.key: "700",
            HoodieKey.HEARTBEAT_TOLERABLE_MISSES.key: "3",
            HoodieKey.METADATA_ENABLE.key: "false",
        }
    )
    rb = cfg.rollback_config()
    assert (rb.lock, rb.heartbeat.interval_ms, rb.heartbeat.tolerable_misses, rb.metadata_enable) == (
        cfg.lock,
        700,
        3,
        False,
    )


def test_lock_config_short_provider_name_and_round_trip_through_options() -> None:
    cfg = LockConfig.from_options(
        {HoodieKey.LOCK_PROVIDER.key: "inprocesslockprovider", HoodieKey.LOCK_WAIT_TIME_MS.key: "5"}
    )
    assert (cfg.provider, cfg.wait_time_ms) == (IN_PROCESS_LOCK_PROVIDER, 5)
    assert LockConfig.from_options(cfg.to_options()) == cfg


# -- unknown keys (the user's first hour: a typo must not silently keep the default) -------------------------------
def test_check_option_keys_refuses_a_typo_with_the_closest_key_and_the_escape() -> None:
    from lake_orchestration.config.options import check_option_keys
    from lake_orchestration.errors import UnknownOptionError

    typo = HoodieKey.COMPACT_MAX_DELTA_COMMITS.key[:-1]  # ...max.delta.commit
    with pytest.raises(UnknownOptionError) as err:
        check_option_keys({typo: "1"}, source="--option", escape="--option-passthrough KEY=VALUE")
    msg = str(err.value)
    assert f"'{typo}'" in msg and "--option" in msg and "--option-passthrough KEY=VALUE" in msg
    assert f"did you mean {HoodieKey.COMPACT_MAX_DELTA_COMMITS.key}?" in msg
    assert isinstance(err.value, InvalidOptionError)  # exits 1 and fails Dagster steps without retries, as bad values


def test_check_option_keys_accepts_registry_aliases_unmodelled_passthrough_and_non_hudi_keys() -> None:
    from lake_orchestration.config.keys import UNMODELLED_KEYS
    from lake_orchestration.config.options import check_option_keys
    from lake_orchestration.errors import UnknownOptionError

    ok = {m_key: "x" for m in HoodieKey for m_key in m.lookup_keys}
    ok.update(dict.fromkeys(UNMODELLED_KEYS, "x"))
    ok["compaction.max_memory"] = "100"  # Flink's name, read by compaction; not a hoodie.* key
    check_option_keys(ok, source="--option", escape="E")
    check_option_keys({"hoodie.my.custom": "1"}, source="s", escape="E", passthrough={"hoodie.my.custom"})
    with pytest.raises(
        UnknownOptionError, match=r"'HOODIE\.cleaner\.policy' \(did you mean hoodie\.cleaner\.policy\?\)"
    ):
        check_option_keys({"HOODIE.cleaner.policy": "x"}, source="s", escape="E")  # Hudi's keys are case-sensitive
    with pytest.raises(UnknownOptionError) as err:
        check_option_keys({"hoodie.zzz": "1", "hoodie.cleaner.commit.retained": "2"}, source="s", escape="E")
    assert "Unknown Hudi options 'hoodie.zzz', 'hoodie.cleaner.commit.retained'" in str(err.value)
    assert "did you mean hoodie.cleaner.commits.retained?" in str(err.value)
    assert "'hoodie.zzz' (did you mean" not in str(err.value)  # no hint when nothing is close
