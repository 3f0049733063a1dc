"""Bootstrap options under Hudi's key names (``HoodieBootstrapConfig``): the source path, the mode selector and the
regex selector's settings, plus the write options of the new table (key fields, table type ...)."""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.config.options import option, parse_options
from lake_orchestration.hudi.write.options import WriteOptions

_SELECTOR_PACKAGE = "org.apache.hudi.client.bootstrap.selector."


class BootstrapMode(str, enum.Enum):
    """How a source partition is bootstrapped (Java ``BootstrapMode``)."""

    METADATA_ONLY = "METADATA_ONLY"
    """Skeleton base files holding only the meta columns; data columns stay in the source files."""
    FULL_RECORD = "FULL_RECORD"
    """The records rewritten into normal base files (a bulk insert)."""

    @property
    def other(self) -> BootstrapMode:
        return BootstrapMode.FULL_RECORD if self is BootstrapMode.METADATA_ONLY else BootstrapMode.METADATA_ONLY


class ModeSelector(str, enum.Enum):
    """``hoodie.bootstrap.mode.selector``: the Java selector class choosing each partition's mode."""

    METADATA_ONLY = _SELECTOR_PACKAGE + "MetadataOnlyBootstrapModeSelector"
    """Every partition METADATA_ONLY (Hudi's default)."""
    FULL_RECORD = _SELECTOR_PACKAGE + "FullRecordBootstrapModeSelector"
    """Every partition FULL_RECORD."""
    REGEX = _SELECTOR_PACKAGE + "BootstrapRegexModeSelector"
    """Partitions whose path matches ``hoodie.bootstrap.mode.selector.regex`` get ``...regex.mode``, the others
    the other mode."""

    @classmethod
    def parse(cls, text: str) -> ModeSelector:
        """A selector by class name, simple class name, or member name.

        Raises:
            ValueError: no such selector.
        """
        for m in cls:
            if text in (m.value, m.value.rsplit(".", 1)[1], m.name):
                return m
        raise ValueError(text)


def _regex(text: str) -> str:
    try:
        re.compile(text)
    except re.error as err:
        raise ValueError(text) from err
    return text


@dataclass(frozen=True, kw_only=True)
class BootstrapConfig:
    """Settings of one bootstrap (see :meth:`from_options`)."""

    source_path: str = option(HoodieKey.BOOTSTRAP_BASE_PATH, "")
    """``hoodie.bootstrap.base.path``: base path of the source parquet dataset (required)."""
    mode_selector: ModeSelector = option(HoodieKey.BOOTSTRAP_MODE_SELECTOR, ModeSelector.METADATA_ONLY)
    """``hoodie.bootstrap.mode.selector``."""
    selector_regex: str = option(
        HoodieKey.BOOTSTRAP_MODE_SELECTOR_REGEX, ".*", parse=_regex, expected="a valid regular expression"
    )
    """``hoodie.bootstrap.mode.selector.regex``: matched against the whole source partition path."""
    regex_mode: BootstrapMode = option(HoodieKey.BOOTSTRAP_MODE_SELECTOR_REGEX_MODE, BootstrapMode.METADATA_ONLY)
    """``hoodie.bootstrap.mode.selector.regex.mode``."""
    write: WriteOptions = field(default_factory=WriteOptions)
    """The new table's write options (name, record key, precombine and partition fields, table type, codec)."""

    def mode_of(self, partition: str) -> BootstrapMode:
        """The mode the selector gives the source partition ``partition`` (Java's ``select``)."""
        if self.mode_selector is ModeSelector.METADATA_ONLY:
            return BootstrapMode.METADATA_ONLY
        if self.mode_selector is ModeSelector.FULL_RECORD:
            return BootstrapMode.FULL_RECORD
        # BootstrapRegexModeSelector: Pattern.matcher(partition).matches(), a whole-path match
        return self.regex_mode if re.fullmatch(self.selector_regex, partition) else self.regex_mode.other

    def to_options(self) -> dict[str, str]:
        """The bootstrap's Hudi keys (``from_options(to_options())`` gives the same selector settings)."""
        return {
            HoodieKey.BOOTSTRAP_BASE_PATH.key: self.source_path,
            HoodieKey.BOOTSTRAP_MODE_SELECTOR.key: self.mode_selector.value,
            HoodieKey.BOOTSTRAP_MODE_SELECTOR_REGEX.key: self.selector_regex,
            HoodieKey.BOOTSTRAP_MODE_SELECTOR_REGEX_MODE.key: self.regex_mode.value,
        }

    @classmethod
    def from_options(cls, options: Mapping[str, str] | None = None, **overrides: Any) -> BootstrapConfig:
        """Parse Hudi keys (the bootstrap's and the write keys of the new table); ``overrides`` (typed values) win.

        Raises:
            InvalidOptionError: a value that does not parse, naming the key and the value.
        """
        opts = dict(options or {})
        overrides.setdefault("write", WriteOptions.from_hudi_options(opts))
        return parse_options(cls, opts, service="bootstrap", **overrides)
