"""One typed model of the storage options, which the CLI, Dagster and Airflow all parse into.

The options are those of :class:`~lake_orchestration.io.storage.Storage`: the ``pyarrow.fs`` constructors' own
(``S3FileSystem``, ``GcsFileSystem``, ``HadoopFileSystem``) plus this project's ``conditional_put``. Every shell gets
them in its own form -- the command line as ``KEY=VALUE`` strings, a YAML file or a Dagster config as typed scalars,
an Airflow connection's extra as JSON (and its login/password) -- and :func:`parse_storage_options` turns each into
the same :class:`StorageOptions`: the value each option's type wants (:data:`OPTION_TYPES`), so ``anonymous:
"true"`` from Airflow is the boolean ``True`` as from the CLI, ``replication: "3"`` an integer,
``credential_token_expiration`` the ``datetime`` pyarrow requires, ``extra_conf`` a mapping of strings.

Secrets (:func:`is_secret_key`: ``access_key``, ``secret_key``, ``session_token``, ``access_token`` ...) are kept as
given and never shown: the repr masks them and no error message includes any option's value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any

from lake_orchestration.errors import InvalidOptionError

MASK = "***"
"""What a secret value is shown as."""

_SECRET_NAME = re.compile(
    r"secret|passw|(^|_)token$|session_token|access_token|access_key|private_key|account_key|sas_key|"
    r"service_account_key|credentials?_json|client_secret",
    re.IGNORECASE,
)


def is_secret_key(key: str) -> bool:
    """True if a storage option's name says it holds a secret (``secret_key``, ``access_key``, ``session_token``,
    ``access_token``, ``aws_secret_access_key``, ``password`` ...). ``credential_token_expiration`` is not one."""
    return bool(_SECRET_NAME.search(key.strip()))


BOOL_OPTIONS = frozenset(
    {
        "anonymous",
        "force_virtual_addressing",
        "allow_bucket_creation",
        "allow_bucket_deletion",
        "background_writes",
        "check_directory_existence_before_creation",
        "allow_delayed_open",
    }
)
"""Options pyarrow takes as booleans."""
INT_OPTIONS = frozenset({"replication", "buffer_size", "default_block_size", "load_frequency"})
"""Options pyarrow takes as integers."""
FLOAT_OPTIONS = frozenset({"connect_timeout", "request_timeout"})
"""Options pyarrow takes as numbers of seconds."""
DATETIME_OPTIONS = frozenset({"credential_token_expiration"})
"""Options pyarrow takes as a ``datetime`` (given as ISO 8601 text)."""
MAPPING_OPTIONS = frozenset({"extra_conf"})
"""Options pyarrow takes as a mapping of strings (HDFS's extra Hadoop configuration)."""

OPTION_TYPES: Mapping[str, type] = {
    **dict.fromkeys(BOOL_OPTIONS, bool),
    **dict.fromkeys(INT_OPTIONS, int),
    **dict.fromkeys(FLOAT_OPTIONS, float),
    **dict.fromkeys(DATETIME_OPTIONS, datetime),
    **dict.fromkeys(MAPPING_OPTIONS, dict),
}
"""The type of each option that is not a string. Every other option is a string, or a boolean when given as
``true``/``false`` (the command line's rule; ``conditional_put`` takes ``auto``, ``true``, ``false`` or a boolean:
:func:`~lake_orchestration.io.object_store.conditional_put_mode`)."""

_BOOL_WORDS = {"true": True, "false": False}
_BOOL_OPTION_WORDS = {**_BOOL_WORDS, "1": True, "yes": True, "on": True, "0": False, "no": False, "off": False}
"""What a boolean option accepts as text (as :func:`~lake_orchestration.io.object_store.conditional_put_mode`)."""


def _bad(source: str, key: str, expected: str) -> InvalidOptionError:
    where = f"{source}: " if source else ""
    return InvalidOptionError(f"{where}{key}: expected {expected} (value not shown)")


def _option_value(key: str, value: Any, *, source: str) -> Any:
    """``value`` of option ``key`` as its type wants it; text is parsed (``"true"`` -> True, ``"3"`` -> 3)."""
    if isinstance(value, datetime) and key in DATETIME_OPTIONS:
        return value
    if key in MAPPING_OPTIONS:
        if isinstance(value, str):  # JSON text (a command line, an environment variable)
            try:
                value = json.loads(value)
            except ValueError:
                raise _bad(source, key, "a mapping of names to values (a JSON object as text)") from None
        if not isinstance(value, Mapping):
            raise _bad(source, key, "a mapping of names to values")
        return {str(k): str(v) for k, v in value.items()}
    if isinstance(value, Mapping) or isinstance(value, list | tuple | set):
        raise _bad(source, key, "a string, number or boolean")
    kind = OPTION_TYPES.get(key)
    if isinstance(value, str):
        text = value.strip()
        if kind is bool and text.lower() in _BOOL_OPTION_WORDS:
            return _BOOL_OPTION_WORDS[text.lower()]
        if text.lower() in _BOOL_WORDS:  # any option: the command line's rule
            if kind in (int, float, datetime):
                raise _bad(source, key, _EXPECTED[kind])
            return _BOOL_WORDS[text.lower()]
        try:
            if kind is int:
                return int(text)
            if kind is float:
                return float(text)
            if kind is datetime:
                return datetime.fromisoformat(text)
        except ValueError:
            raise _bad(source, key, _EXPECTED[kind]) from None
        if kind is bool:
            raise _bad(source, key, _EXPECTED[bool])
        return value
    if isinstance(value, bool):
        if kind in (int, float, datetime):
            raise _bad(source, key, _EXPECTED[kind])
        return value
    if isinstance(value, int | float):
        if kind is int:
            if isinstance(value, float) and not value.is_integer():
                raise _bad(source, key, _EXPECTED[int])
            return int(value)
        if kind is float:
            return float(value)
        if kind is None:  # a number where the store wants a string (an all-digit access key, a numeric region)
            return str(value)
        raise _bad(source, key, _EXPECTED[kind])
    if value is None:
        raise _bad(source, key, "a value")
    raise _bad(source, key, "a string, number or boolean")


_EXPECTED: dict[type | None, str] = {
    bool: "true or false",
    int: "an integer",
    float: "a number",
    datetime: "an ISO 8601 date-time, e.g. 2030-01-01T00:00:00+00:00",
}


class StorageOptions(Mapping[str, Any]):
    """Storage options, each as its type wants it (:data:`OPTION_TYPES`): what
    :class:`~lake_orchestration.io.storage.Storage` and :class:`~lake_orchestration.hudi.table.HudiTable` take as
    ``storage_options`` (a read-only mapping; :meth:`to_dict` for a plain dict). Secret values never show in the
    repr. Build it with :func:`parse_storage_options`."""

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        self._values: dict[str, Any] = dict(values or {})

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StorageOptions):
            return self._values == other._values
        if isinstance(other, Mapping):
            return self._values == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = {k: (MASK if is_secret_key(k) else v) for k, v in self._values.items()}
        return f"StorageOptions({shown!r})"

    def to_dict(self) -> dict[str, Any]:
        """A plain dict of the options (secrets included: never log it)."""
        return dict(self._values)

    def secrets(self) -> set[str]:
        """The values of the secret options (to mask them in messages)."""
        return {str(v) for k, v in self._values.items() if is_secret_key(k)}

    def merged(self, other: Mapping[str, Any]) -> StorageOptions:
        """These options with ``other``'s (already typed) on top."""
        return StorageOptions({**self._values, **other})


def parse_storage_options(
    raw: Mapping[str, Any] | None, *, source: str = "", secrets: Mapping[str, Any] | None = None
) -> StorageOptions:
    """The typed options of ``raw`` (text, as the command line and an Airflow extra give them, or typed scalars, as
    a YAML file or a Dagster config does): each option as :data:`OPTION_TYPES` wants it; an option not listed there
    keeps a string (a number becomes its text, ``true``/``false`` a boolean). ``secrets``: options from a secret
    source (an Airflow connection's login/password, environment variables), added last without a type check beyond
    being text. ``None`` values are left out (an unset config field).

    Raises:
        InvalidOptionError: an empty key, a value that does not parse as its option's type, a list or mapping where
            a scalar belongs; the message names ``source`` and the key, never the value.
    """
    out: dict[str, Any] = {}
    for k, v in (raw or {}).items():
        if not isinstance(k, str) or not k.strip():
            where = f"{source}: " if source else ""
            raise InvalidOptionError(f"{where}storage option names must be non-empty strings")
        if v is None:
            continue
        key = k.strip()
        out[key] = _option_value(key, v, source=source)
    for k, v in (secrets or {}).items():
        if v is None or v == "":
            continue
        if not isinstance(v, str):
            raise _bad(source, k, "a string")
        out[k] = v
    return StorageOptions(out)
