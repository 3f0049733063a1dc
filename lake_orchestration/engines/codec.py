"""The one task codec: a typed task object (a dataclass of file slices, instant filters, merge configs, plain values)
as JSON text and back, driven by the dataclass's type hints.

An engine uses it where tasks must travel as data (a Spark DataFrame of tasks, for task sets too large for the task
closure). A field named ``storage_options`` is never encoded: it holds secrets, which an engine ships inside the
pickled task function instead (see :mod:`lake_orchestration.engines.spark`). Decoding gives it its default back.

Example:
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class T:
    ...     names: frozenset[str]
    ...     size: int | None = None
    >>> decode_value(T, json.loads(json.dumps(encode_value(T(frozenset({"b", "a"}), 3)))))
    T(names=frozenset({'a', 'b'}), size=3)
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import json
import types
import typing
from typing import Any

SECRET_FIELDS = frozenset({"storage_options"})
"""Fields never encoded (the engine ships them in the task function)."""


def encode_value(value: Any) -> Any:
    """``value`` as JSON-ready data: dataclasses as objects of their init fields (without :data:`SECRET_FIELDS`),
    sets sorted, tuples as lists, enums by value, ``str`` subclasses as plain strings."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: encode_value(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if f.init and f.name not in SECRET_FIELDS
        }
    if isinstance(value, enum.Enum):
        return encode_value(value.value)
    if isinstance(value, (frozenset, set)):
        return sorted(encode_value(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [encode_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): encode_value(v) for k, v in value.items()}
    if isinstance(value, str):
        return str(value)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    raise TypeError(f"Cannot encode a {type(value).__qualname__} in a task: {value!r:.80}")


def decode_value(tp: Any, data: Any) -> Any:
    """The value of type ``tp`` encoded as ``data`` by :func:`encode_value`."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if data is None and type(None) in args:
            return None
        last: Exception | None = None
        for arg in args:
            if arg is type(None):
                continue
            try:
                return decode_value(arg, data)
            except (TypeError, ValueError, KeyError) as err:
                last = err
        raise TypeError(f"{data!r:.80} is none of {tp}") from last
    if tp is Any or tp is object:
        return data
    if origin in (list, tuple, frozenset, set):
        args = typing.get_args(tp)
        item = args[0] if args else Any
        if origin is tuple and len(args) > 1 and args[1] is not Ellipsis:
            return tuple(decode_value(a, v) for a, v in zip(args, data, strict=True))
        return origin(decode_value(item, v) for v in data)
    if origin is dict:
        kt, vt = typing.get_args(tp) or (Any, Any)
        return {decode_value(kt, k): decode_value(vt, v) for k, v in data.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(data, dict):
            raise TypeError(f"{tp.__qualname__}: expected an object, got {data!r:.80}")
        hints = typing.get_type_hints(tp)
        kwargs = {
            f.name: decode_value(hints[f.name], data[f.name])
            for f in dataclasses.fields(tp)
            if f.init and f.name in data
        }
        return tp(**kwargs)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return tp(data)
    if tp is float and isinstance(data, (int, float)) and not isinstance(data, bool):
        return float(data)
    if tp is bool and isinstance(data, bool):
        return data
    if tp is int and isinstance(data, int) and not isinstance(data, bool):
        return data
    if isinstance(tp, type) and issubclass(tp, str) and isinstance(data, str):
        return data if tp is str else tp(data)  # e.g. InstantTime, validated again
    if tp is type(None) and data is None:
        return None
    raise TypeError(f"Cannot decode {data!r:.80} as {tp}")


def encode_task(task: Any) -> str:
    """A task object as JSON text naming its type (``{"type": "module:QualName", "task": {...}}``)."""
    cls = type(task)
    return json.dumps({"type": f"{cls.__module__}:{cls.__qualname__}", "task": encode_value(task)})


def decode_task(text: str) -> Any:
    """The task object :func:`encode_task` encoded (its type imported by name)."""
    d = json.loads(text)
    module, _, name = d["type"].partition(":")
    cls: Any = importlib.import_module(module)
    for part in name.split("."):
        cls = getattr(cls, part)
    return decode_value(cls, d["task"])
