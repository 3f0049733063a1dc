"""Property tests: timeline ordering (total, as Hudi's ``HoodieInstant.COMPARATOR``) and loading from listings."""

from __future__ import annotations

from datetime import datetime

from hypothesis import given
from hypothesis import strategies as st

from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, State
from lake_orchestration.hudi.model.timeline import Timeline

VALID_ACTION_STATES = [
    (a, s)
    for a in Action
    for s in State
    if not (s is State.COMPLETED and a in (Action.COMPACTION, Action.LOG_COMPACTION))
    and not (a is Action.SAVEPOINT and s is State.REQUESTED)
]

# HoodieInstant.getComparableAction and the State enum order, written out independently of instant.py.
_COMPARABLE = {"compaction": "commit", "logcompaction": "deltacommit"}
_STATE_RANK = {State.REQUESTED: 0, State.INFLIGHT: 1, State.COMPLETED: 2}


def hudi_key(i: Instant) -> tuple[str, str, int]:
    """``COMPARATOR = comparing(timestamp).thenComparing(comparable action).thenComparing(state)``."""
    return (str(i.time), _COMPARABLE.get(i.action.value, i.action.value), _STATE_RANK[i.state])


# A small pool of times so that equal timestamps (and so the action/state tie-breaks) are common.
times = st.sampled_from(
    ["20240101000000000", "20240101000000001", "20240101000000", "20240101000001000", "20231231235959999"]
)
instants = st.builds(
    lambda t, a_s: Instant(InstantTime(t), a_s[0], a_s[1]), times, st.sampled_from(VALID_ACTION_STATES)
)


@given(instants, instants)
def test_instant_order_total_exactly_one_relation(a: Instant, b: Instant) -> None:
    lt, gt = a < b, b < a
    same_key = hudi_key(a) == hudi_key(b)
    assert [lt, gt, same_key].count(True) == 1
    if a == b:
        assert same_key
    assert lt == (hudi_key(a) < hudi_key(b))


@given(instants, instants, instants)
def test_instant_order_transitive(a: Instant, b: Instant, c: Instant) -> None:
    if a < b and b < c:
        assert a < c
    if a <= b and b <= c and hudi_key(a) == hudi_key(c):
        assert hudi_key(a) == hudi_key(b)


@given(st.lists(instants, max_size=12))
def test_timeline_of_sorted_order_matches_hudi_comparator(items: list[Instant]) -> None:
    tl = Timeline.of(items)
    assert [hudi_key(i) for i in tl.instants] == sorted(hudi_key(i) for i in items)


def test_instant_order_compaction_sorts_as_commit_between_clean_and_deltacommit() -> None:
    t = InstantTime("20240101000000000")
    clean = Instant(t, Action.CLEAN, State.COMPLETED)
    compaction = Instant(t, Action.COMPACTION, State.INFLIGHT)
    commit = Instant(t, Action.COMMIT, State.COMPLETED)
    delta = Instant(t, Action.DELTA_COMMIT, State.REQUESTED)
    assert sorted([delta, commit, clean, compaction]) == [clean, compaction, commit, delta]


# -- loading from a listing -----------------------------------------------------------------------------------
def _states_of(action: Action) -> list[tuple[Action, State]]:
    """The files an instant of ``action`` goes through, in order (compactions complete as commits)."""
    done = {Action.COMPACTION: Action.COMMIT, Action.LOG_COMPACTION: Action.DELTA_COMMIT}.get(action, action)
    seq = [] if action is Action.SAVEPOINT else [(action, State.REQUESTED)]
    return [*seq, (action, State.INFLIGHT), (done, State.COMPLETED)]


@st.composite
def listings(draw: st.DrawFn) -> tuple[list[str], dict[tuple[str, str], Instant], list[str]]:
    n = draw(st.integers(0, 8))
    secs = draw(st.lists(st.integers(0, 10**6), min_size=n, max_size=n, unique=True))
    names: list[str] = []
    expected: dict[tuple[str, str], Instant] = {}
    for s in secs:
        ts = (datetime(2024, 1, 1).timestamp() + s)
        d = datetime.fromtimestamp(ts)
        t = f"{d:%Y%m%d%H%M%S}{draw(st.integers(0, 999)):03d}"
        action = draw(st.sampled_from(list(Action)))
        steps = _states_of(action)
        reached = draw(st.integers(1, len(steps)))
        for a, s_ in steps[:reached]:
            names.append(Instant(InstantTime(t), a, s_).file_name)
        a, s_ = steps[reached - 1]
        expected[(t, _COMPARABLE.get(a.value, a.value))] = Instant(InstantTime(t), a, s_)
    noise = draw(st.lists(st.sampled_from(["hoodie.properties", "notes.txt", "x.commit.crc", "README"]), unique=True))
    names += noise
    return names, expected, sorted(set(noise) - {"hoodie.properties"})


@given(listings(), st.randoms(use_true_random=False))
def test_timeline_from_file_names_any_listing_order_keeps_latest_state(data, rnd) -> None:  # type: ignore[no-untyped-def]
    names, expected, ignored = data
    shuffled = list(names)
    rnd.shuffle(shuffled)
    tl = Timeline.from_file_names(shuffled)
    assert tl == Timeline.from_file_names(sorted(names)) == Timeline.from_file_names(list(reversed(names)))
    assert list(tl.instants) == sorted(expected.values(), key=hudi_key)
    assert {(str(i.time), _COMPARABLE.get(i.action.value, i.action.value)): i for i in tl.instants} == expected
    assert list(tl.ignored_files) == ignored
