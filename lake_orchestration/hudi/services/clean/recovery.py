"""How a failed clean attempt is undone: it is not rolled back, it is finished.

As in Hudi 0.14/0.15 (``BaseHoodieTableServiceClient.clean`` runs every pending clean first): a clean deletes only
files no retained instant needs, and a file already gone counts as deleted, so a crashed attempt's pending plan is
executed again from its ``.clean.requested`` and converges. A pending clean whose requested file is empty deleted
nothing (the plan is written before any delete) and is removed (Java's ``deleteEmptyInstantIfExists``).
"""

from __future__ import annotations

import logging

from lake_orchestration.hudi.model.instant import Action, Instant, State
from lake_orchestration.hudi.table import HudiTable

log = logging.getLogger(__name__)


def pending_cleans(table: HudiTable, *, dry_run: bool = False, refresh: bool = True) -> list[Instant]:
    """Requested or inflight clean instants with a plan, oldest first (``refresh=False``: from the timeline the
    caller has just listed).

    A pending clean whose requested file is empty deleted nothing (the plan is written before any delete); its
    files are removed, as Java's ``deleteEmptyInstantIfExists`` does (not on a dry run).
    """
    out = []
    removed = False
    pending = (table.refresh() if refresh else table).timeline.pending().with_actions(Action.CLEAN)
    names = table.timeline_file_names()  # the listing the timeline was built from
    for inst in pending:
        req = Instant(inst.time, Action.CLEAN, State.REQUESTED)
        if req.file_name in names and not table.read_instant(req):
            log.warning("Removing the empty pending clean %s of %s", inst.time, table.base_uri)
            if not dry_run:
                for state in (State.INFLIGHT, State.REQUESTED):
                    table.storage.delete_file(
                        table.instant_path(Instant(inst.time, Action.CLEAN, state)), missing_ok=True
                    )
                removed = True
            continue
        out.append(inst)
    if removed:
        table.refresh()
    return out
