"""Sensors: pending compaction plans and stale inflight writes, each deferrable (``deferrable=True`` hands the wait
to the triggerer: :mod:`lake_orchestration.airflow.triggers`). A sensor's XCom is what it found: the plan instants
(the input of ``.expand()``), or the stale writes (``{"instant", "action", "reason"}``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseSensorOperator, PokeReturnValue
from airflow.sdk.exceptions import AirflowException

from lake_orchestration.airflow.hooks import HudiTableHook, HudiTableLocation
from lake_orchestration.airflow.triggers import (
    HudiPendingCompactionTrigger,
    HudiStaleInflightTrigger,
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
