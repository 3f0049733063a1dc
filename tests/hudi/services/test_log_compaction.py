"""Log compaction merges a slice's log blocks into one log file; the snapshot hudi-rs reads is unchanged."""

from __future__ import annotations

from pathlib import Path

from lake_orchestration.hudi.log.log_format import HeaderKey, iter_blocks
from lake_orchestration.hudi.model.instant import Action, State
from lake_orchestration.hudi.services.compaction import CompactionConfig, run_compaction, schedule_compaction
from lake_orchestration.hudi.services.log_compaction import run_log_compaction, schedule_log_compaction
from lake_orchestration.hudi.table import HudiTable, read_snapshot_table
from tests.oracle import REWRITTEN_BY_SERVICES, assert_same_rows, hudi_rs_snapshot
from tests.tables import fake_metadata_table, generated_table


def test_log_compaction_merges_blocks_snapshot_unchanged_then_compaction(tmp_path: Path) -> None:
    path = generated_table(tmp_path)
    before = hudi_rs_snapshot(path)
    t = HudiTable(str(path))
    cfg = CompactionConfig(log_compaction_blocks_threshold=3)
    sched = schedule_log_compaction(t, config=cfg)
    assert sched.scheduled, sched.reason
    assert (path / ".hoodie" / f"{sched.instant}.logcompaction.requested").exists()
    md = run_log_compaction(t, str(sched.instant), config=cfg)
    assert md.operation_type == "LOG_COMPACT"
    t = HudiTable(str(path))
    assert t.timeline.get(str(sched.instant), Action.DELTA_COMMIT).is_completed
    assert_same_rows(hudi_rs_snapshot(path), before)
    assert_same_rows(read_snapshot_table(t), before)
    for s in md.write_stats():
        blocks = list(iter_blocks((path / s.path).read_bytes()))
        assert blocks and all(b.instant_time == str(sched.instant) for b in blocks)
        assert all(b.get(HeaderKey.COMPACTED_BLOCK_TIMES) for b in blocks)
    # a regular compaction afterwards still gives the same snapshot
    schedule_compaction(t, force=True)
    run_compaction(HudiTable(str(path)))
    assert_same_rows(hudi_rs_snapshot(path), before, ignore=REWRITTEN_BY_SERVICES)


def test_log_compaction_cli_schedule_and_run(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from lake_orchestration.cli.app import cli

    path = generated_table(tmp_path, deltas=3)
    before = hudi_rs_snapshot(path)
    r = CliRunner().invoke(
        cli, ["log-compaction", "schedule", str(path), "--option", "hoodie.log.compaction.blocks.threshold=2"]
    )
    assert r.exit_code == 0 and "Scheduled log compaction" in r.output, r.output
    r = CliRunner().invoke(cli, ["log-compaction", "run", str(path)])
    assert r.exit_code == 0 and "Committed log compaction" in r.output, r.output
    assert_same_rows(hudi_rs_snapshot(path), before)


def test_log_compaction_cli_refuses_a_metadata_table_until_disabled(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from lake_orchestration.cli.app import cli

    path = generated_table(tmp_path, deltas=3)
    before = hudi_rs_snapshot(path)
    threshold = ["--option", "hoodie.log.compaction.blocks.threshold=2"]
    sched = schedule_log_compaction(HudiTable(str(path)), config=CompactionConfig(log_compaction_blocks_threshold=2))
    assert sched.scheduled, sched.reason
    fake_metadata_table(path)
    r = CliRunner().invoke(cli, ["log-compaction", "run", str(path)])
    assert r.exit_code == 1 and "log compaction does not update" in r.output, r.output
    pending = HudiTable(str(path)).timeline.get(str(sched.instant), Action.LOG_COMPACTION)
    assert pending.action is Action.LOG_COMPACTION and pending.state is State.REQUESTED  # nothing executed
    r = CliRunner().invoke(cli, ["log-compaction", "schedule", str(path), *threshold])
    assert r.exit_code == 1 and "hoodie.metadata.enable=false" in r.output, r.output
    r = CliRunner().invoke(cli, ["log-compaction", "run", str(path), "--option", "hoodie.metadata.enable=false"])
    assert r.exit_code == 0 and f"Committed log compaction {sched.instant}" in r.output, r.output
    assert not (path / ".hoodie" / "metadata").exists()
    assert_same_rows(hudi_rs_snapshot(path), before)


def test_log_compaction_execute_then_commit_as_separate_steps_commits_what_execute_wrote(tmp_path: Path) -> None:
    import pickle

    from lake_orchestration.hudi.services.log_compaction import commit_log_compaction, execute_log_compaction

    path = generated_table(tmp_path, deltas=3)
    before = hudi_rs_snapshot(path)
    cfg = CompactionConfig(log_compaction_blocks_threshold=2)
    sched = schedule_log_compaction(HudiTable(str(path)), config=cfg)
    assert sched.scheduled, sched.reason
    instant = str(sched.instant)
    execution = execute_log_compaction(HudiTable(str(path)), instant, config=cfg)
    assert HudiTable(str(path)).timeline.get(instant, Action.LOG_COMPACTION).state is State.INFLIGHT
    written = {s.path for s in execution.metadata.write_stats()}
    assert written and all((path / p).exists() for p in written)
    logs_after_execute = {str(p.relative_to(path)) for p in path.rglob(".*.log.*")}
    md = commit_log_compaction(HudiTable(str(path)), pickle.loads(pickle.dumps(execution)), config=cfg)
    assert {s.path for s in md.write_stats()} == written
    assert HudiTable(str(path)).timeline.get(instant, Action.DELTA_COMMIT).is_completed
    assert {str(p.relative_to(path)) for p in path.rglob(".*.log.*")} == logs_after_execute  # nothing written again
    assert not (path / ".hoodie" / ".heartbeat" / instant).exists()
    assert not (path / ".hoodie" / ".temp" / instant).exists()
    assert_same_rows(hudi_rs_snapshot(path), before)


def test_log_compaction_commit_refused_when_the_attempt_was_taken_over(tmp_path: Path) -> None:
    import pytest

    from lake_orchestration.errors import InvalidInstantStateError
    from lake_orchestration.hudi.services.log_compaction import commit_log_compaction, execute_log_compaction

    path = generated_table(tmp_path, deltas=3)
    cfg = CompactionConfig(log_compaction_blocks_threshold=2)
    sched = schedule_log_compaction(HudiTable(str(path)), config=cfg)
    instant = str(sched.instant)
    execution = execute_log_compaction(HudiTable(str(path)), instant, config=cfg)
    (path / ".hoodie" / ".heartbeat" / instant).write_bytes(b"another attempt\n")
    with pytest.raises(InvalidInstantStateError, match="not committed by this process"):
        commit_log_compaction(HudiTable(str(path)), execution, config=cfg)
    assert HudiTable(str(path)).timeline.get(instant, Action.LOG_COMPACTION).state is State.INFLIGHT


def test_run_log_compactions_runs_every_pending_plan_then_nothing(tmp_path: Path) -> None:
    """The loop of ``lake-orch log-compaction run`` lives in the core: every pending plan, oldest first, or one."""
    from lake_orchestration.hudi.services.log_compaction import run_log_compactions

    path = generated_table(tmp_path, deltas=3)
    before = hudi_rs_snapshot(path)
    cfg = CompactionConfig(log_compaction_blocks_threshold=2)
    sched = schedule_log_compaction(HudiTable(str(path)), config=cfg)
    assert sched.scheduled, sched.reason
    runs = list(run_log_compactions(HudiTable(str(path)), config=cfg))
    assert [r.instant for r in runs] == [str(sched.instant)] and runs[0].metadata is not None
    assert HudiTable(str(path)).timeline.get(str(sched.instant), Action.DELTA_COMMIT).is_completed
    assert list(run_log_compactions(HudiTable(str(path)), config=cfg)) == []
    assert_same_rows(hudi_rs_snapshot(path), before)
