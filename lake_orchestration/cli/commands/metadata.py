"""``lake-orch metadata``: the table's metadata table (``.hoodie/metadata``). ``metadata init PATH`` initialises its
``files`` partition from a storage listing, as Java Hudi 0.15 does on a write with ``hoodie.metadata.enable=true``
(docs/metadata-table.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from lake_orchestration.cli.common import open_table, option_passthrough, parse_options
from lake_orchestration.cli.output import Output, json_option
from lake_orchestration.cli.storage_options import storage_options
from lake_orchestration.config.keys import HoodieKey

if TYPE_CHECKING:
    from lake_orchestration.hudi.metadata.initialize import MetadataInit


@click.group("metadata")
def metadata_group() -> None:
    """The metadata table (.hoodie/metadata): initialise it."""


def _print_init(r: MetadataInit) -> None:
    if r.skipped == "already initialised":
        click.echo(f"The metadata table is already initialised ({HoodieKey.METADATA_PARTITIONS.key} lists files)")
        return
    if r.skipped is not None:
        pending = f": {', '.join(r.pending)}" if r.pending else ""
        click.echo(f"Metadata table not initialised: {r.skipped}{pending}")
        return
    for what in r.removed:
        click.echo(f"{'Would remove' if r.dry_run else 'Removed'} the half-made metadata table: {what}")
    verb = "Would initialise" if r.dry_run else "Initialised"
    click.echo(
        f"{verb} the metadata table at {r.instant}: {r.partitions} partition(s), {r.files} file(s), base file "
        f"{r.base_file}; then {HoodieKey.METADATA_PARTITIONS.key}=files"
    )


@metadata_group.command("init")
@click.argument("path")
@click.option("--dry-run", is_flag=True, help="Only print what would be written (nothing is written).")
@click.option(
    "--option",
    "options",
    multiple=True,
    help=f"{HoodieKey.LOCK_PROVIDER.key}, ... (the hoodie.write.lock.* keys) as key=value (repeatable): the table "
    "lock held while the metadata table is built.",
)
@option_passthrough
@json_option()
@storage_options
def metadata_init_cmd(path: str, dry_run: bool, options: tuple[str, ...], out: Output) -> None:
    """Initialise the metadata table's files partition from a listing of the table (Java's instant <latest>010).
    Nothing is written while a data instant is pending; a half-made metadata table is rebuilt."""
    from lake_orchestration.hudi.metadata.initialize import initialize_metadata_table
    from lake_orchestration.hudi.table.lock import LockConfig

    lock = LockConfig.from_options(parse_options(options), service="metadata init")
    out.show(initialize_metadata_table(open_table(path), dry_run=dry_run, lock=lock), _print_init)
