"""``lake-orch``: inspect and operate Hudi tables from the command line.

Every command that prints data takes ``--json``. Errors print one line (``--verbose``: the traceback) and exit 1.
The commands live in :mod:`lake_orchestration.cli.commands`, what they print goes through
:mod:`lake_orchestration.cli.output`.
"""

from __future__ import annotations

import copy
import logging
import threading
from typing import Any

import click

from lake_orchestration.cli.commands.bootstrap import bootstrap_cmd
from lake_orchestration.cli.commands.clustering import clustering_group
from lake_orchestration.cli.commands.compaction import compaction_group, log_compaction_group
from lake_orchestration.cli.commands.demo import demo_cmd
from lake_orchestration.cli.commands.fleet import fleet_group
from lake_orchestration.cli.commands.inspect import fsview_group, read_cmd, table_group, timeline_group
from lake_orchestration.cli.commands.maintenance import archive_cmd, clean_cmd, rollback_cmd, savepoint_group
from lake_orchestration.cli.commands.metadata import metadata_group
from lake_orchestration.cli.commands.paimon import paimon_group
from lake_orchestration.cli.commands.write import generate_cmd, write_cmd
from lake_orchestration.cli.output import errors_rendered

PRELOAD = (
    "lake_orchestration.hudi.services.metadata_table",
    "lake_orchestration.hudi.table",
    "lake_orchestration.hudi.table.snapshot",
    "lake_orchestration.hudi.write",
    "lake_orchestration.hudi.services.archive",
    "lake_orchestration.hudi.services.bootstrap",
    "lake_orchestration.hudi.services.clean",
    "lake_orchestration.hudi.services.clustering",
    "lake_orchestration.hudi.services.compaction",
    "lake_orchestration.hudi.services.log_compaction",
    "lake_orchestration.hudi.services.rollback",
    "lake_orchestration.hudi.services.savepoint",
    "lake_orchestration.hudi.metadata.initialize",
    "lake_orchestration.engines.factory",
    "lake_orchestration.cli.progress",
    "lake_orchestration.datagen",
    "pyarrow.parquet",
    "yaml",
)
"""The heavy modules the commands import when they run, not at start-up (``lake-orch --help`` loads none of them):
a process that runs many commands in forked children (the tests' fork server) imports them once first."""


class LakeOrchGroup(click.Group):
    """The root group: a command's error is printed here, once for all commands (:func:`errors_rendered`)."""

    def invoke(self, ctx: click.Context) -> Any:
        with errors_rendered(ctx):
            return super().invoke(ctx)


@click.group(cls=LakeOrchGroup)
@click.option("--verbose", is_flag=True, help="Show tracebacks and debug logging.")
@click.pass_context
def cli(ctx: click.Context, verbose: bool) -> None:
    """Run and inspect Apache Hudi table services."""
    ctx.obj = {"verbose": verbose}
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING, format="%(levelname)s %(message)s")
    if not verbose:
        for handler in logging.getLogger().handlers:
            handler.setFormatter(_BriefFormatter("%(levelname)s %(message)s"))
        threading.excepthook = _brief_thread_exception


class _BriefFormatter(logging.Formatter):
    """Without ``--verbose`` a logged exception (a failed lock release, heartbeat or clean-up after the command's own
    error) is one line, its type and message: the tracebacks are for ``--verbose``. A traceback already rendered on
    the record (the secrets filter renders and redacts it) is replaced by its redacted one-line form."""

    def format(self, record: logging.LogRecord) -> str:
        if record.exc_info or record.exc_text or record.stack_info:
            brief = getattr(record, "brief_exc_text", None)
            if brief is None and record.exc_info and record.exc_info[0] is not None:
                brief = f"{record.exc_info[0].__name__}: {record.exc_info[1]}"
            record = copy.copy(record)
            record.exc_info, record.stack_info = None, None
            record.exc_text = f"  ({brief})" if brief else None
        return super().format(record)


def _brief_thread_exception(args: threading.ExceptHookArgs) -> None:
    """An exception escaping a background thread (heartbeat, lock refresh) without ``--verbose``: one log line."""
    name = args.thread.name if args.thread is not None else "a background thread"
    logging.getLogger("lake_orchestration").error("%s failed: %s: %s", name, args.exc_type.__name__, args.exc_value)


for command in (
    table_group,
    timeline_group,
    fsview_group,
    read_cmd,
    write_cmd,
    generate_cmd,
    compaction_group,
    log_compaction_group,
    clustering_group,
    rollback_cmd,
    clean_cmd,
    savepoint_group,
    archive_cmd,
    bootstrap_cmd,
    demo_cmd,
    paimon_group,
    fleet_group,
    metadata_group,
):
    cli.add_command(command)


def main() -> None:
    cli(prog_name="lake-orch")


if __name__ == "__main__":
    main()
