"""The fleet on the S3 server: discovery of a warehouse prefix level by level, and cheap ticks, counted at the server.

A tick probes every table: one delimiter LIST of ``.hoodie/`` (Paimon: ``snapshot/``); when its names and sizes are
unchanged, nothing else. Asserted: at most 2 requests per table per tick when nothing changed (measured: 1), and
only the table written since the last tick is judged again, from the names listed (still 1 request). Secrets come
from environment variables the config names (``access_key_env``), read when a table is opened.
"""

from __future__ import annotations

import json
import tarfile
from collections import Counter
from pathlib import Path
from urllib.parse import parse_qs

import pyarrow.fs as pafs
import yaml
from click.testing import CliRunner

from lake_orchestration.cli.app import cli
from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.fleet import load_fleet
from lake_orchestration.fleet.probe import probe
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.write import write_table
from tests.fleet.conftest import PAIMON_ARCHIVE
from tests.objectstore.conftest import REGION, S3Bucket, S3Request
from tests.trips import trips_options

HUDI = {"db1/mor_a": TableType.MERGE_ON_READ, "db2/nested/cow_b": TableType.COPY_ON_WRITE}
PAIMON_TABLE = "default.db/test_pk_vector_golden"
"""One of the Java-written Paimon golden tables (uploaded: the three cost 3.6 s of PUTs)."""


def _table_of(req: S3Request, roots: list[str]) -> str | None:
    """The table root a request touched (a LIST by its prefix, an object request by its key)."""
    key = req.key
    if req.kind == "LIST":
        key = parse_qs(req.query).get("prefix", [""])[0]
    return next((r for r in roots if key == r or key.startswith(r + "/")), None)


def _upload_paimon(s3: S3Bucket, tmp_path: Path, prefix: str) -> list[str]:
    if not PAIMON_ARCHIVE.is_file():
        return []
    with tarfile.open(PAIMON_ARCHIVE) as tar:
        tar.extractall(tmp_path / "paimon", filter="data")
    fs = pafs.S3FileSystem(
        endpoint_override=s3.endpoint, region=REGION, **{k: s3.storage_options[k] for k in ("access_key", "secret_key")}
    )
    pafs.copy_files(
        str(tmp_path / "paimon" / PAIMON_TABLE), f"{s3.bucket}/{prefix}/{PAIMON_TABLE}", destination_filesystem=fs
    )
    return [PAIMON_TABLE]


def test_fleet_discovery_and_ticks_on_s3(s3_env: S3Bucket, tmp_path: Path) -> None:
    s3 = s3_env
    base = generate_trips(10, partitions=2, seed=3)
    for rel, table_type in HUDI.items():
        uri = s3.uri("wh", rel)
        opts = trips_options(table_type=table_type)
        write_table(uri, base, operation="bulk_insert", options=opts, storage_options=s3.storage_options)
    paimon = _upload_paimon(s3, tmp_path, "wh")
    config = tmp_path / "fleet.yaml"
    storage = {
        "provider": "s3",
        "endpoint_override": s3.endpoint,
        "region": REGION,
        "access_key_env": "AWS_ACCESS_KEY_ID",
        "secret_key_env": "AWS_SECRET_ACCESS_KEY",
    }
    config.write_text(yaml.safe_dump({"defaults": {"storage": storage}, "discover": [{"prefix": s3.uri("wh") + "/"}]}))
    assert s3.storage_options["secret_key"] not in config.read_text()

    # discovery: one delimiter LIST per directory above the tables and per table root, one HEAD per Hudi table
    s3.requests.reset()
    tables = load_fleet(config)
    found = {t.name: t.format for t in tables}
    assert found == {
        **{rel.replace("/", "_"): "hudi" for rel in HUDI},
        **{rel.replace(".db/", "_"): "paimon" for rel in paimon},
    }
    reqs = s3.requests.list()
    dirs_above = {"wh", "wh/db1", "wh/db2", "wh/db2/nested", *(["wh/default.db"] if paimon else [])}
    assert Counter(r.kind for r in reqs if r.kind not in ("LIST", "HEAD")) == Counter(), reqs
    lists = [r for r in reqs if r.kind == "LIST"]
    assert all(parse_qs(r.query).get("delimiter") == ["/"] for r in lists), "a recursive listing"
    assert len(lists) <= len(dirs_above) + len(tables), [r.query for r in lists]
    assert sum(1 for r in reqs if r.kind == "HEAD") <= 2 * len(HUDI)

    roots = sorted((t.base_path.removeprefix(f"s3://{s3.bucket}/") for t in tables), key=len, reverse=True)

    def tick(previous: dict[str, str]) -> tuple[dict[str, object], Counter[str | None]]:
        s3.requests.reset()
        probes = {t.name: probe(t, previous=previous.get(t.name)) for t in tables}
        per_table = Counter(_table_of(r, roots) for r in s3.requests.list())
        return probes, per_table

    first, _ = tick({})
    assert all(p.error is None and p.changed for p in first.values()), first
    fingerprints = {n: p.fingerprint for n, p in first.items()}

    unchanged, per_table = tick(fingerprints)
    assert all(not p.changed for p in unchanged.values())
    assert per_table[None] == 0, "a request outside the tables"
    assert max(per_table.values()) <= 2 and len(per_table) == len(tables), per_table
    assert set(per_table.values()) == {1}  # measured: the one LIST of .hoodie/ (snapshot/)

    # a write to one table: only it is judged again, the others still cost one request each
    upd = generate_updates(base, fraction=0.5, seed=1, ts_offset=10**6)
    write_table(
        s3.uri("wh", "db1/mor_a"),
        upd,
        operation="upsert",
        options=trips_options(table_type=TableType.MERGE_ON_READ),
        storage_options=s3.storage_options,
    )
    after, per_table = tick(fingerprints)
    assert [n for n, p in after.items() if p.changed] == ["db1_mor_a"]
    assert all(per_table[r] == 1 for r in roots), per_table  # a Hudi table is judged from the listed names alone

    # the health view over S3 (secrets from the environment the config names)
    r = CliRunner().invoke(cli, ["fleet", "status", "--config", str(config), "--json"])
    assert r.exit_code == 0, r.output
    rows = {row["name"]: row for row in json.loads(r.stdout)["tables"]}
    assert rows["db1_mor_a"]["max_log_files_per_slice"] == 1 and rows["db1_mor_a"]["active_instants"] == 2
    assert all(row["error"] is None for row in rows.values()), rows
