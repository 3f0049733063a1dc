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

from lake_orchestration.dagster.assets import compaction_partitions, health_observation
from lake_orchestration.dagster.config import HudiTableConfig
from lake_orchestration.dagster.errors import SensorCursorError, hudi_step
from lake_orchestration.dagster.translator import DagsterHudiTranslator
from lake_orchestration.errors import InvalidInstantTimeError
from lake_orchestration.hudi.model.instant import InstantTime
from lake_orchestration.hudi.services.compaction import is_compaction_committed, select_pending_plans


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

    @dg.sensor(
        name=name,
        job=job,
        minimum_interval_seconds=30,
        description=(
            f"Runs every new pending compaction plan of {cfg.name} at once ({cfg.compaction_seq}, at most "
            f"{cfg.max_plans_per_tick} per tick): adds its partition of "
            f"{translator.get_compaction_asset_key(cfg).to_user_string()} and requests a run keyed by the instant. "
            "Off by default: turn it on for automatic compaction, or backfill the partitions from the UI."
        ),
    )
    def _sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        cursor = PendingCompactionCursor.from_json(context.cursor, table=cfg.name, sensor=name)
        with hudi_step(cfg) as step:
            table = step.open_table()
            batch = select_pending_plans(
                table,
                seq=cfg.compaction_seq,
                max_plans=cfg.max_plans_per_tick,
                exclude={str(t) for t in cursor.seen},
                refresh=False,
            )
            observed = [health_observation(cfg, translator, table, source=name)] if batch else []
        if not batch:
            return dg.SensorResult(skip_reason=f"no new pending compaction plan on {cfg.name}")
        known = set(context.instance.get_dynamic_partitions(parts.name)) if context.instance else set()
        return dg.SensorResult(
            run_requests=[dg.RunRequest(run_key=t, partition_key=t, tags={"hudi/instant": t}) for t in batch],
            dynamic_partitions_requests=[parts.build_add_request([t for t in batch if t not in known])],
            cursor=cursor.with_requested(batch).to_json(),
            asset_events=observed,
        )

    return _sensor


def build_sync_compaction_plans_sensor(cfg: HudiTableConfig, translator: DagsterHudiTranslator) -> dg.SensorDefinition:
    """``<t>__sync_compaction_plans_sensor``: the partitions of ``hudi/<t>/compaction`` follow the timeline's plans.

    Each tick adds a partition per pending plan not yet registered and removes the partitions whose instant is
    neither pending nor committed on the active timeline (rolled back, or archived), then launches nothing. Its
    cursor is the pending plans it saw last (JSON list); when they change it records the table's health as an
    observation of ``hudi/<t>``. The registered partitions are read before the timeline is listed, so a plan the
    schedule job writes (then registers) between the two is never removed.
    """
    parts = compaction_partitions(cfg, translator)
    name = translator.get_sensor_name(cfg, "sync_compaction_plans")
    asset = translator.get_compaction_asset_key(cfg).to_user_string()

    @dg.sensor(
        name=name,
        minimum_interval_seconds=30,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=(
            f"Keeps the partitions of {asset} equal to the compaction plans on {cfg.name}'s timeline, whoever made "
            "them (CLI, Airflow, the schedule job): adds pending plans, removes rolled-back ones. Launches nothing: "
            f"run the plans with Materialize -> Missing on {asset} (a backfill) or the pending-compaction sensor."
        ),
    )
    def _sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        try:
            last = set(json.loads(context.cursor)) if context.cursor else None
        except ValueError:
            last = None  # only decides whether to observe the health: a bad cursor costs one observation
        known = set(context.instance.get_dynamic_partitions(parts.name))  # before the listing (see above)
        with hudi_step(cfg) as step:
            table = step.open_table()
            pending = [str(i.time) for i in table.timeline.pending_compactions()]
            gone = sorted(k for k in known if k not in pending and not is_compaction_committed(table, k))
            add = [t for t in pending if t not in known]
            changed = last is None or last != set(pending)
            observed = [health_observation(cfg, translator, table, source=name)] if changed else []
        requests: list[Any] = []
        if add:
            requests.append(parts.build_add_request(add))
        if gone:
            requests.append(parts.build_delete_request(gone))
        if not requests and not observed:
            return dg.SensorResult(skip_reason=f"{len(pending)} pending plan(s) on {cfg.name}, all registered")
        return dg.SensorResult(
            dynamic_partitions_requests=requests, asset_events=observed, cursor=json.dumps(sorted(pending))
        )

    return _sensor


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
