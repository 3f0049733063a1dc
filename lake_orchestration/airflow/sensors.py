"""Sensors: pending compaction plans, stale inflight writes and new commits past a checkpoint, each deferrable
(``deferrable=True`` hands the wait to the triggerer: :mod:`lake_orchestration.airflow.triggers`). A sensor's XCom is
what it found: the plan instants (the input of ``.expand()``), the stale writes (``{"instant", "action",
"reason"}``), or the last new instant."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.sdk import Asset, BaseSensorOperator, PokeReturnValue
from airflow.sdk.exceptions import AirflowException

from lake_orchestration.airflow.hooks import HudiTableHook, HudiTableLocation
from lake_orchestration.airflow.incremental import as_asset, read_checkpoint
from lake_orchestration.airflow.triggers import (
    HudiNewCommitsTrigger,
    HudiPendingCompactionTrigger,
    HudiStaleInflightTrigger,
    commits_after,
    pending_plans,
    stale_inflight,
)

if TYPE_CHECKING:
    from airflow.sdk import Context


class _HudiSensor(BaseSensorOperator):
    template_fields: Sequence[str] = ("base_path",)

    def __init__(
        self,
        *,
        hudi_conn_id: str = HudiTableHook.default_conn_name,
        base_path: str | None = None,
        deferrable: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.hudi_conn_id = hudi_conn_id
        self.base_path = base_path
        self.deferrable = deferrable

    def location(self) -> HudiTableLocation:
        return HudiTableHook(self.hudi_conn_id, base_path=self.base_path or None).get_conn()

    def _poll_seconds(self) -> float:
        interval = self.poke_interval
        return interval.total_seconds() if isinstance(interval, timedelta) else float(interval)

    def _timeout(self) -> timedelta | None:
        return None if self.timeout is None else timedelta(seconds=float(self.timeout))

    def execute_complete(self, context: Context, event: dict[str, Any]) -> Any:
        """Resumed from the trigger: its payload, or the error it reported."""
        if event.get("status") != "success":
            raise AirflowException(f"{type(self).__name__} on {self.base_path or self.hudi_conn_id}: {event}")
        return self._payload(event)

    def _payload(self, event: dict[str, Any]) -> Any:
        raise NotImplementedError


class HudiPendingCompactionSensor(_HudiSensor):
    """Waits for pending compaction plans; returns their instants (FIFO/LIFO, at most ``max_plans``, those in
    ``exclude`` left out).

    Args:
        seq: ``FIFO`` or ``LIFO``.
        max_plans: at most this many instants (None: all).
        exclude: instants not to report (e.g. plans already handed to a run).
        deferrable: wait in the triggerer (:class:`~.triggers.HudiPendingCompactionTrigger`) instead of a worker.
    """

    def __init__(
        self,
        *,
        seq: str = "FIFO",
        max_plans: int | None = None,
        exclude: Sequence[str] = (),
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.seq = seq
        self.max_plans = max_plans
        self.exclude = list(exclude)

    def poke(self, context: Context) -> PokeReturnValue:
        plans = pending_plans(self.location(), seq=self.seq, max_plans=self.max_plans, exclude=self.exclude)
        return PokeReturnValue(is_done=bool(plans), xcom_value=plans)

    def execute(self, context: Context) -> Any:
        if not self.deferrable:
            return super().execute(context)
        self.defer(
            trigger=HudiPendingCompactionTrigger(
                hudi_conn_id=self.hudi_conn_id,
                base_path=self.base_path,
                poll_interval=self._poll_seconds(),
                seq=self.seq,
                max_plans=self.max_plans,
                exclude=self.exclude,
            ),
            method_name="execute_complete",
            timeout=self._timeout(),
        )

    def _payload(self, event: dict[str, Any]) -> list[str]:
        return list(event["instants"])


class HudiStaleInflightSensor(_HudiSensor):
    """Waits for stale pending writes (expired heartbeat, or no heartbeat and older than ``timeout_seconds``);
    returns them as ``{"instant", "action", "reason"}`` (for :class:`~.operators.HudiRollbackOperator`).

    Args:
        interval_ms / tolerable_misses: the heartbeat settings (default: ``hoodie.client.heartbeat.*`` of the
            connection's options, else Hudi's).
        timeout_seconds: a pending write without a heartbeat file is stale once older than this (None: never).
    """

    def __init__(
        self,
        *,
        interval_ms: int | None = None,
        tolerable_misses: int | None = None,
        timeout_seconds: float | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.interval_ms = interval_ms
        self.tolerable_misses = tolerable_misses
        self.timeout_seconds = timeout_seconds

    def poke(self, context: Context) -> PokeReturnValue:
        stale = stale_inflight(
            self.location(),
            interval_ms=self.interval_ms,
            tolerable_misses=self.tolerable_misses,
            timeout_seconds=self.timeout_seconds,
        )
        return PokeReturnValue(is_done=bool(stale), xcom_value=stale)

    def execute(self, context: Context) -> Any:
        if not self.deferrable:
            return super().execute(context)
        self.defer(
            trigger=HudiStaleInflightTrigger(
                hudi_conn_id=self.hudi_conn_id,
                base_path=self.base_path,
                poll_interval=self._poll_seconds(),
                interval_ms=self.interval_ms,
                tolerable_misses=self.tolerable_misses,
                timeout_seconds=self.timeout_seconds,
            ),
            method_name="execute_complete",
            timeout=self._timeout(),
        )

    def _payload(self, event: dict[str, Any]) -> list[dict[str, str]]:
        return list(event["stale"])


class HudiNewCommitsSensor(_HudiSensor):
    """Waits until the table has completed commits newer than a checkpoint; returns the last new instant.

    The checkpoint is ``after_instant`` (templated), else the one an
    :class:`~lake_orchestration.airflow.incremental.HudiIncrementalPullOperator` keeps on ``checkpoint_asset`` (give
    the pull's asset: the sensor then waits for changes the pull has not read), else none (any completed commit).
    Commits of compaction, log compaction and clustering bring no new rows and do not count unless
    ``skip_table_services=False``.

    Args:
        after_instant: the checkpoint (an instant time; templated).
        checkpoint_asset: the asset whose state store keeps the pull's checkpoint (an inlet of the sensor).
        skip_table_services: leave compaction, log compaction and clustering commits out.
        deferrable: wait in the triggerer (:class:`~.triggers.HudiNewCommitsTrigger`) instead of a worker.
    """

    template_fields: Sequence[str] = (*_HudiSensor.template_fields, "after_instant")

    def __init__(
        self,
        *,
        after_instant: str | None = None,
        checkpoint_asset: Asset | str | None = None,
        skip_table_services: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.after_instant = after_instant
        self.skip_table_services = skip_table_services
        self.checkpoint_asset = (
            as_asset(checkpoint_asset, source=f"{type(self).__name__} {self.task_id!r}")
            if checkpoint_asset is not None
            else None
        )
        if self.checkpoint_asset is not None and self.checkpoint_asset not in self.inlets:
            self.inlets = [*self.inlets, self.checkpoint_asset]

    def checkpoint(self, context: Context, location: HudiTableLocation) -> str | None:
        """The instant to wait past (None: any commit)."""
        if self.after_instant not in (None, "", "None"):
            return str(self.after_instant)
        if self.checkpoint_asset is not None:
            return read_checkpoint(context, self.checkpoint_asset, location.base_path)
        return None

    def poke(self, context: Context) -> PokeReturnValue:
        location = self.location()
        new = commits_after(location, self.checkpoint(context, location), skip_table_services=self.skip_table_services)
        return PokeReturnValue(is_done=bool(new), xcom_value=new[-1][0] if new else None)

    def execute(self, context: Context) -> Any:
        if not self.deferrable:
            return super().execute(context)
        location = self.location()
        after = self.checkpoint(context, location)
        self.log.info("Waiting for commits after %s on %s", after or "the start", location.base_path)
        self.defer(
            trigger=HudiNewCommitsTrigger(
                hudi_conn_id=self.hudi_conn_id,
                base_path=self.base_path,
                poll_interval=self._poll_seconds(),
                after_instant=after,
                skip_table_services=self.skip_table_services,
            ),
            method_name="execute_complete",
            timeout=self._timeout(),
        )

    def _payload(self, event: dict[str, Any]) -> str:
        return str(event["instant"])
