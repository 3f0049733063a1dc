"""The CLI's one output layer: a command hands its result to an :class:`Output`, which prints it as text for people
(:class:`TextOutput`) or as JSON for programs (:class:`JsonOutput`); errors are printed here too, once for every
command.

Like pyiceberg's ``cli/output.py`` (an ``Output`` ABC with a console and a JSON implementation) and its
``console.py`` (``catch_exception``: the short message, or the whole traceback with ``--verbose``). The JSON of a
typed result is its own ``to_json_obj()`` (a service defines it once, for the CLI and the Dagster metadata); the
text layout of each result lives beside its command in :mod:`lake_orchestration.cli.commands`.
"""

from __future__ import annotations

import functools
import json
import sys
import traceback
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import click

from lake_orchestration.cli.storage_options import missing_credentials_hint, redact
from lake_orchestration.errors import LakeOrchestrationError

R = TypeVar("R")
F = TypeVar("F", bound=Callable[..., Any])

COMMAND_ERRORS: tuple[type[BaseException], ...] = (LakeOrchestrationError, ValueError, OSError, NotImplementedError)
"""What a command may fail with: printed as one line ``Error: <message>`` on stderr, exit status 1."""


def to_json(result: Any) -> Any:
    """The JSON object of ``result``: its ``to_json_obj()``; a list or tuple of results as a list; JSON data (a dict,
    a string, a number) as it is."""
    if isinstance(result, list | tuple):
        return [to_json(r) for r in result]
    to_json_obj = getattr(result, "to_json_obj", None)
    if to_json_obj is not None:
        return to_json_obj()
    if isinstance(result, Mapping | str | int | float | bool) or result is None:
        return result
    raise TypeError(f"cannot print a {type(result).__name__} as JSON: expected a result with to_json_obj()")


def emit_json(obj: Any) -> None:
    """Print ``obj`` as indented JSON (values JSON does not know, like instants, as their strings)."""
    click.echo(json.dumps(obj, indent=2, default=str))


class Output(ABC):
    """Where a command's result goes."""

    @abstractmethod
    def show(self, result: R, text: Callable[[R], None]) -> None:
        """Print ``result``; ``text`` prints it for people (with :func:`click.echo`)."""


class TextOutput(Output):
    """Results as text: each command's own layout."""

    def show(self, result: R, text: Callable[[R], None]) -> None:
        text(result)


class JsonOutput(Output):
    """Results as JSON (:func:`to_json`), nothing else on stdout."""

    def show(self, result: R, text: Callable[[R], None]) -> None:
        emit_json(to_json(result))


def output_for(as_json: bool) -> Output:
    """The one place that decides between text and JSON."""
    return JsonOutput() if as_json else TextOutput()


def json_option(help: str = "Print JSON.") -> Callable[[F], F]:
    """Add ``--json`` to a command; the command receives ``out``, the :class:`Output` it asks for."""

    def decorate(fn: F) -> F:
        @click.option("--json", "as_json", is_flag=True, help=help)
        @functools.wraps(fn)
        def wrapper(*args: Any, as_json: bool, **kwargs: Any) -> Any:
            return fn(*args, out=output_for(as_json), **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


@contextmanager
def errors_rendered(ctx: click.Context) -> Iterator[None]:
    """Print a command's error (:data:`COMMAND_ERRORS`) as ``Error: <message>`` on stderr (with ``--verbose``, the
    traceback first) and exit 1. A store's error may quote what it was given: every secret value is masked."""
    try:
        yield
    except BrokenPipeError:
        # the reader of stdout went away (``| head``): click exits quietly (no traceback, no message)
        raise
    except COMMAND_ERRORS as err:
        if (ctx.find_root().obj or {}).get("verbose"):
            click.echo(redact(traceback.format_exc()).rstrip("\n"), err=True)
        message = f"Error: {err}"
        click.echo(redact(message + missing_credentials_hint(message)), err=True)
        sys.exit(1)


def table(rows: Sequence[Sequence[Any]], headers: Sequence[str]) -> str:
    """A plain aligned text table."""
    cells = [[str(h) for h in headers]] + [[("" if v is None else str(v)) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
