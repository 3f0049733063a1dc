"""The hollow-commit policy (``hoodie.read.timeline.holes.resolution.policy``, Java's
``TimelineUtils.handleHollowCommitIfNeeded``) and bad input of incremental queries."""

from __future__ import annotations

from pathlib import Path

import pytest

from lake_orchestration.errors import InvalidOptionError
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, State
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.incremental import HollowCommitError, read_incremental
from tests.hudi.table.test_incremental_fixtures import hudi_rs_incremental
from tests.oracle import assert_same_rows
from tests.trips import trips_options, write_trips_history

POLICY = "hoodie.read.timeline.holes.resolution.policy"


@pytest.fixture(scope="module")
def hollow(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], str]:
    """A COW table with three commits c0 < c1 < c2 and a deltacommit requested between c1 and c2 still inflight (a
    concurrent writer that has not finished): a hollow commit."""
    path = tmp_path_factory.mktemp("hollow") / "t"
    write_trips_history(path, trips_options(table_type=TableType.COPY_ON_WRITE), rows=30, upserts=2, fraction=0.3)
    t = HudiTable(str(path))
    times = sorted(str(i.time) for i in t.timeline.completed_commits())
    hole = InstantTime(str(int(times[1]) + 1))
    assert hole < times[2]
    req = t.create_requested(Instant(hole, Action.COMMIT, State.REQUESTED))
    t.transition_to_inflight(req, b"")
    return path, times, str(hole)


def test_hollow_commit_fails_by_default_naming_it_and_the_policies(hollow) -> None:  # type: ignore[no-untyped-def]
    path, times, hole = hollow
    with pytest.raises(HollowCommitError) as err:
        read_incremental(HudiTable(str(path)), begin_instant_time="0")
    msg = str(err.value)
    assert hole in msg and times[2] in msg and str(path) in msg and f"{POLICY}=BLOCK" in msg, msg


def test_hollow_commit_block_reads_up_to_it_and_checkpoints_before_it(hollow) -> None:  # type: ignore[no-untyped-def]
    path, times, _hole = hollow
    got = read_incremental(HudiTable(str(path)), begin_instant_time="0", options={POLICY: "BLOCK"})
    assert [str(i.time) for i in got.instants] == times[:2]
    assert got.checkpoint == times[1]
    assert_same_rows(got.table, hudi_rs_incremental(path, "0", times[1]))
    # resuming from the checkpoint returns nothing until the hollow commit completes
    again = read_incremental(HudiTable(str(path)), begin_instant_time=got.checkpoint, options={POLICY: "BLOCK"})
    assert again.num_rows == 0 and again.checkpoint == times[1]


def test_hollow_commit_use_transition_time_selects_by_completion(hollow) -> None:  # type: ignore[no-untyped-def]
    path, times, _hole = hollow
    got = read_incremental(HudiTable(str(path)), begin_instant_time="0", options={POLICY: "USE_TRANSITION_TIME"})
    assert [str(i.time) for i in got.instants] == times
    assert_same_rows(got.table, hudi_rs_incremental(path, "0", None))
    # the checkpoint is a completion time: the last commit completed at or after it was requested
    assert got.checkpoint >= times[2]
    after = read_incremental(
        HudiTable(str(path)), begin_instant_time=got.checkpoint, options={POLICY: "USE_TRANSITION_TIME"}
    )
    assert after.num_rows == 0 and not after.instants


@pytest.mark.parametrize(
    ("begin", "options", "match"),
    [
        ("yesterday", {}, r"hoodie\.datasource\.read\.begin\.instanttime='yesterday'"),
        ("0", {POLICY: "SKIP"}, r"hoodie\.read\.timeline\.holes\.resolution\.policy='SKIP'.*BLOCK"),
    ],
)
def test_incremental_bad_input_names_key_and_value(hollow, begin: str, options: dict[str, str], match: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidOptionError, match=match):
        read_incremental(HudiTable(str(hollow[0])), begin_instant_time=begin, options=options)
