"""Property tests: instant times, timeline file names, base/log file names — ``parse(format(x)) == x``."""

from __future__ import annotations

import uuid
from datetime import datetime

import pendulum
from hypothesis import given, settings
from hypothesis import strategies as st

from lake_orchestration.hudi.model.file_group import BaseFile, LogFile, make_write_token
from lake_orchestration.hudi.model.instant import (
    FULL_BOOTSTRAP_INSTANT,
    INIT_INSTANT,
    METADATA_BOOTSTRAP_INSTANT,
    Action,
    Instant,
    InstantTime,
    State,
)

# Every (action, state) pair that has a v6 timeline file name. A completed compaction is a commit and a completed
# log compaction a deltacommit; a savepoint has no requested state.
VALID_ACTION_STATES: list[tuple[Action, State]] = [
    (a, s)
    for a in Action
    for s in State
    if not (s is State.COMPLETED and a in (Action.COMPACTION, Action.LOG_COMPACTION))
    and not (a is Action.SAVEPOINT and s is State.REQUESTED)
]

# What Hudi 0.14 calls each file (HoodieTimeline.*_EXTENSION): written out by hand, independent of instant.py.
EXPECTED_SUFFIX = {
    (Action.COMMIT, State.REQUESTED): "commit.requested",
    (Action.COMMIT, State.INFLIGHT): "inflight",
    (Action.COMMIT, State.COMPLETED): "commit",
    (Action.DELTA_COMMIT, State.REQUESTED): "deltacommit.requested",
    (Action.DELTA_COMMIT, State.INFLIGHT): "deltacommit.inflight",
    (Action.DELTA_COMMIT, State.COMPLETED): "deltacommit",
    (Action.COMPACTION, State.REQUESTED): "compaction.requested",
    (Action.COMPACTION, State.INFLIGHT): "compaction.inflight",
    (Action.LOG_COMPACTION, State.REQUESTED): "logcompaction.requested",
    (Action.LOG_COMPACTION, State.INFLIGHT): "logcompaction.inflight",
    (Action.REPLACE_COMMIT, State.REQUESTED): "replacecommit.requested",
    (Action.REPLACE_COMMIT, State.INFLIGHT): "replacecommit.inflight",
    (Action.REPLACE_COMMIT, State.COMPLETED): "replacecommit",
    (Action.CLEAN, State.REQUESTED): "clean.requested",
    (Action.CLEAN, State.INFLIGHT): "clean.inflight",
    (Action.CLEAN, State.COMPLETED): "clean",
    (Action.ROLLBACK, State.REQUESTED): "rollback.requested",
    (Action.ROLLBACK, State.INFLIGHT): "rollback.inflight",
    (Action.ROLLBACK, State.COMPLETED): "rollback",
    (Action.SAVEPOINT, State.INFLIGHT): "savepoint.inflight",
    (Action.SAVEPOINT, State.COMPLETED): "savepoint",
    (Action.RESTORE, State.REQUESTED): "restore.requested",
    (Action.RESTORE, State.INFLIGHT): "restore.inflight",
    (Action.RESTORE, State.COMPLETED): "restore",
    (Action.INDEXING, State.REQUESTED): "indexing.requested",
    (Action.INDEXING, State.INFLIGHT): "indexing.inflight",
    (Action.INDEXING, State.COMPLETED): "indexing",
}

# Realistic calendar range (Hudi instants are generated from the wall clock).
datetimes_ms = st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59)).map(
    lambda d: d.replace(microsecond=(d.microsecond // 1000) * 1000)
)


def _fmt17(d: datetime) -> str:
    return f"{d.year:04d}{d.month:02d}{d.day:02d}{d.hour:02d}{d.minute:02d}{d.second:02d}{d.microsecond // 1000:03d}"


instants17 = datetimes_ms.map(_fmt17)
instants14 = datetimes_ms.map(lambda d: _fmt17(d)[:14])
special_instants = st.sampled_from([INIT_INSTANT, METADATA_BOOTSTRAP_INSTANT, FULL_BOOTSTRAP_INSTANT])
any_instant = st.one_of(instants17, instants14, special_instants)

file_ids = st.builds(lambda u, n: f"{u}-{n}", st.uuids(version=4).map(str), st.integers(0, 10_000))
write_tokens = st.builds(make_write_token, st.integers(0, 99_999), st.integers(0, 99_999), st.integers(0, 999_999))


# -- instant times ---------------------------------------------------------------------------------------------
@given(instants17)
def test_instant_time_17_digits_datetime_round_trip_identity(s: str) -> None:
    t = InstantTime(s)
    assert t == s
    assert InstantTime.from_datetime(t.to_datetime()) == s


@given(instants14)
def test_instant_time_14_digits_to_datetime_appends_999_ms(s: str) -> None:
    t = InstantTime(s)
    assert t == s
    assert InstantTime.from_datetime(t.to_datetime()) == s + "999"


@given(instants17, instants17)
def test_instant_time_order_string_order_matches_chronological_order(a: str, b: str) -> None:
    ta, tb = InstantTime(a), InstantTime(b)
    assert (ta < tb) == (ta.to_datetime() < tb.to_datetime())


def test_instant_time_year_before_1000_formats_with_four_digit_year() -> None:
    """``yyyy`` is zero padded in Java's formatter: year 999 is ``0999``, the instant keeps 17 digits."""
    t = InstantTime("09991231235959123")
    assert InstantTime.from_datetime(t.to_datetime()) == "09991231235959123"
    assert InstantTime.from_datetime(pendulum.datetime(999, 1, 2, 3, 4, 5, 6000, tz="UTC")) == "09990102030405006"


# -- timeline file names --------------------------------------------------------------------------------------
def test_instant_valid_action_states_match_hudi_extension_table() -> None:
    assert set(VALID_ACTION_STATES) == set(EXPECTED_SUFFIX)


@given(any_instant, st.sampled_from(VALID_ACTION_STATES))
def test_instant_file_name_round_trip_identity(ts: str, action_state: tuple[Action, State]) -> None:
    action, state = action_state
    inst = Instant(InstantTime(ts), action, state)
    name = inst.file_name
    assert name == f"{ts}.{EXPECTED_SUFFIX[action_state]}"
    parsed = Instant.from_file_name(name)
    assert parsed == inst
    assert parsed.file_name == name


# -- base and log file names ----------------------------------------------------------------------------------
@given(file_ids, write_tokens, st.one_of(instants17, instants14), st.sampled_from([".parquet", ".orc", ".hfile"]))
def test_base_file_name_round_trip_identity(file_id: str, token: str, ts: str, ext: str) -> None:
    bf = BaseFile(file_id, token, InstantTime(ts), ext)
    name = bf.name
    assert name == f"{file_id}_{token}_{ts}{ext}"
    parsed = BaseFile.parse(name, partition_path="p=1")
    assert (parsed.file_id, parsed.write_token, parsed.instant, parsed.extension) == (file_id, token, ts, ext)
    assert parsed.name == name
    assert parsed.relative_path == f"p=1/{name}"


@given(
    file_ids,
    st.one_of(instants17, instants14),
    st.integers(1, 10**6),
    st.one_of(st.none(), write_tokens),
    st.sampled_from(["", "-cdc"]),
)
def test_log_file_name_round_trip_identity(
    file_id: str, ts: str, version: int, token: str | None, suffix: str
) -> None:
    if token is None:
        suffix = ""  # a CDC suffix only follows a write token in FSUtils.LOG_FILE_PATTERN
    lf = LogFile(file_id, InstantTime(ts), version, token, suffix=suffix)
    name = lf.name
    expected = f".{file_id}_{ts}.log.{version}" + (f"_{token}{suffix}" if token is not None else "")
    assert name == expected
    parsed = LogFile.parse(name)
    assert (parsed.file_id, parsed.base_instant, parsed.version, parsed.write_token, parsed.suffix) == (
        file_id,
        ts,
        version,
        token,
        suffix,
    )
    assert parsed.name == name


@settings(max_examples=50)
@given(st.lists(st.tuples(instants17, st.integers(1, 20), write_tokens), min_size=2, max_size=8))
def test_log_file_sort_key_orders_by_instant_then_version_then_token(
    specs: list[tuple[str, int, str]],
) -> None:
    fid = f"{uuid.UUID(int=1)}-0"
    files = [LogFile(fid, InstantTime(ts), v, tok) for ts, v, tok in specs]
    ordered = sorted(files, key=LogFile.sort_key)
    # HoodieLogFile.LogFileComparator: base instant (string), then version (int), then write token (string).
    assert [(f.base_instant, f.version, f.write_token) for f in ordered] == sorted(
        (ts, v, tok) for ts, v, tok in specs
    )
