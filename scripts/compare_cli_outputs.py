"""Compare ``lake-orch``'s outputs of two checkouts: every command's ``--help`` (from click's command tree) and the
text and ``--json`` outputs of the table commands on copies of the same fixture tables, with the instant times
passed explicitly where the command takes one (issue 24: the CLI's outputs byte-identical before/after the
consolidation, except named fixes).

    python scripts/compare_cli_outputs.py OLD_CHECKOUT NEW_CHECKOUT [--keep DIR]

e.g. ``git worktree add /tmp/wt-f9f4386 f9f4386`` and compare it with this checkout. Each checkout's code runs with
its folder first on ``PYTHONPATH`` (this interpreter: the project's venv), in one process per checkout that runs the
commands in turn through click's test runner (stdout, stderr and exit code kept apart), on tables copied to the
same path for both checkouts (so paths need no normalising). What must differ is normalised, the same for both:

- instant times made from the clock (a clean's, a rollback's, a bootstrap's, a write's; the fixtures' and the ones
  passed are from 2025): 17-digit times of the current year -> ``<NOW>``;
- wall times printed by a command (``1.23 s``, ``"seconds": 1.23``, ``"duration_s"``; the seconds since a commit a
  reason counts) -> ``<T>``; times in ms after the epoch (a savepoint's ``savepointed_at_ms``) -> ``<MS>``;
- random ids of a run (write tokens and file ids of files a command writes: UUIDs) -> ``<UUID>``.

Prints each command whose outputs differ, with a unified diff of the normalised outputs; exit 1 if any differ.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from datetime import datetime
from pathlib import Path

FIXTURES = Path(os.environ.get("LAKE_ORCH_FIXTURES", "/work/shared/fixtures/hudi-tables"))
TABLES = {
    "mor": "quickstart_trips_table/mor/avro/v6_trips_8i3d",
    "mor2": "sample_table/mor/parquet/v6_simplekeygen_nonhivestyle",
    "cow": "sample_table/cow/v6_complexkeygen_hivestyle",
    "rb": "sample_table/mor/parquet/v6_nonpartitioned_rollback",
}
"""Fixture tables copied for each checkout (name -> path under the fixtures, without ``.zip``)."""

T1, T2, T3, T4 = "20250701000000000", "20250702000000000", "20250703000000000", "20250704000000000"
COW_LATEST = "20240418173235694"
"""The COW fixture's latest commit (savepointed)."""
"""Instant times passed explicitly (after every fixture's)."""


def steps(work: Path, fmt: str) -> list[list[str]]:
    """The commands of one pass over fresh table copies; ``fmt`` ``text`` or ``json`` (``--json`` added to the
    commands that take it, by the driver)."""
    w = str(work / fmt)
    mor, mor2, cow, rb = (f"{w}/{n}" for n in ("mor", "mor2", "cow", "rb"))
    src = f"{w}/source"
    archive_opts = [
        "--option",
        "hoodie.keep.min.commits=2",
        "--option",
        "hoodie.keep.max.commits=3",
        "--option",
        "hoodie.cleaner.commits.retained=1",
    ]
    keep1 = [
        "--option",
        "hoodie.cleaner.policy=KEEP_LATEST_FILE_VERSIONS",
        "--option",
        "hoodie.cleaner.fileversions.retained=1",
    ]
    one = ["--option", "hoodie.compact.inline.max.delta.commits=1"]
    local = ["--engine", "local"]  # the same engine in both checkouts (the default changed, a named fix)
    return [
        # inspect
        ["table", "show", mor],
        ["table", "show", cow],
        ["timeline", "show", mor],
        ["timeline", "show", rb],
        ["timeline", "show", mor, "--archived"],
        ["fsview", "show", mor],
        ["fsview", "show", cow, "--all-slices"],
        ["read", mor, "--output", f"{w}/snapshot.parquet"],
        ["read", cow, "--output", f"{w}/as-of.parquet", "--as-of", "20240418173213674"],
        # compaction: show, schedule, show, run, show
        ["compaction", "show", mor],
        ["compaction", "schedule", mor, "--instant-time", T1],
        ["compaction", "schedule", mor, "--instant-time", T1, *one],
        ["compaction", "show", mor],
        ["compaction", "rollback", mor, "--instant-time", T1, "--dry-run"],
        ["compaction", "run", mor, "--instant-time", T1, *local],
        ["compaction", "run", mor, "--instant-time", T1, *local],
        ["compaction", "show", mor],
        ["timeline", "show", mor],
        ["compaction", "run", cow, *local],  # a COW table: refused
        # log compaction, then a compaction at a clock time (a MOR table with log files)
        [
            "log-compaction",
            "schedule",
            mor2,
            "--instant-time",
            T2,
            "--option",
            "hoodie.log.compaction.blocks.threshold=1",
        ],
        ["log-compaction", "run", mor2, "--option", "hoodie.log.compaction.blocks.threshold=1"],
        ["timeline", "show", mor2],
        ["compaction", "schedule", mor2, "--instant-time", T3, *one],
        ["compaction", "run", mor2, "--instant-time", T3, *local],
        # (not --schedule: a plan at a clock time writes files whose sizes vary with its digits)
        # savepoint, then clean (the COW table keeps two versions of a file group)
        ["savepoint", "show", cow],
        ["savepoint", "create", cow, "--instant-time", COW_LATEST, "--user", "u", "--comments", "c", "--dry-run"],
        ["savepoint", "create", cow, "--instant-time", COW_LATEST, "--user", "u", "--comments", "c"],
        ["savepoint", "show", cow],
        ["savepoint", "delete", cow, "--instant-time", COW_LATEST, "--dry-run"],
        ["savepoint", "delete", cow, "--instant-time", COW_LATEST],
        ["clean", cow, "--dry-run", *keep1],
        ["clean", cow, *keep1],
        ["clean", cow, *keep1],
        ["fsview", "show", cow, "--all-slices"],
        # archive
        ["archive", mor, "--dry-run"],
        ["archive", mor, *archive_opts, "--dry-run"],
        ["archive", mor, *archive_opts],
        ["timeline", "show", mor, "--archived"],
        # rollback: pending writes (made by the preparation: T3, T4, no heartbeat)
        ["rollback", rb, "--instant-time", T3, "--dry-run"],
        ["rollback", rb, "--instant-time", T3],
        ["rollback", rb, "--stale", "--timeout", "1m", "--dry-run"],
        ["rollback", rb, "--stale", "--timeout", "1m"],
        ["rollback", rb, "--instant-time", "20250126040823628"],  # completed: refused
        ["timeline", "show", rb],
        # metadata table
        ["metadata", "init", cow, "--dry-run"],
        # bootstrap from generated parquet (a fixed seed)
        ["generate", f"{src}/data.parquet", "--rows", "20", "--seed", "7"],
        [
            "bootstrap",
            f"{w}/boot",
            "--source-path",
            src,
            "--table-name",
            "boot",
            "--record-key",
            "uuid",
            "--precombine-field",
            "ts",
            "--dry-run",
        ],
        [
            "bootstrap",
            f"{w}/boot",
            "--source-path",
            src,
            "--table-name",
            "boot",
            "--record-key",
            "uuid",
            "--precombine-field",
            "ts",
            *local,
        ],
        ["table", "show", f"{w}/boot"],
        # errors: a missing table, bad storage options, a secret on the command line, a bad option key
        ["table", "show", f"{w}/missing"],
        ["table", "show", mor, "--storage-option", "replication=abc"],
        ["table", "show", mor, "--storage-option", "secret_key=abc"],
        ["table", "show", mor, "--storage-option", "region"],
        ["table", "show", mor, "--storage-option", "anonymous=yes"],
        ["clean", cow, "--option", "hoodie.cleaner.polcy=KEEP_LATEST_COMMITS"],
    ]


# -- the driver: runs in a checkout's code ---------------------------------------------------------------------------
def drive(spec: Path) -> None:
    """Run the commands of ``spec`` (JSON: a list of [name, args]) in this process; print JSON results."""
    import logging

    from click.testing import CliRunner

    import lake_orchestration
    from lake_orchestration.cli.app import cli

    results = {"package": lake_orchestration.__file__, "runs": []}
    for name, args in json.loads(spec.read_text()):
        logging.root.handlers.clear()  # cli() makes a handler on this invocation's stderr
        try:
            runner = CliRunner(mix_stderr=False)  # type: ignore[call-arg]  # click < 8.2
        except TypeError:
            runner = CliRunner()
        res = runner.invoke(cli, args, prog_name="lake-orch")
        err = res.stderr if res.stderr_bytes is not None else ""
        if res.exception is not None and not isinstance(res.exception, SystemExit):
            err += f"\n<uncaught {type(res.exception).__name__}: {res.exception}>"
        results["runs"].append({"name": name, "args": args, "exit": res.exit_code, "stdout": res.stdout, "stderr": err})
    print(json.dumps(results))


# -- the comparison --------------------------------------------------------------------------------------------------
def command_tree(checkout: Path) -> list[tuple[list[str], bool]]:
    """Every command of the checkout's click tree (its words), and whether it takes ``--json``."""
    code = (
        "import json, click\n"
        "from lake_orchestration.cli.app import cli\n"
        "out = []\n"
        "def walk(c, p):\n"
        "    out.append([p, any('--json' in getattr(o, 'opts', ()) for o in c.params)])\n"
        "    if isinstance(c, click.Group):\n"
        "        for n, s in sorted(c.commands.items()):\n"
        "            walk(s, p + [n])\n"
        "walk(cli, [])\n"
        "print(json.dumps(out))\n"
    )
    p = subprocess.run([sys.executable, "-c", code], env=_env(checkout), capture_output=True, text=True, check=True)
    return [(words, takes_json) for words, takes_json in json.loads(p.stdout)]


def _env(checkout: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "LAKE_ORCH_"))}
    env["PYTHONPATH"] = str(checkout)
    env["COLUMNS"] = "120"
    return env


def _prepare(work: Path) -> None:
    if work.exists():
        shutil.rmtree(work)
    for fmt in ("text", "json"):
        for name, rel in TABLES.items():
            dest = work / fmt / name
            with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(FIXTURES / f"{rel}.zip") as z:
                z.extractall(tmp)
                table = Path(tmp) / Path(rel).name
                shutil.copytree(table, dest)
        for t in (T3, T4):  # pending writes with no heartbeat, to roll back
            for suffix in ("deltacommit.requested", "deltacommit.inflight"):
                (work / fmt / "rb" / ".hoodie" / f"{t}.{suffix}").write_bytes(b"")
        (work / fmt / "source").mkdir()


def run_checkout(checkout: Path, work: Path) -> dict:
    tree = command_tree(checkout)
    json_commands = {tuple(words) for words, takes_json in tree if takes_json}
    todo: list[tuple[str, list[str]]] = [(" ".join(["lake-orch", *w, "--help"]), [*w, "--help"]) for w, _ in tree]
    _prepare(work)
    for fmt in ("text", "json"):
        for args in steps(work, fmt):
            words = tuple(a for a in args[:2] if not a.startswith(("/", "-")))
            if fmt == "json" and not any(words[:n] in json_commands for n in (1, 2)):
                continue  # no --json: its text output is compared in the text pass
            todo.append((f"{fmt}: {' '.join(args)}", args if fmt == "text" else [*args, "--json"]))
    spec = work / f"spec-{os.getpid()}.json"
    spec.write_text(json.dumps(todo))
    p = subprocess.run(
        [sys.executable, __file__, "--drive", str(spec)],
        env=_env(checkout),
        cwd=work,
        capture_output=True,
        text=True,
        check=False,
    )
    if p.returncode != 0:
        raise SystemExit(f"the driver failed in {checkout}:\n{p.stderr[-4000:]}")
    out = json.loads(p.stdout.splitlines()[-1])
    if not out["package"].startswith(str(checkout)):
        raise SystemExit(f"{checkout}: the driver imported {out['package']}, not the checkout's package")
    return out


_NOW = re.compile(r"(?<!\d)" + datetime.now().strftime("%Y") + r"\d{13}(?:\d{3})?(?!\d)")
_SECONDS = re.compile(r"\b\d+(?:\.\d+)? ?s\b|(\"(?:seconds|duration_s|elapsed_s|wall_s)\": )\d+(?:\.\d+)?")
_EPOCH_MS = re.compile(r"(?<!\d)1[78]\d{11}(?!\d)")
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?:-\d+)?\b")


def normalise(text: str) -> str:
    text = _NOW.sub("<NOW>", text)
    text = _UUID.sub("<UUID>", text)
    text = _EPOCH_MS.sub("<MS>", text)
    return _SECONDS.sub(lambda m: f"{m.group(1)}<T>" if m.group(1) else "<T>", text)


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--drive":
        drive(Path(sys.argv[2]))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("--keep", type=Path, default=None, help="write each checkout's raw results (JSON) here")
    a = ap.parse_args()
    work = Path(tempfile.gettempdir()) / "lake-orch-cli-compare"
    results = {}
    for label, checkout in (("old", a.old.resolve()), ("new", a.new.resolve())):
        results[label] = run_checkout(checkout, work)
        if a.keep:
            a.keep.mkdir(parents=True, exist_ok=True)
            (a.keep / f"{label}.json").write_text(json.dumps(results[label], indent=1))
    shutil.rmtree(work, ignore_errors=True)
    old = {r["name"]: r for r in results["old"]["runs"]}
    new = {r["name"]: r for r in results["new"]["runs"]}
    differ = 0
    for name in list(old) + [n for n in new if n not in old]:
        if name not in new or name not in old:
            print(f"== {name}: only in {'old' if name in old else 'new'}")
            differ += 1
            continue
        o, n = old[name], new[name]
        parts = []
        if o["exit"] != n["exit"]:
            parts.append(f"exit code {o['exit']} -> {n['exit']}\n")
        for stream in ("stdout", "stderr"):
            a_, b_ = normalise(o[stream]), normalise(n[stream])
            if a_ != b_:
                parts.append(
                    "".join(
                        difflib.unified_diff(
                            a_.splitlines(keepends=True),
                            b_.splitlines(keepends=True),
                            f"old {stream}",
                            f"new {stream}",
                            n=1,
                        )
                    )
                )
        if parts:
            differ += 1
            print(f"== {name}")
            for p in parts:
                print(p if p.endswith("\n") else p + "\n", end="")
    total = len(set(old) | set(new))
    print(f"{total} command runs compared, {differ} differ")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
