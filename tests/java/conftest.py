"""Java Hudi in the loop: the reference implementation (Hudi's Spark bundle from Maven Central on PySpark 3.5) as an
oracle, driven out of process (:mod:`tests.java.harness`). No Java, no Maven or a failed download: a failure in CI
(``LAKE_ORCH_REQUIRE_SHARED=1``), a skip with the reason in a user's clone.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from tests.conftest import REQUIRE_SHARED
from tests.java.harness import HUDI_VERSION, JavaHudi, start_java_hudi


def skip_or_fail(reason: str) -> NoReturn:
    if REQUIRE_SHARED:
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def java_hudi(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaHudi]:
    """The test run's Java Hudi 0.15 session (one JVM for every module: starting one costs ~15 s)."""
    java = start_java_hudi(tmp_path_factory.mktemp("java-hudi"), on_missing=skip_or_fail)
    yield java
    java.close()


# -- Java-written histories, shared by the module's cells (each cell works on a private copy) ---------------------


@pytest.fixture(scope="session")
def java_histories(java_hudi: JavaHudi, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """``get(shape, table_type)`` -> the Java-written history of that shape and type (built once per run; read-only:
    take a private copy with :func:`java_table`)."""
    from tests.java.interop import java_history

    built: dict[tuple[str, str], Any] = {}

    def get(shape: Any, table_type: Any) -> Any:
        key = (shape.name, table_type.value)
        if key not in built:
            root = tmp_path_factory.mktemp(f"java-{table_type.value}-{shape.name.replace(' ', '-')}")
            built[key] = java_history(java_hudi, root / "t", shape, table_type)
        return built[key]

    return get


@pytest.fixture
def java_table(java_histories, tmp_path: Path):  # type: ignore[no-untyped-def]
    """``java_table(shape, table_type)`` -> a private copy of the Java-written history the test may change."""

    def get(shape: Any, table_type: Any) -> Any:
        return java_histories(shape, table_type).copy(tmp_path / "t")

    return get


# -- the interop matrix: each cell's outcome, rendered as docs/interop.md ------------------------------------------

_CELLS: list[dict[str, str]] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    marker = item.get_closest_marker("interop")
    if marker is None or report.when not in ("setup", "call"):
        return
    if report.when == "setup" and report.passed:
        return
    status = "passed" if report.passed else ("skipped" if report.skipped else "failed")
    if report.outcome == "skipped" and hasattr(report, "wasxfail"):
        status = "xfail (known gap)"
    cell = {**marker.kwargs, "test": item.nodeid, "status": status, "version": HUDI_VERSION}
    cell["table"] = " ".join(filter(None, [marker.kwargs.get("table", ""), _param_description(item)]))
    _CELLS.append(cell)


def _param_description(item: pytest.Item) -> str:
    """The cell's parameters as words: a table type's value, a shape's name, else the value."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    words = []
    for value in params.values():
        if isinstance(value, enum.Enum):
            words.append(str(value.value))
        else:
            words.append(str(getattr(value, "name", value)))
    return " ".join(words)


def pytest_sessionfinish(session: pytest.Session) -> None:
    target = os.environ.get("LAKE_ORCH_INTEROP_DOC")
    if target and _CELLS:
        from tests.java.matrix_doc import render

        Path(target).write_text(render(_CELLS))
