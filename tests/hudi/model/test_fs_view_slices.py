"""The file-system view on synthetic listings: committed slices, pending compaction, replaced groups, archival."""

from __future__ import annotations

from lake_orchestration.hudi.model.file_group import FileGroupId
from lake_orchestration.hudi.model.fs_view import FileSystemView, ListedFile
from lake_orchestration.hudi.model.instant import InstantTime
from lake_orchestration.hudi.model.timeline import Timeline

P = "city=chennai"
FG = "26e33b7b-aa9f-4f2e-b683-a90ef0d5861d-0"
FG2 = "97de74b1-2a8e-4bb7-874c-0a74e1f42a77-0"
T1, T2, T3, T4, T5 = (
    "20250101000000100",
    "20250101000000200",
    "20250101000000300",
    "20250101000000400",
    "20250101000000500",
)


def base(fid: str, ts: str, token: str = "0-1-2") -> ListedFile:
    return ListedFile(f"{fid}_{token}_{ts}.parquet", 100)


def log(fid: str, base_ts: str, version: int, token: str = "0-1-2") -> ListedFile:
    return ListedFile(f".{fid}_{base_ts}.log.{version}_{token}", 10)


def tl(*names: str) -> Timeline:
    return Timeline.from_file_names(names)


def names(slice_) -> tuple[str | None, list[str]]:  # type: ignore[no-untyped-def]
    return (slice_.base_file.name if slice_.base_file else None, [lf.name for lf in slice_.log_files])


# -- committed / uncommitted ---------------------------------------------------------------------------------
def test_fs_view_base_file_of_inflight_commit_hidden() -> None:
    timeline = tl(
        f"{T1}.commit.requested", f"{T1}.inflight", f"{T1}.commit", f"{T2}.commit.requested", f"{T2}.inflight"
    )
    view = FileSystemView.build(timeline=timeline, listing={P: [base(FG, T1), base(FG, T2, "1-2-3")]})
    [s] = view.latest_file_slices()
    assert s.base_instant == T1
    assert names(s) == (f"{FG}_0-1-2_{T1}.parquet", [])
    assert [sl.base_instant for sl in view.file_groups[FileGroupId(P, FG)].slices] == [T1]


def test_fs_view_base_file_of_instant_missing_from_timeline_hidden() -> None:
    # A failed write whose timeline files are gone (rolled back) left a base file between two commits.
    timeline = tl(f"{T1}.commit", f"{T3}.commit")
    listing = {P: [base(FG, T1), base(FG, T2), base(FG2, T2)]}
    view = FileSystemView.build(timeline=timeline, listing=listing)
    assert [s.base_instant for s in view.latest_file_slices()] == [T1]
    assert FileGroupId(P, FG2) not in view.file_groups


def test_fs_view_base_file_after_last_completed_instant_hidden() -> None:
    view = FileSystemView.build(timeline=tl(f"{T1}.commit"), listing={P: [base(FG, T1), base(FG, T5)]})
    assert [s.base_instant for s in view.latest_file_slices()] == [T1]


def test_fs_view_latest_slice_newest_committed_base_with_its_logs_sorted() -> None:
    timeline = tl(f"{T1}.commit", f"{T2}.deltacommit", f"{T3}.deltacommit")
    listing = {
        P: [
            log(FG, T1, 2, "1-0-1"),
            base(FG, T1),
            log(FG, T1, 1),
            log(FG, T1, 2, "0-9-9"),
            ListedFile(".hoodie_partition_metadata"),
        ]
    }
    view = FileSystemView.build(timeline=timeline, listing=listing)
    [s] = view.latest_file_slices(P)
    # HoodieLogFile comparator: base instant, version, write token.
    assert names(s) == (
        f"{FG}_0-1-2_{T1}.parquet",
        [f".{FG}_{T1}.log.1_0-1-2", f".{FG}_{T1}.log.2_0-9-9", f".{FG}_{T1}.log.2_1-0-1"],
    )
    assert view.partitions == (P,)


def test_fs_view_log_only_file_group_visible() -> None:
    timeline = tl(f"{T1}.deltacommit", f"{T2}.deltacommit")
    view = FileSystemView.build(timeline=timeline, listing={P: [log(FG, T1, 1), log(FG, T1, 2)]})
    [s] = view.latest_merged_file_slices_before_or_on(T2)
    assert s.base_file is None
    assert [lf.version for lf in s.log_files] == [1, 2]


# -- archived instants -------------------------------------------------------------------------------------------
def test_fs_view_slice_before_timeline_start_counts_as_committed() -> None:
    # T1 and T2 were archived: the active timeline starts at T3.
    timeline = tl(f"{T3}.commit", f"{T4}.commit")
    listing = {P: [base(FG, T1), base(FG2, T2), base(FG2, T3)]}
    view = FileSystemView.build(timeline=timeline, listing=listing)
    latest = {s.file_id: s.base_instant for s in view.latest_file_slices()}
    assert latest == {FG: T1, FG2: T3}
    assert [s.base_instant for s in view.file_groups[FileGroupId(P, FG2)].slices] == [T3, T2]


# -- pending compaction ----------------------------------------------------------------------------------------
def _pending_compaction_view() -> FileSystemView:
    # T1: base; T2: deltacommit appends logs to the T1 slice; T3: compaction scheduled (and started: a partial
    # base file exists); T4: deltacommit appends a log named with the compaction instant T3.
    timeline = tl(
        f"{T1}.deltacommit",
        f"{T2}.deltacommit",
        f"{T3}.compaction.requested",
        f"{T3}.compaction.inflight",
        f"{T4}.deltacommit",
    )
    listing = {
        P: [
            base(FG, T1),
            log(FG, T1, 1),
            base(FG, T3, "5-6-7"),  # partial output of the inflight compaction
            log(FG, T3, 1),
            base(FG2, T1),
        ]
    }
    return FileSystemView.build(
        timeline=timeline, listing=listing, pending_compaction={FileGroupId(P, FG): InstantTime(T3)}
    )


def test_fs_view_pending_compaction_latest_slice_hides_partial_base_file() -> None:
    view = _pending_compaction_view()
    by_fid = {s.file_id: s for s in view.latest_file_slices()}
    assert by_fid[FG].base_instant == T3
    assert names(by_fid[FG]) == (None, [f".{FG}_{T3}.log.1_0-1-2"])
    assert names(by_fid[FG2]) == (f"{FG2}_0-1-2_{T1}.parquet", [])


def test_fs_view_pending_compaction_merged_slice_previous_base_and_all_logs() -> None:
    view = _pending_compaction_view()
    by_fid = {s.file_id: s for s in view.latest_merged_file_slices_before_or_on(T4)}
    merged = by_fid[FG]
    assert names(merged) == (f"{FG}_0-1-2_{T1}.parquet", [f".{FG}_{T1}.log.1_0-1-2", f".{FG}_{T3}.log.1_0-1-2"])
    assert names(by_fid[FG2]) == (f"{FG2}_0-1-2_{T1}.parquet", [])


def test_fs_view_pending_compaction_without_new_logs_gets_empty_slice_merged_with_previous() -> None:
    timeline = tl(f"{T1}.deltacommit", f"{T2}.compaction.requested")
    listing = {P: [base(FG, T1), log(FG, T1, 1)]}
    view = FileSystemView.build(
        timeline=timeline, listing=listing, pending_compaction={FileGroupId(P, FG): InstantTime(T2)}
    )
    [latest] = view.latest_file_slices()
    assert latest.base_instant == T2 and latest.is_empty
    [merged] = view.latest_merged_file_slices_before_or_on(T2)
    assert names(merged) == (f"{FG}_0-1-2_{T1}.parquet", [f".{FG}_{T1}.log.1_0-1-2"])


def test_fs_view_merged_slices_as_of_before_compaction_previous_slice_only() -> None:
    view = _pending_compaction_view()
    by_fid = {s.file_id: s for s in view.latest_merged_file_slices_before_or_on(T2)}
    assert names(by_fid[FG]) == (f"{FG}_0-1-2_{T1}.parquet", [f".{FG}_{T1}.log.1_0-1-2"])


# -- replaced file groups --------------------------------------------------------------------------------------
def test_fs_view_replaced_file_group_excluded_from_latest_and_merged_views() -> None:
    timeline = tl(f"{T1}.commit", f"{T2}.replacecommit", f"{T3}.commit")
    listing = {P: [base(FG, T1), base(FG2, T2)]}
    view = FileSystemView.build(timeline=timeline, listing=listing, replaced={FileGroupId(P, FG): InstantTime(T2)})
    assert [s.file_id for s in view.latest_file_slices()] == [FG2]
    assert [g.id.file_id for g in view.all_file_groups()] == [FG2]
    assert sorted(g.id.file_id for g in view.all_file_groups(include_replaced=True)) == sorted([FG, FG2])
    assert [s.file_id for s in view.latest_merged_file_slices_before_or_on(T3)] == [FG2]
    assert [s.file_id for s in view.latest_merged_file_slices_before_or_on(T2)] == [FG2]
    # As of before the replacecommit the replaced group is still what a reader sees.
    assert [s.file_id for s in view.latest_merged_file_slices_before_or_on(T1)] == [FG]


def test_fs_view_partition_filter_only_that_partition() -> None:
    timeline = tl(f"{T1}.commit")
    view = FileSystemView.build(timeline=timeline, listing={P: [base(FG, T1)], "city=paris": [base(FG2, T1)]})
    assert [s.file_id for s in view.latest_file_slices("city=paris")] == [FG2]
    assert view.partitions == (P, "city=paris")
