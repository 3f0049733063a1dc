"""Dagster tests: the code location's config variable never leaks in from the developer's shell."""

import pytest


@pytest.fixture(autouse=True)
def _no_location_config(monkeypatch: pytest.MonkeyPatch) -> None:
    # tests/conftest.py drops LAKE_ORCH_* variables; LAKE_ORCHESTRATION_CONFIG does not match that prefix
    monkeypatch.delenv("LAKE_ORCHESTRATION_CONFIG", raising=False)


# the pypaimon oracle (its own cached venv) for tests/dagster/test_paimon_dagster.py
from tests.paimon.conftest import pypaimon, pypaimon_python  # noqa: E402, F401
