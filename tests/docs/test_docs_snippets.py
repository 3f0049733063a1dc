"""The docs stay true: every snippet runs, every snippet reference resolves, the generated page is current."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.forkserver import ForkServer

REPO_ROOT = Path(__file__).resolve().parents[2]
DOCS = REPO_ROOT / "docs"
SNIPPETS = DOCS / "snippets"
# pymdownx.snippets block or inline form: --8<-- "name.py" or --8<-- "name.py:section"
_SNIPPET_REF = re.compile(r"""--8<--\s*["']([^"']+)["']""")


def _snippet_params() -> list[object]:
    params: list[object] = []
    for p in sorted(SNIPPETS.glob("*.py")):
        # Snippets that start a SparkSession carry the Spark tier's marker.
        marks = [pytest.mark.spark, pytest.mark.slow] if "spark" in p.stem else []
        params.append(pytest.param(p, id=p.stem, marks=marks))
    return params


def test_snippets_exist() -> None:
    assert sorted(SNIPPETS.glob("*.py")), f"no snippets under {SNIPPETS}"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return env


_PRELOAD = (
    "pyarrow.parquet",
    "lake_orchestration.hudi.write",
    "lake_orchestration.datagen",
    "lake_orchestration.dagster",
)
"""What most snippets import (~1.5 s of CPU, ~3.5 s with Dagster): imported once by the fork server."""


@pytest.fixture(scope="module")
def snippet_runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ForkServer]:
    """Each snippet runs as ``python snippet.py TMP`` would, as a process of its own: a forked child of a server
    that imported :data:`_PRELOAD` once (tests/forkserver.py). A Spark snippet's child starts its own JVM."""
    preload = [x for m in _PRELOAD for x in ("--import", m)]
    server = ForkServer(sys.executable, preload, tmp_path_factory.mktemp("snippets") / "server.log", _env(), REPO_ROOT)
    yield server
    server.close()


@pytest.mark.parametrize("snippet", _snippet_params())
def test_snippet_runs_standalone(snippet: Path, tmp_path: Path, snippet_runner: ForkServer) -> None:
    proc = snippet_runner.run([str(tmp_path)], script=snippet, env=_env(), cwd=REPO_ROOT, timeout=600)
    assert proc.returncode == 0, (
        f"{snippet.relative_to(REPO_ROOT)} exited {proc.returncode}\n"
        f"--- stdout ---\n{proc.stdout[-4000:]}\n--- stderr ---\n{proc.stderr[-4000:]}"
    )


def _references() -> list[tuple[Path, str]]:
    refs = []
    for page in sorted(DOCS.rglob("*.md")):
        for m in _SNIPPET_REF.finditer(page.read_text()):
            refs.append((page, m.group(1)))
    return refs


def test_every_snippet_reference_names_an_existing_snippet() -> None:
    refs = _references()
    assert refs, "no --8<-- references in docs/**/*.md"
    problems = []
    for page, ref in refs:
        name, _, section = ref.partition(":")
        target = SNIPPETS / name
        where = f"{page.relative_to(REPO_ROOT)}: --8<-- {ref!r}"
        if not target.is_file():
            problems.append(f"{where} -> {target.relative_to(REPO_ROOT)} does not exist")
        elif section and not section.isdigit():
            text = target.read_text()
            # pymdownx.snippets only sees section markers written after its own marker: --8<-- [start:name]
            if f"--8<-- [start:{section}]" not in text or f"--8<-- [end:{section}]" not in text:
                problems.append(f"{where} -> section {section!r} is not marked in {name}")
    assert not problems, "\n".join(problems)


def test_every_snippet_is_used_by_a_page() -> None:
    used = {ref.partition(":")[0] for _, ref in _references()}
    unused = sorted(p.name for p in SNIPPETS.glob("*.py") if p.name not in used)
    assert not unused, f"snippets no page includes: {unused}"


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_config_keys", DOCS / "gen_config_keys.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_config_keys_page_is_generated_and_current() -> None:
    page = DOCS / "reference" / "config-keys.md"
    expected = _load_generator().render()
    assert page.is_file(), f"{page} missing: run python docs/gen_config_keys.py"
    assert page.read_text() == expected, f"{page} is out of date: run python docs/gen_config_keys.py"


def test_config_keys_page_lists_every_key() -> None:
    from lake_orchestration.config.keys import HoodieKey

    text = (DOCS / "reference" / "config-keys.md").read_text()
    missing = [m.key for m in HoodieKey if f"`{m.key}`" not in text]
    assert not missing, f"keys missing from the page: {missing}"
