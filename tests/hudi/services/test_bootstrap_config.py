"""Bootstrap options: the mode selectors as Hudi names them, and invalid values named with their key."""

from __future__ import annotations

import pytest

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.errors import InvalidOptionError
from lake_orchestration.hudi.services.bootstrap import BootstrapConfig, BootstrapMode, ModeSelector

SELECTOR = HoodieKey.BOOTSTRAP_MODE_SELECTOR.key
REGEX = HoodieKey.BOOTSTRAP_MODE_SELECTOR_REGEX.key
REGEX_MODE = HoodieKey.BOOTSTRAP_MODE_SELECTOR_REGEX_MODE.key


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("org.apache.hudi.client.bootstrap.selector.MetadataOnlyBootstrapModeSelector", ModeSelector.METADATA_ONLY),
        ("FullRecordBootstrapModeSelector", ModeSelector.FULL_RECORD),
        ("REGEX", ModeSelector.REGEX),
    ],
)
def test_bootstrap_config_selector_class_or_short_name_parsed(raw: str, expected: ModeSelector) -> None:
    assert BootstrapConfig.from_options({SELECTOR: raw}).mode_selector is expected


def test_bootstrap_config_defaults_are_hudis() -> None:
    cfg = BootstrapConfig.from_options({})
    assert cfg.mode_selector is ModeSelector.METADATA_ONLY
    assert (cfg.selector_regex, cfg.regex_mode) == (".*", BootstrapMode.METADATA_ONLY)
    assert cfg.mode_of("dt=2024-01-01") is BootstrapMode.METADATA_ONLY
    assert BootstrapConfig.from_options(cfg.to_options()).to_options() == cfg.to_options()


def test_bootstrap_config_regex_selector_matches_whole_path_else_other_mode() -> None:
    cfg = BootstrapConfig.from_options({SELECTOR: "BootstrapRegexModeSelector", REGEX: "dt=2024-0[1-3].*"})
    assert cfg.mode_of("dt=2024-02-01") is BootstrapMode.METADATA_ONLY
    assert cfg.mode_of("dt=2024-04-01") is BootstrapMode.FULL_RECORD
    # Java's Pattern.matcher(p).matches(): a match of part of the path does not count
    partial = BootstrapConfig.from_options(
        {SELECTOR: "BootstrapRegexModeSelector", REGEX: "dt=2024", REGEX_MODE: "FULL_RECORD"}
    )
    assert partial.mode_of("dt=2024-01-01") is BootstrapMode.METADATA_ONLY
    assert partial.mode_of("dt=2024") is BootstrapMode.FULL_RECORD


@pytest.mark.parametrize(
    ("key", "raw"),
    [(SELECTOR, "NoSuchSelector"), (REGEX, "dt=(2024"), (REGEX_MODE, "HALF_RECORD")],
)
def test_bootstrap_config_invalid_value_error_names_key_and_value(key: str, raw: str) -> None:
    with pytest.raises(InvalidOptionError) as err:
        BootstrapConfig.from_options({key: raw})
    assert key in str(err.value) and raw in str(err.value)
