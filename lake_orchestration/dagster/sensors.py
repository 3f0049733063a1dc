"""The sensors of a table: pending compaction plans -> compaction runs, stale inflight writes -> rollback runs.

* ``<t>__pending_compaction_sensor`` adds a partition of ``hudi/<t>/compaction`` per newly requested plan and
  requests its run (run key = instant; FIFO/LIFO; at most ``max_plans_per_tick`` per evaluation). Its cursor is a
  :class:`PendingCompactionCursor` (the instants already requested); one it cannot decode fails the tick
  (:class:`~lake_orchestration.dagster.errors.SensorCursorError`) instead of restarting, which would request every
  plan again.
* ``<t>__stale_inflight_sensor`` finds pending writes whose heartbeat expired (or that exceed the inflight timeout)
  and requests their rollback.
"""

import json
from dataclasses import dataclass
from typing import Any

import dagster as dg

from lake_orchestration.dagster.assets import compaction_partitions
from lake_orchestration.dagster.config import HudiTableConfig
from lake_orchestration.dagster.errors import SensorCursorError, hudi_step
from lake_orchestration.dagster.translator import DagsterHudiTranslator
from lake_orchestration.errors import InvalidInstantTimeError
from lake_orchestration.hudi.model.instant import InstantTime
from lake_orchestration.hudi.services.compaction import select_pending_plans


@dataclass(frozen=True, kw_only=True)
class PendingCompactionCursor:
    """The cursor of ``<t>__pending_compaction_sensor``: the compaction instants whose runs it requested."""

    seen: frozenset[InstantTime] = frozenset()
    """Instants already requested (never requested again)."""

    EXPECTED = '{"seen": [instants]}'
    """The serialized form, for error messages."""

    def to_json(self) -> str:
        """``{"seen": [sorted instants]}``."""
        return json.dumps({"seen": sorted(self.seen)})

    @classmethod
    def from_json(cls, cursor: str | None, *, table: str, sensor: str) -> "PendingCompactionCursor":
        """Decode a cursor (None or empty: the first evaluation).

        Raises:
            SensorCursorError: not JSON, not ``{"seen": [...]}``, or an entry is not an instant time.
        """
        if not cursor:
            return cls()
        try:
            data = json.loads(cursor)
            if not isinstance(data, dict) or "seen" not in data:
                raise KeyError("seen")
            seen = data["seen"]
            if not isinstance(seen, list):
                raise TypeError("'seen' is not a list")
            return cls(seen=frozenset(InstantTime(s) for s in seen))
        except (ValueError, KeyError, TypeError, InvalidInstantTimeError) as err:
            raise SensorCursorError(
                table=table, sensor=sensor, cursor=cursor, expected=cls.EXPECTED, detail=str(err)
            ) from err

    def with_requested(self, instants: list[str]) -> "PendingCompactionCursor":
        """This cursor with ``instants`` requested too."""
        return PendingCompactionCursor(seen=self.seen | {InstantTime(i) for i in instants})


def build_pending_compaction_sensor(
    cfg: HudiTableConfig, translator: DagsterHudiTranslator, job: Any
) -> dg.SensorDefinition:
    """``<t>__pending_compaction_sensor``: a partition and a run per newly requested compaction plan."""
    parts = compaction_partitions(cfg, translator)
    name = translator.get_sensor_name(cfg, "pending_compaction")

    @dg.sensor(name=name, job=job, minimum_interval_seconds=30)
    def _sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        cursor = PendingCompactionCursor.from_json(context.cursor, table=cfg.name, sensor=name)
        with hudi_step(cfg) as step:
            batch = select_pending_plans(
                step.open_table(),
                seq=cfg.compaction_seq,
                max_plans=cfg.max_plans_per_tick,
                exclude={str(t) for t in cursor.seen},
                refresh=False,
            )
        if not batch:
            return dg.SensorResult(skip_reason=f"no new pending compaction plan on {cfg.name}")
        known = set(context.instance.get_dynamic_partitions(parts.name)) if context.instance else set()
        return dg.SensorResult(
            run_requests=[dg.RunRequest(run_key=t, partition_key=t, tags={"hudi/instant": t}) for t in batch],
            dynamic_partitions_requests=[parts.build_add_request([t for t in batch if t not in known])],
            cursor=cursor.with_requested(batch).to_json(),
        )

    return _sensor


def build_stale_inflight_sensor(
    cfg: HudiTableConfig, translator: DagsterHudiTranslator, job: dg.JobDefinition
) -> dg.SensorDefinition:
    """``<t>__stale_inflight_sensor``: a rollback run per pending write whose heartbeat expired."""
    from lake_orchestration.hudi.services.rollback import stale_writes

    op = translator.get_op_name(cfg, "rollback")

    @dg.sensor(name=translator.get_sensor_name(cfg, "stale_inflight"), job=job, minimum_interval_seconds=60)
    def _sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        with hudi_step(cfg) as step:
            stale = stale_writes(
                step.open_table(),
                interval_ms=cfg.heartbeat_interval_ms,
                tolerable_misses=cfg.heartbeat_tolerable_misses,
                timeout_s=cfg.inflight_timeout_seconds,
            )
        if not stale:
            return dg.SensorResult(skip_reason=f"no stale inflight write on {cfg.name}")
        return dg.SensorResult(
            run_requests=[
                dg.RunRequest(
                    run_key=f"rollback-{s.instant.time}",
                    run_config={"ops": {op: {"config": {"instant_time": str(s.instant.time)}}}},
                    tags={"hudi/instant": str(s.instant.time), "hudi/reason": s.reason},
                )
                for s in stale
            ]
        )

    return _sensor
