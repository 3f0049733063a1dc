"""What several commands share: opening the table, ``--option key=value``, ``--spark-master``, ``--timeout``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from lake_orchestration.cli.storage_options import current_storage_options
from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.config.options import check_option_keys
from lake_orchestration.errors import EngineError

F = TypeVar("F", bound=Callable[..., Any])


if TYPE_CHECKING:
    from lake_orchestration.hudi.table import HudiTable


def open_table(path: str) -> HudiTable:
    """The table at ``path`` opened with the command's ``--storage-option``/``--storage-options-file`` options."""
    from lake_orchestration.hudi.table import HudiTable

    return HudiTable(path, storage_options=current_storage_options())


_PASSTHROUGH_META_KEY = "lake_orchestration.option_passthrough"
PASSTHROUGH_FLAG = "--option-passthrough"
"""The escape for a Hudi key lake_orchestration does not model: passed on as given, never checked."""


def _pairs(pairs: tuple[str, ...], flag: str) -> dict[str, str]:
    out = {}
    for p in pairs:
        key, sep, value = p.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{flag} {p!r}: expected key=value, e.g. {HoodieKey.PARQUET_COMPRESSION_CODEC.key}=snappy")
        out[key.strip()] = value
    return out


def _store_passthrough(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> None:
    ctx.meta[_PASSTHROUGH_META_KEY] = value


def option_passthrough(fn: F) -> F:
    """Add ``--option-passthrough KEY=VALUE`` (repeatable) beside a command's ``--option``: a ``hoodie.*`` key that
    lake_orchestration does not model, passed on without the unknown-key check of :func:`parse_options` (a
    ``hoodie.table.*`` key of a write that creates the table lands in ``hoodie.properties``; a service ignores it)."""
    return click.option(
        PASSTHROUGH_FLAG,
        "option_passthrough",
        multiple=True,
        metavar="KEY=VALUE",
        expose_value=False,
        callback=_store_passthrough,
        help="A Hudi key lake_orchestration does not model, passed on unchecked (repeatable).",
    )(fn)


def parse_options(pairs: tuple[str, ...]) -> dict[str, str]:
    """``--option key=value`` (repeatable) -> Hudi options, with the command's ``--option-passthrough`` pairs.

    Raises:
        ValueError: a pair without ``=`` or without a key.
        UnknownOptionError: an ``--option`` ``hoodie.*`` key no :class:`HoodieKey` reads (a typo would silently keep
            the default): the message names the key, the closest known key and ``--option-passthrough``.
    """
    out = _pairs(pairs, "--option")
    check_option_keys(out, source="--option", escape=f"{PASSTHROUGH_FLAG} KEY=VALUE")
    try:
        passthrough = click.get_current_context().meta.get(_PASSTHROUGH_META_KEY, ())
    except RuntimeError:  # called outside a command
        passthrough = ()
    out.update(_pairs(tuple(passthrough), PASSTHROUGH_FLAG))
    return out


def table_options(
    pairs: tuple[str, ...],
    *,
    table_name: str | None,
    table_type: str | None,
    record_keys: tuple[str, ...],
    precombine_field: str | None,
    partition_fields: tuple[str, ...],
) -> dict[str, str]:
    """``--option key=value`` (repeatable) with the table-defining options of ``write`` and ``bootstrap``
    (``--table-name``, ``--table-type``, ``--record-key``, ``--precombine-field``, ``--partition-field``) under
    their Hudi keys; a key given as ``--option`` wins."""
    out = parse_options(pairs)
    given = {
        HoodieKey.TABLE_NAME: table_name,
        HoodieKey.WRITE_TABLE_TYPE: table_type,
        HoodieKey.RECORDKEY_FIELD: ",".join(record_keys),
        HoodieKey.WRITE_PRECOMBINE_FIELD: precombine_field,
        HoodieKey.PARTITIONPATH_FIELD: ",".join(partition_fields),
    }
    for key, value in given.items():
        if value:
            out.setdefault(key.key, value)
    return out


def spark_master(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """Check ``--spark-master`` before anything runs: a bad URL is a usage error, not a JVM traceback."""
    from lake_orchestration.engines.spark_session import validate_spark_master

    try:
        return validate_spark_master(value)
    except EngineError as err:
        raise click.BadParameter(str(err), ctx=ctx, param=param) from None


def engine_options(
    *,
    default: str,
    help: str | None = None,
    choices: tuple[str, ...] = ("local", "spark"),
    master_help: str | None = None,
) -> Callable[[F], F]:
    """Add ``--engine`` (``choices``, ``default``) and ``--spark-master`` (checked by :func:`spark_master`) to a
    command; :func:`cli_engine` turns them into the engine."""

    def decorate(fn: F) -> F:
        fn = click.option(
            "--spark-master", default="local[*]", show_default=True, callback=spark_master, help=master_help
        )(fn)
        return click.option(
            "--engine", type=click.Choice(list(choices)), default=default, show_default=True, help=help
        )(fn)

    return decorate


def plan_selection_options(*, schedule_help: str) -> Callable[[F], F]:
    """Add the options that pick which pending plans a ``run`` command executes, as Hudi's table-service jobs name
    them: ``--instant-time`` (exactly that plan), ``--seq FIFO|LIFO``, ``--max-plans`` and ``--schedule`` (plan
    first; ``schedule_help`` says with which trigger)."""

    def decorate(fn: F) -> F:
        fn = click.option("--schedule", is_flag=True, help=schedule_help)(fn)
        fn = click.option(
            "--max-plans", default=1, show_default=True, type=click.IntRange(min=1), help="Run at most this many plans."
        )(fn)
        fn = click.option(
            "--seq",
            type=click.Choice(["FIFO", "LIFO"], case_sensitive=False),
            default="FIFO",
            show_default=True,
            help="Order of pending plans.",
        )(fn)
        return click.option("--instant-time", default=None, help="Run exactly this pending plan.")(fn)

    return decorate


def cli_engine(engine: str, master: str) -> Any:
    """The engine of ``--engine`` / ``--spark-master`` (:func:`~lake_orchestration.engines.factory.build_engine`): a
    local engine, or a Spark engine on an embedded session started on its first task (a command with nothing to do
    answers without the ~15 s of a Spark JVM start)."""
    from lake_orchestration.engines.factory import build_engine

    return build_engine(engine, spark_master=master)


def duration_seconds(text: str) -> float:
    """``90``, ``90s``, ``15m``, ``2h``, ``1d`` -> seconds."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    t = text.strip().lower()
    try:
        seconds = float(t[:-1]) * units[t[-1]] if t and t[-1] in units else float(t)
    except ValueError as err:
        raise ValueError(f"--timeout {text!r}: expected a duration like 90s, 15m, 2h or 1d") from err
    if not seconds > 0:  # a negative (or nan) timeout would judge every pending write without a heartbeat stale
        raise ValueError(f"--timeout {text!r}: expected a positive duration like 90s, 15m, 2h or 1d")
    return seconds
