"""Parsing of option values given under Hudi's key names (``--option key=value``, Dagster ``options:``).

Every service parses its integers and booleans here, so a bad value always fails the same way: an
:class:`~lake_orchestration.errors.InvalidOptionError` naming the key, the value and what was expected, raised
before anything is written.
"""

from __future__ import annotations

from collections.abc import Mapping

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.errors import InvalidOptionError


def parse_int_option(key: str, raw: object, *, minimum: int = 0, service: str = "") -> int:
    """``raw`` as an integer >= ``minimum`` (surrounding spaces allowed).

    Raises:
        InvalidOptionError: not an integer (``abc``, ``1.5``, empty), or below ``minimum``.
    """
    what = f"Invalid {service} option" if service else "Invalid option"
    text = str(raw).strip()
    try:
        value = int(text)
    except ValueError:
        raise InvalidOptionError(f"{what} {key}={raw!r}: expected an integer >= {minimum}") from None
    if value < minimum:
        raise InvalidOptionError(f"{what} {key}={raw!r}: expected an integer >= {minimum}")
    return value


def parse_bool_option(key: str, raw: object, *, service: str = "") -> bool:
    """``raw`` as a boolean: ``true`` or ``false`` (any case), as Java's ``Boolean.parseBoolean`` would need; any
    other value is an error instead of Java's silent ``false``.

    Raises:
        InvalidOptionError: neither ``true`` nor ``false``.
    """
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        what = f"Invalid {service} option" if service else "Invalid option"
        raise InvalidOptionError(f"{what} {key}={raw!r}: expected true or false")
    return text == "true"


def heartbeat_options(options: Mapping[str, object] | None, *, service: str = "") -> tuple[int, int]:
    """``(hoodie.client.heartbeat.interval_in_ms, hoodie.client.heartbeat.tolerable.misses)`` of an option map
    (Hudi's defaults 60000 and 2). Both must be >= 1: 0 would judge every live attempt stale.

    Raises:
        InvalidOptionError: a value that is not an integer >= 1 (the message names the key and the value).
    """
    opts = options or {}
    interval, misses = (
        parse_int_option(k.key, opts.get(k.key, k.default), minimum=1, service=service)
        for k in (HoodieKey.HEARTBEAT_INTERVAL_MS, HoodieKey.HEARTBEAT_TOLERABLE_MISSES)
    )
    return interval, misses
