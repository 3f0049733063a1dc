"""The single-machine default (issue 25): every command with ``--engine``, ``HudiTableConfig.engine`` and the demo
run in-process unless asked for Spark, and Dagster runs the light steps without a process of their own."""

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from lake_orchestration.cli.app import cli


def _commands_with_engine() -> list[tuple[str, ...]]:
    """Every command of the CLI that has an ``--engine`` option, by its words."""
    import click

    out: list[tuple[str, ...]] = []

    def walk(group: click.Group, words: tuple[str, ...]) -> None:
        for name, cmd in group.commands.items():
            if isinstance(cmd, click.Group):
                walk(cmd, (*words, name))
            elif any("--engine" in p.opts for p in cmd.params if isinstance(p, click.Option)):
                out.append((*words, name))

    walk(cli, ())
    return out


def test_every_engine_option_defaults_to_local_in_help() -> None:
    commands = _commands_with_engine()
    assert {("compaction", "run"), ("paimon", "compaction", "run"), ("demo",), ("clean",), ("write",)} <= set(commands)
    for words in commands:
        r = CliRunner().invoke(cli, [*words, "--help"], terminal_width=120)
        assert r.exit_code == 0, r.output
        line = next(ln for ln in r.output.splitlines() if ln.strip().startswith("--engine"))
        # the option lists both choices (Spark stays one option away) and defaults to the in-process engine
        assert re.search(r"\[(spark\|local|local\|spark)\]", line) and "[default: local]" in line, (words, line)


@pytest.mark.dagster
def test_table_config_and_demo_default_to_local_and_in_process_executor(tmp_path: Path) -> None:
    import dagster as dg

    from lake_orchestration.dagster import HudiTableConfig, build_hudi_definitions
    from lake_orchestration.demo.definitions import build_demo_definitions

    assert HudiTableConfig(name="t", base_path="/d/t").engine == "local"
    assert HudiTableConfig(name="t", base_path="/d/t", engine="spark").engine == "spark"
    demo = build_demo_definitions(tmp_path, create=False)
    compaction = demo.resolve_assets_def(dg.AssetKey(["hudi", "demo_trips", "compaction"]))
    assert "pyspark" not in compaction.required_resource_keys
    assert "spark" not in next(iter(compaction.specs)).kinds
    # no process per step on the local engine: every job, and the UI's Materialize (the implicit asset job)
    for job in [*demo.jobs, demo.resolve_implicit_global_asset_job_def()]:
        job_def = demo.resolve_job_def(job.name)
        assert job_def.executor_def.name == "in_process", job.name
    # on Spark the jobs with an execute step keep a process per step; the light ones stay in-process
    spark = build_hudi_definitions(tables=[HudiTableConfig(name="t", base_path="/d/t", engine="spark")])
    executors = {j.name: spark.resolve_job_def(j.name).executor_def.name for j in spark.jobs}
    assert executors["t__compaction"] == executors["t__clean"] == "multi_or_in_process_executor"
    assert executors["t__schedule_compaction"] == executors["t__archive"] == executors["t__rollback"] == "in_process"
