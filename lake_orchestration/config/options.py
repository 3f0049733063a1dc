"""The one parser of option values given under Hudi's key names (``--option key=value``, Dagster ``options:``).

Typed configs declare each field with :func:`option` (its :class:`HoodieKey`, lower bound and parser) and are
built from a raw option map by :func:`parse_options`, so a bad value always fails the same way, before anything is
written: an :class:`~lake_orchestration.errors.InvalidOptionError` naming the key, the raw value and what was
expected (``Invalid clean option hoodie.cleaner.fileversions.retained='abc': expected an integer >= 1``; a number
below the minimum is named as parsed: ``...retained=0: expected an integer >= 1``). A key missing
from the map keeps the field's default (Hudi's); an invalid value never falls back to it. A key's aliases are read
when it has no value; a deprecated name is read last and logged. Mirrors Java's ``HoodieConfig.getInt`` /
``getBoolean`` / ``ConfigUtils.getRawValueWithAltKeys``, but refuses what Java would silently read as ``false``.
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import functools
import logging
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from lake_orchestration.config.keys import HOODIE_PREFIX, HoodieKey, is_known_key, known_key_strings
from lake_orchestration.errors import InvalidOptionError, UnknownOptionError

log = logging.getLogger(__name__)

T = TypeVar("T")
E = TypeVar("E", bound=enum.Enum)

_SPEC = "hoodie_option"
"""Field-metadata key of an :class:`OptionSpec`."""


def invalid_option(key: str, raw: object, expected: str, *, service: str = "") -> InvalidOptionError:
    """The error of a bad value: ``Invalid <service> option <key>=<raw!r>: expected <expected>``."""
    what = f"Invalid {service} option" if service else "Invalid option"
    return InvalidOptionError(f"{what} {key}={raw!r}: expected {expected}")


def parse_int_option(key: str, raw: object, *, minimum: int = 0, service: str = "") -> int:
    """``raw`` as an integer >= ``minimum`` (surrounding spaces allowed).

    Raises:
        InvalidOptionError: not an integer (``abc``, ``1.5``, empty), or below ``minimum``.
    """
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise invalid_option(key, raw, f"an integer >= {minimum}", service=service) from None
    if value < minimum:  # named by its value: key=0, as a typed config built with 0 reports it
        raise invalid_option(key, value, f"an integer >= {minimum}", service=service)
    return value


def parse_bool_option(key: str, raw: object, *, service: str = "") -> bool:
    """``raw`` as a boolean: ``true`` or ``false`` (any case), as Java's ``Boolean.parseBoolean`` would need; any
    other value is an error instead of Java's silent ``false``.

    Raises:
        InvalidOptionError: neither ``true`` nor ``false``.
    """
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        raise invalid_option(key, raw, "true or false", service=service)
    return text == "true"


def parse_enum_option(key: str, raw: object, enum_type: type[E], *, service: str = "") -> E:
    """``raw`` as a member of a ``str`` enum, by value or name, in any case (``keep_latest_commits``); an enum
    with a ``parse(str)`` classmethod (short Java class names) is parsed by it.

    Raises:
        InvalidOptionError: no such member; the message lists the accepted values.
    """
    text = str(raw).strip()
    custom = getattr(enum_type, "parse", None)
    if custom is not None:
        try:
            return typing.cast(E, custom(text))
        except (ValueError, InvalidOptionError):
            pass
    else:
        for m in enum_type:
            if text.upper() in (str(m.value).upper(), m.name):
                return m
    raise invalid_option(key, raw, "one of " + ", ".join(str(m.value) for m in enum_type), service=service)


# -- unknown keys -----------------------------------------------------------------------------------------------------
def suggest_key(key: str) -> str | None:
    """The known key string closest to ``key`` (difflib, ratio >= 0.8), or None."""
    close = difflib.get_close_matches(key.strip().lower(), known_key_strings(), n=1, cutoff=0.8)
    return close[0] if close else None


def check_option_keys(
    options: Mapping[str, object], *, source: str, escape: str, passthrough: frozenset[str] | set[str] = frozenset()
) -> None:
    """Refuse every ``hoodie.*`` key of ``options`` (any case) that is not known (:func:`is_known_key`) and not in
    ``passthrough``: such a key is read by nothing, so a typo would silently keep Hudi's default. Keys outside
    ``hoodie.*`` are left alone (other engines' names, such as Flink's ``compaction.max_memory``).

    Args:
        options: the raw option map.
        source: where the keys were given, for the message (``--option``, ``clean_options of table 'trips'``).
        escape: how to pass an unmodelled key on purpose, for the message.
        passthrough: keys accepted without being known.

    Raises:
        UnknownOptionError: naming each unknown key, ``source``, the closest known key and ``escape``.
    """
    unknown = [
        k
        for k in options
        if isinstance(k, str)
        and k.strip().lower().startswith(HOODIE_PREFIX)
        and not is_known_key(k.strip())
        and k.strip() not in passthrough
    ]
    if not unknown:
        return
    parts = []
    for k in unknown:
        hint = suggest_key(k)
        parts.append(f"{k!r}" + (f" (did you mean {hint}?)" if hint else ""))
    noun = "option" if len(unknown) == 1 else "options"
    raise UnknownOptionError(
        f"Unknown Hudi {noun} {', '.join(parts)} in {source}: nothing here reads it, so it would be silently "
        f"ignored; expected a key of docs/reference/config-keys.md, or pass a key lake_orchestration does not model "
        f"on purpose with {escape}"
    )


# -- typed configs declared over the registry -----------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class OptionSpec:
    """How one config field is read: the key, and what a valid value is."""

    key: HoodieKey
    """The registry entry (key string, aliases)."""
    minimum: int | None = None
    """Lowest accepted integer (checked at parse time and on construction); None for non-integers."""
    parse: Callable[[str], Any] | None = None
    """Parser of the stripped raw string (raising ``ValueError``); None = by the field's type."""
    expected: str = ""
    """What ``parse`` accepts, for the error message."""


def option(
    key: HoodieKey,
    default: Any = dataclasses.MISSING,
    *,
    default_factory: Any = dataclasses.MISSING,
    minimum: int | None = None,
    parse: Callable[[str], Any] | None = None,
    expected: str = "",
) -> Any:
    """A dataclass field read from ``key`` by :func:`parse_options` (use as ``x: int = option(HoodieKey.X, 5)``)."""
    spec = OptionSpec(key=key, minimum=minimum, parse=parse, expected=expected)
    if default_factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=default_factory, metadata={_SPEC: spec})
    return dataclasses.field(default=default, metadata={_SPEC: spec})


def option_specs(cls: type) -> dict[str, OptionSpec]:
    """Field name -> :class:`OptionSpec` of the fields of ``cls`` declared with :func:`option`."""
    return {f.name: f.metadata[_SPEC] for f in dataclasses.fields(cls) if _SPEC in f.metadata}


def lookup(options: Mapping[str, object], key: HoodieKey) -> tuple[str, str] | None:
    """``(key string, raw value)`` of the first of ``key``'s names with a non-blank value in ``options``; the key
    itself with its blank value when only blank values are given; None when none is given."""
    blank: tuple[str, str] | None = None
    for name in key.lookup_keys:
        if name not in options or options[name] is None:
            continue
        raw = str(options[name])
        if not raw.strip():
            blank = blank or (name, raw)
            continue
        if name in key.deprecated:
            log.warning("Option %s is deprecated: use %s", name, key.key)
        return name, raw
    return blank


def _parse_field(tp: Any, spec: OptionSpec, name: str, raw: str, service: str) -> Any:
    text = raw.strip()
    if spec.parse is not None:
        try:
            return spec.parse(text)
        except (ValueError, KeyError):
            raise invalid_option(name, raw, spec.expected or "a valid value", service=service) from None
    if tp is bool:
        return parse_bool_option(name, raw, service=service)
    if tp is int:
        return parse_int_option(name, raw, minimum=spec.minimum or 0, service=service)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return parse_enum_option(name, raw, tp, service=service)
    if tp == tuple[str, ...]:
        return tuple(x.strip() for x in text.split(",") if x.strip())
    return text or None


def _field_type(tp: Any) -> Any:
    """``X`` of ``X | None``."""
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if type(None) in typing.get_args(tp) and len(args) == 1:
        return args[0]
    return tp


@functools.cache
def _type_hints(cls: type) -> dict[str, Any]:
    """``typing.get_type_hints(cls)``, once per class (it evaluates every annotation: ~1 ms a call, and a fleet's
    code location parses the options of each of its tables)."""
    return typing.get_type_hints(cls)


def parse_options(cls: type[T], options: Mapping[str, object] | None, /, *, service: str = "", **overrides: Any) -> T:
    """Build the config ``cls`` from a raw option map: each :func:`option` field whose key (or alias) is given is
    parsed, the others keep their defaults, ``overrides`` (typed values) win over both.

    Raises:
        InvalidOptionError: a value that does not parse or is out of range, naming the key and the raw value.
    """
    opts = options or {}
    hints = _type_hints(cls)
    kw: dict[str, Any] = {}
    for attr, spec in option_specs(cls).items():
        if attr in overrides:
            continue
        found = lookup(opts, spec.key)
        if found is None:
            continue
        name, raw = found
        value = _parse_field(_field_type(hints[attr]), spec, name, raw, service)
        if spec.minimum is not None and value < spec.minimum:
            raise invalid_option(name, value, f"an integer >= {spec.minimum}", service=service)
        if value is not None:
            kw[attr] = value
    kw.update(overrides)
    return cls(**kw)


def check_minimums(config: object, *, service: str = "") -> None:
    """Refuse a constructed config whose integer field is below its :func:`option` minimum (a typed value given
    directly, not parsed), naming the key and the value.

    Raises:
        InvalidOptionError: the first such field.
    """
    for attr, spec in option_specs(type(config)).items():
        value = getattr(config, attr)
        if spec.minimum is not None and isinstance(value, int) and value < spec.minimum:
            raise invalid_option(spec.key.key, value, f"an integer >= {spec.minimum}", service=service)


# -- heartbeats ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class HeartbeatConfig:
    """Writer heartbeats (``HoodieWriteConfig``'s ``hoodie.client.heartbeat.*``): a process running an instant
    refreshes ``.hoodie/.heartbeat/<instant>`` every ``interval_ms``; another process treats the instant as
    abandoned once the heartbeat is older than ``expiry_ms``."""

    interval_ms: int = option(HoodieKey.HEARTBEAT_INTERVAL_MS, 60_000, minimum=1)
    """``hoodie.client.heartbeat.interval_in_ms`` (>= 1: 0 would judge every live attempt stale)."""
    tolerable_misses: int = option(HoodieKey.HEARTBEAT_TOLERABLE_MISSES, 2, minimum=1)
    """``hoodie.client.heartbeat.tolerable.misses``."""

    def __post_init__(self) -> None:
        check_minimums(self)

    @property
    def expiry_ms(self) -> int:
        """Age after which a heartbeat is stale: interval x tolerable misses."""
        return self.interval_ms * self.tolerable_misses

    @classmethod
    def from_options(cls, options: Mapping[str, object] | None, *, service: str = "") -> HeartbeatConfig:
        """Parse the heartbeat keys of an option map (Hudi's defaults 60000 and 2).

        Raises:
            InvalidOptionError: a value that is not an integer >= 1 (the message names the key and the value).
        """
        return parse_options(cls, options, service=service)
