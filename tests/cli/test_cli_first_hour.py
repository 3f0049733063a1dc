"""The user's first hour with ``lake-orch``, as a real process: a typo in an option key is refused with the closest
key instead of silently keeping the default, ``--option-passthrough`` passes a key we do not model on purpose."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from lake_orchestration.cli.app import cli
from lake_orchestration.config.keys import HoodieKey
from tests.forkserver import ForkServer

CREATE = ["--table-name", "t", "--record-key", "uuid", "--precombine-field", "ts", "--partition-field", "city"]


_FORKS: list[ForkServer] = []


@pytest.fixture(scope="module", autouse=True)
def _fork_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The module's :mod:`tests.forkserver`: the CLI's imports paid once, each ``lake-orch`` a forked child of it."""
    forks = ForkServer(
        sys.executable, ["--import", "lake_orchestration.cli.app"], tmp_path_factory.mktemp("forks") / "log"
    )
    _FORKS.append(forks)
    yield
    _FORKS.remove(forks)
    forks.close()


def lake_orch(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``lake-orch ARGS`` in a new process (the installed entry point's module, ``python -m``; a forked child of the
    module's fork server, which imported it once)."""
    (forks,) = _FORKS
    return forks.run(
        args, module="lake_orchestration.cli.app", env=dict(os.environ), cwd=cwd or os.getcwd(), timeout=300
    )


@pytest.fixture
def mor_table(tmp_path: Path) -> Path:
    """A MERGE_ON_READ table with two delta commits (written in-process: the processes under test come after)."""
    runner = CliRunner()
    data, table = tmp_path / "in.parquet", tmp_path / "t"
    assert runner.invoke(cli, ["generate", str(data), "--rows", "40", "--partitions", "2"]).exit_code == 0
    for extra in (CREATE, []):
        r = runner.invoke(cli, ["write", str(table), "--input", str(data), *extra])
        assert r.exit_code == 0, r.output
    return table


def _requested_compactions(table: Path) -> list[str]:
    return sorted(p.name for p in (table / ".hoodie").glob("*.compaction.requested"))


def test_compaction_schedule_option_typo_refused_with_hint_nothing_written(mor_table: Path) -> None:
    typo = "hoodie.compact.inline.max.delta.commit"  # 'commits' is Hudi's key
    r = lake_orch("compaction", "schedule", str(mor_table), "--option", f"{typo}=1")
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stdout == ""
    (line,) = r.stderr.splitlines()
    assert line.startswith(
        f"Error: Unknown Hudi option '{typo}' (did you mean {HoodieKey.COMPACT_MAX_DELTA_COMMITS.key}?)"
    )
    assert "in --option" in line and "--option-passthrough KEY=VALUE" in line
    assert _requested_compactions(mor_table) == []
    # the right key takes effect: 2 delta commits >= 1
    r = lake_orch("compaction", "schedule", str(mor_table), "--option", f"{HoodieKey.COMPACT_MAX_DELTA_COMMITS.key}=1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Scheduled compaction ") and len(_requested_compactions(mor_table)) == 1


def test_option_passthrough_accepts_an_unmodelled_key_and_write_stores_a_table_key(tmp_path: Path) -> None:
    runner = CliRunner()
    data, table = tmp_path / "in.parquet", tmp_path / "t"
    assert runner.invoke(cli, ["generate", str(data), "--rows", "10"]).exit_code == 0
    key = "hoodie.table.my.site.tag"
    r = lake_orch("write", str(table), "--input", str(data), *CREATE, "--option", f"{key}=x")
    assert r.returncode == 1 and f"Unknown Hudi option '{key}'" in r.stderr, r.stderr
    assert not table.exists()
    r = lake_orch("write", str(table), "--input", str(data), *CREATE, "--option-passthrough", f"{key}=x", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["inserted"] == 10
    assert f"{key}=x" in (table / ".hoodie" / "hoodie.properties").read_text().splitlines()
    # a real Hudi key we accept without reading (a Java writer's config) needs no escape
    r = lake_orch("clean", str(table), "--dry-run", "--option", "hoodie.clean.automatic=false")
    assert r.returncode == 0, r.stderr


def test_every_command_with_option_has_option_passthrough() -> None:
    def leaves(group: click.Group) -> list[click.Command]:
        out: list[click.Command] = []
        for cmd in group.commands.values():
            out.extend(leaves(cmd) if isinstance(cmd, click.Group) else [cmd])
        return out

    names = [{o for p in c.params for o in getattr(p, "opts", ())} for c in leaves(cli)]
    with_option = [n for n in names if "--option" in n]
    assert with_option and all("--option-passthrough" in n for n in with_option)


# -- progress and silence ------------------------------------------------------------------------------------------
def _no_java_env() -> dict[str, str]:
    """This environment with a JAVA_HOME that does not exist: a command that starts a Spark JVM fails."""
    import os

    return {**os.environ, "JAVA_HOME": "/nonexistent-java-home"}


SPARK = ("--engine", "spark")
"""Spark is one option away from the in-process default."""


def test_compaction_run_spark_nothing_pending_answers_without_starting_spark(mor_table: Path) -> None:
    for extra, expected in (([], "No pending compaction plan\n"), (["--json"], "[]\n")):
        r = subprocess.run(
            [sys.executable, "-m", "lake_orchestration.cli.app", "compaction", "run", str(mor_table), *SPARK, *extra],
            capture_output=True,
            text=True,
            check=False,
            env=_no_java_env(),
            timeout=300,
        )
        assert (r.returncode, r.stdout) == (0, expected), r.stderr[-2000:]
        assert r.stderr == ""


def test_clean_spark_nothing_to_clean_answers_without_starting_spark(mor_table: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "lake_orchestration.cli.app", "clean", str(mor_table), "--engine", "spark"],
        capture_output=True,
        text=True,
        check=False,
        env=_no_java_env(),
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("No clean: "), r.stdout


def test_compaction_run_progress_on_stderr_result_alone_on_stdout(mor_table: Path) -> None:
    r = lake_orch("compaction", "schedule", str(mor_table), "--force")
    assert r.returncode == 0, r.stderr
    instant = r.stdout.split()[2]
    r = lake_orch("compaction", "run", str(mor_table), "--engine", "local", "--json")
    assert r.returncode == 0, r.stderr
    (result,) = json.loads(r.stdout)  # stdout: the JSON document only
    groups = result["operations"]
    lines = r.stderr.splitlines()  # not a terminal: one plain line per record
    assert lines[0] == (
        f"Compacting {instant}: {groups} operation(s), {groups} file group(s) in 2 partition(s), "
        "engine local (in-process)"
    )
    assert [x.split(" merged ")[0] for x in lines[1:]] == [
        f"Compaction {instant}: file group {n}/{groups}" for n in range(1, groups + 1)
    ]


def test_progress_handler_rewrites_one_line_on_a_terminal() -> None:
    import io
    import logging

    from lake_orchestration.cli.progress import PROGRESS_LOGGER, progress_on_stderr

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Tty()
    log = logging.getLogger(f"{PROGRESS_LOGGER}.compaction")
    with progress_on_stderr(stream):
        log.info("Compacting 1: 2 operation(s)")
        log.info("file group 1/2", extra={"progress_line": True})
        log.info("file group 2/2", extra={"progress_line": True})
    assert stream.getvalue() == "Compacting 1: 2 operation(s)\n\r\x1b[Kfile group 1/2\r\x1b[Kfile group 2/2\n"
    log.info("not shown outside the command")
    assert stream.getvalue().endswith("2/2\n")


def test_compaction_run_on_copy_on_write_refused_as_schedule_refuses(tmp_path: Path) -> None:
    runner = CliRunner()
    data, table = tmp_path / "in.parquet", tmp_path / "cow"
    assert runner.invoke(cli, ["generate", str(data), "--rows", "10"]).exit_code == 0
    r = runner.invoke(cli, ["write", str(table), "--input", str(data), *CREATE, "--table-type", "COPY_ON_WRITE"])
    assert r.exit_code == 0, r.output
    schedule = lake_orch("compaction", "schedule", str(table))
    run = lake_orch("compaction", "run", str(table), "--engine", "local")
    assert schedule.returncode == run.returncode == 1
    assert run.stdout == ""
    assert run.stderr == schedule.stderr == f"Error: Compaction needs a MERGE_ON_READ table; {table} is COPY_ON_WRITE\n"


def test_batch_without_is_deleted_accepted_after_a_batch_with_deletes(tmp_path: Path) -> None:
    """``generate --delete-fraction`` adds ``_hoodie_is_deleted`` to the table's schema; the next batch without the
    column used to be refused as missing a column. Hudi's payloads read a missing flag as "not deleted"."""
    import pyarrow.parquet as pq

    from lake_orchestration.hudi.table import HudiTable
    from tests.oracle import hudi_rs_snapshot

    runner = CliRunner()
    g1, g2, g3 = (tmp_path / f"g{i}.parquet" for i in (1, 2, 3))
    table = tmp_path / "t"
    assert runner.invoke(cli, ["generate", str(g1), "--rows", "60", "--partitions", "2"]).exit_code == 0
    assert runner.invoke(cli, ["write", str(table), "--input", str(g1), *CREATE]).exit_code == 0
    args = ["--from", str(g1), "--update-fraction", "0.1", "--delete-fraction", "0.2", "--seed", "3"]
    assert runner.invoke(cli, ["generate", str(g2), *args]).exit_code == 0
    assert runner.invoke(cli, ["write", str(table), "--input", str(g2)]).exit_code == 0
    with_flag = HudiTable(str(table)).latest_schema()
    assert "_hoodie_is_deleted" in [f["name"] for f in with_flag["fields"]]
    args = ["--from", str(g1), "--update-fraction", "0.3", "--seed", "4"]
    assert runner.invoke(cli, ["generate", str(g3), *args]).exit_code == 0
    assert "_hoodie_is_deleted" not in pq.read_schema(g3).names
    r = lake_orch("write", str(table), "--input", str(g3))
    assert r.returncode == 0, r.stderr
    assert HudiTable(str(table)).latest_schema() == with_flag  # the table's schema is kept
    expected = {row["uuid"]: row["fare"] for row in pq.read_table(g1).to_pylist()}
    for batch in (g2, g3):
        for row in sorted(pq.read_table(batch).to_pylist(), key=lambda x: x["ts"]):
            if row.get("_hoodie_is_deleted"):
                expected.pop(row["uuid"], None)
            else:
                expected[row["uuid"]] = row["fare"]
    got = hudi_rs_snapshot(table)
    assert dict(zip(got.column("uuid").to_pylist(), got.column("fare").to_pylist(), strict=True)) == expected


# -- S3 without credentials ----------------------------------------------------------------------------------------
@pytest.fixture
def denying_s3() -> Iterator[str]:
    """An S3 endpoint on 127.0.0.1 that answers every request 403 AccessDenied, as S3 answers an unsigned request
    for a private bucket; yields its URL."""
    import http.server
    import threading

    class Deny(http.server.BaseHTTPRequestHandler):
        def _deny(self) -> None:
            body = b"<?xml version='1.0'?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"
            self.send_response(403)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _deny

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Deny)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join()


def test_s3_access_denied_without_credentials_says_so_and_names_the_ways(denying_s3: str, tmp_path: Path) -> None:
    import os

    clean = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    clean.update(HOME=str(tmp_path), AWS_EC2_METADATA_DISABLED="true")  # no ~/.aws, no instance metadata
    argv = [sys.executable, "-m", "lake_orchestration.cli.app", "table", "show", "s3://bucket/trips"]
    argv += ["--storage-option", f"endpoint_override={denying_s3}", "--storage-option", "region=us-east-1"]

    def run(env: dict[str, str]) -> str:
        r = subprocess.run(argv, capture_output=True, text=True, check=False, env=env, timeout=300)
        assert r.returncode == 1 and r.stdout == ""
        (line,) = r.stderr.splitlines()
        assert line.startswith("Error: ") and "ACCESS_DENIED" in line and "s3://bucket/trips" in line, line
        return line

    line = run(clean)
    assert "no AWS credentials are configured" in line
    assert "AWS_ACCESS_KEY_ID" in line and "--storage-options-file" in line
    # with credentials the store's refusal is the whole story: no hint (and no secret in the message)
    line = run({**clean, "AWS_ACCESS_KEY_ID": "AKIAFIRSTHOUR", "AWS_SECRET_ACCESS_KEY": "not-a-real-secret"})
    assert "no AWS credentials" not in line and "not-a-real-secret" not in line


@pytest.mark.spark
def test_compaction_run_on_spark_reports_start_and_spark_task_progress(mor_table: Path) -> None:
    """On Spark the file groups are Spark tasks: the status tracker's counts are the progress (not a terminal:
    plain lines), stdout holds only the result."""
    r = lake_orch("compaction", "schedule", str(mor_table), "--force")
    assert r.returncode == 0, r.stderr
    instant = r.stdout.split()[2]
    r = lake_orch("compaction", "run", str(mor_table), "--engine", "spark", "--spark-master", "local[2]")
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.startswith(f"Committed compaction {instant}: ") and len(r.stdout.splitlines()) == 1
    lines = r.stderr.splitlines()
    assert f"Compacting {instant}: 2 operation(s), 2 file group(s) in 2 partition(s), engine spark" in lines
    stages = [x for x in lines if x.startswith("Compaction: Spark stage ")]
    assert stages and stages[-1].endswith(" task(s) done"), lines
    done, total = stages[-1].split(": ")[-1].split()[0].split("/")
    assert done == total  # the last stage's final count is reported
