"""The sensors of a table: pending plans -> partitions (and runs), stale inflight writes -> rollback runs.

* ``<t>__sync_compaction_plans_sensor`` (running by default) keeps the partitions of ``hudi/<t>/compaction`` equal
  to the plans on the timeline, whoever made them (the CLI, Airflow, another deployment): a partition per pending
  plan, none for an instant that is neither pending nor committed (rolled back; archived). It launches nothing: the
  plans wait, *missing*, for a backfill (*Materialize -> Missing* in the UI) or the pending-compaction sensor.
* ``<t>__pending_compaction_sensor`` adds a partition of ``hudi/<t>/compaction`` per newly requested plan and
  requests its run (run key = instant; FIFO/LIFO; at most ``max_plans_per_tick`` per evaluation). Its cursor is a
  :class:`PendingCompactionCursor` (the instants already requested); one it cannot decode fails the tick
  (:class:`~lake_orchestration.dagster.errors.SensorCursorError`) instead of restarting, which would request every
  plan again.
* ``<t>__stale_inflight_sensor`` finds pending writes whose heartbeat expired (or that exceed the inflight timeout)
  and requests their rollback.

The sync and pending-compaction sensors record the table's health as an observation of ``hudi/<t>`` when the
pending plans they see change (the plots move without a materialization of the table asset).
"""

import json
from dataclasses import dataclass
from typing import Any

import dagster as dg

from lake_orchestration.dagster.config import HudiTableConfig
from lake_orchestration.dagster.errors import SensorCursorError, hudi_step
from lake_orchestration.dagster.translator import DagsterHudiTranslator
from lake_orchestration.errors import InvalidInstantTimeError
from lake_orchestration.hudi.model.instant import InstantTime


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
    from lake_orchestration.dagster.plan_assets import COMPACTION, build_pending_plans_sensor

    return build_pending_plans_sensor(COMPACTION, cfg, translator, job)


def build_sync_compaction_plans_sensor(cfg: HudiTableConfig, translator: DagsterHudiTranslator) -> dg.SensorDefinition:
    """``<t>__sync_compaction_plans_sensor``: the partitions of ``hudi/<t>/compaction`` follow the timeline's plans.

    Each tick adds a partition per pending plan not yet registered and removes the partitions whose instant is
    neither pending nor committed on the active timeline (rolled back, or archived), then launches nothing. Its
    cursor is the pending plans it saw last (JSON list); when they change it records the table's health as an
    observation of ``hudi/<t>``. The registered partitions are read before the timeline is listed, so a plan the
    schedule job writes (then registers) between the two is never removed.
    """
    from lake_orchestration.dagster.plan_assets import COMPACTION, build_sync_plans_sensor

    return build_sync_plans_sensor(COMPACTION, cfg, translator)


def build_stale_inflight_sensor(
    cfg: HudiTableConfig, translator: DagsterHudiTranslator, job: dg.JobDefinition
) -> dg.SensorDefinition:
    """``<t>__stale_inflight_sensor``: a rollback run per pending write whose heartbeat expired."""
    from lake_orchestration.hudi.services.rollback import stale_writes

    op = translator.get_op_name(cfg, "rollback")

    @dg.sensor(
        name=translator.get_sensor_name(cfg, "stale_inflight"),
        job=job,
        minimum_interval_seconds=60,
        description=(
            f"Requests a rollback run ({job.name}) per pending write of {cfg.name} whose heartbeat expired or that "
            "is older than the table's inflight timeout"
        ),
    )
    def _sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        with hudi_step(cfg) as step:
            heartbeat = cfg.heartbeat_config()  # the services' own hoodie.client.heartbeat.*
            stale = stale_writes(
                step.open_table(),
                interval_ms=heartbeat.interval_ms,
                tolerable_misses=heartbeat.tolerable_misses,
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
