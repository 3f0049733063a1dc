"""``hoodie.properties``: Java Properties text as Hudi writes it, the table checksum and the typed config."""

from __future__ import annotations

import zlib

import pendulum
import pytest

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.errors import InvalidTablePropertiesError
from lake_orchestration.hudi.model.properties import (
    MergeSemantics,
    TableConfig,
    TableType,
    TimelineTimezone,
    format_properties,
    new_table_properties,
    parse_properties,
    table_checksum,
)

PATH = "/data/v6_trips_8i3d/.hoodie/hoodie.properties"

# Verbatim copy of quickstart_trips_table/mor/avro/v6_trips_8i3d/.hoodie/hoodie.properties (written by Hudi 0.15).
TRIPS_PROPERTIES = r"""#Properties saved on 2025-06-18T05:47:10.625224Z
#Wed Jun 18 05:47:10 UTC 2025
hoodie.compaction.payload.class=org.apache.hudi.common.model.OverwriteWithLatestAvroPayload
hoodie.table.type=MERGE_ON_READ
hoodie.table.precombine.field=ts
hoodie.table.partition.fields=city
hoodie.archivelog.folder=archived
hoodie.table.create.schema={"type"\:"record","name"\:"v6_trips_8i3d_record","namespace"\:"hoodie.v6_trips_8i3d","fields"\:[{"name"\:"ts","type"\:["long","null"]},{"name"\:"uuid","type"\:["string","null"]},{"name"\:"rider","type"\:["string","null"]},{"name"\:"driver","type"\:["string","null"]},{"name"\:"fare","type"\:["double","null"]},{"name"\:"city","type"\:["string","null"]}]}
hoodie.timeline.layout.version=1
hoodie.table.checksum=3180720914
hoodie.datasource.write.drop.partition.columns=false
hoodie.table.recordkey.fields=uuid
hoodie.table.name=v6_trips_8i3d
hoodie.compaction.record.merger.strategy=eeb8d96f-b1e4-49fd-bbf8-28ac514178e5
hoodie.datasource.write.hive_style_partitioning=true
hoodie.table.keygenerator.class=org.apache.hudi.keygen.SimpleKeyGenerator
hoodie.database.name=default
hoodie.datasource.write.partitionpath.urlencode=false
hoodie.table.version=6
"""

OVERWRITE = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
DEFAULT_PAYLOAD = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"


def _props(**overrides: str) -> dict[str, str]:
    props = parse_properties(TRIPS_PROPERTIES, path=PATH)
    props.update(overrides)
    return props


# -- Java Properties text ------------------------------------------------------------------------------------------
def test_parse_properties_fixture_text_unescapes_colons_and_skips_comments() -> None:
    props = parse_properties(TRIPS_PROPERTIES, path=PATH)
    assert len(props) == 17
    assert not any(k.startswith("#") for k in props)
    schema = props["hoodie.table.create.schema"]
    assert schema.startswith('{"type":"record","name":"v6_trips_8i3d_record"')
    assert "\\" not in schema
    assert props["hoodie.table.checksum"] == "3180720914"
    assert props["hoodie.compaction.payload.class"] == OVERWRITE


def test_parse_properties_java_separators_and_continuations_values() -> None:
    text = "a = 1\nb:2\nc 3\n  d=four\\\n     and more\n! bang comment\ne=\nf=x\\=y\\:z\\\\\n"
    assert parse_properties(text, path=PATH) == {
        "a": "1",
        "b": "2",
        "c": "3",
        "d": "fourand more",
        "e": "",
        "f": "x=y:z\\",
    }


def test_parse_properties_line_without_separator_raises_naming_path_and_line() -> None:
    with pytest.raises(InvalidTablePropertiesError) as err:
        parse_properties("hoodie.table.name=t\nthis_line_has_no_separator\n", path=PATH)
    assert err.value.path == PATH
    assert PATH in str(err.value)
    assert "this_line_has_no_separator" in str(err.value)


def test_parse_properties_bad_unicode_escape_raises_naming_escape() -> None:
    with pytest.raises(InvalidTablePropertiesError, match=r"\\\\uZZ"):
        parse_properties("k=\\uZZ12\n", path=PATH)


def test_format_properties_fixture_values_escaped_like_java() -> None:
    props = parse_properties(TRIPS_PROPERTIES, path=PATH)
    text = format_properties(props, now=pendulum.datetime(2025, 6, 18, 5, 47, 10, tz="UTC"))
    body = text.splitlines()[2:]
    original = TRIPS_PROPERTIES.splitlines()[2:]
    assert body == original  # same escaping, same (insertion) order
    assert parse_properties(text, path=PATH) == props


# -- checksum -----------------------------------------------------------------------------------------------------
def test_table_checksum_crc32_of_database_dot_name_matches_fixtures() -> None:
    assert zlib.crc32(b"default.v6_empty") == 1980710965
    assert table_checksum({"hoodie.database.name": "default", "hoodie.table.name": "v6_empty"}) == "1980710965"
    assert table_checksum(_props()) == "3180720914"


def test_table_checksum_without_database_uses_empty_prefix() -> None:
    assert table_checksum({"hoodie.table.name": "t"}) == str(zlib.crc32(b".t"))


def test_table_config_wrong_checksum_raises_naming_key_and_both_values() -> None:
    with pytest.raises(InvalidTablePropertiesError) as err:
        TableConfig.from_properties(_props(**{"hoodie.table.checksum": "12345"}), path=PATH)
    msg = str(err.value)
    assert "hoodie.table.checksum" in msg
    assert "12345" in msg
    assert "3180720914" in msg
    assert PATH in msg


# -- typed config ------------------------------------------------------------------------------------------------
def test_table_config_fixture_properties_typed_fields() -> None:
    cfg = TableConfig.from_properties(_props(), path=PATH)
    assert cfg.name == "v6_trips_8i3d"
    assert cfg.table_type is TableType.MERGE_ON_READ
    assert cfg.is_mor
    assert cfg.version == 6
    assert cfg.record_key_fields == ("uuid",)
    assert cfg.partition_fields == ("city",)
    assert cfg.is_partitioned
    assert cfg.precombine_field == "ts"
    assert cfg.ordering_field == "ts"
    assert cfg.key_generator_class == "org.apache.hudi.keygen.SimpleKeyGenerator"
    assert cfg.hive_style_partitioning is True
    assert cfg.url_encode_partitioning is False
    assert cfg.drop_partition_columns is False
    assert cfg.populate_meta_fields is True
    assert cfg.base_file_format == "PARQUET"
    assert cfg.timeline_timezone is TimelineTimezone.LOCAL
    assert cfg.database_name == "default"
    assert cfg.archivelog_folder == "archived"
    assert cfg.create_schema is not None and '"name":"fare"' in cfg.create_schema
    assert cfg.raw["hoodie.compaction.record.merger.strategy"] == "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        (OVERWRITE, MergeSemantics.COMMIT_TIME_ORDERING),
        (DEFAULT_PAYLOAD, MergeSemantics.EVENT_TIME_ORDERING),
        ("org.apache.hudi.common.model.EventTimeAvroPayload", MergeSemantics.EVENT_TIME_ORDERING),
        (None, MergeSemantics.COMMIT_TIME_ORDERING),  # key absent: 0.14 default OverwriteWithLatestAvroPayload
    ],
)
def test_table_config_merge_semantics_from_payload_class(payload: str | None, expected: MergeSemantics) -> None:
    props = _props()
    if payload is None:
        del props["hoodie.compaction.payload.class"]
    else:
        props["hoodie.compaction.payload.class"] = payload
    assert TableConfig.from_properties(props, path=PATH).merge_semantics is expected


def test_table_config_payload_ordering_field_overrides_precombine() -> None:
    cfg = TableConfig.from_properties(_props(**{"hoodie.payload.ordering.field": "fare"}), path=PATH)
    assert cfg.ordering_field == "fare"


def test_table_config_non_partitioned_without_precombine_defaults() -> None:
    props = _props()
    for k in ("hoodie.table.partition.fields", "hoodie.table.precombine.field"):
        del props[k]
    props["hoodie.populate.meta.fields"] = "false"
    props["hoodie.table.timeline.timezone"] = "utc"
    cfg = TableConfig.from_properties(props, path=PATH)
    assert cfg.partition_fields == ()
    assert not cfg.is_partitioned
    assert cfg.precombine_field is None
    assert cfg.ordering_field is None
    assert cfg.populate_meta_fields is False
    assert cfg.timeline_timezone is TimelineTimezone.UTC


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("hoodie.table.type", "MERGE_ON_WRITE"),
        ("hoodie.table.version", "six"),
        ("hoodie.datasource.write.hive_style_partitioning", "yes"),
        ("hoodie.table.timeline.timezone", "Europe/Paris"),
    ],
)
def test_table_config_invalid_value_raises_naming_key_and_value(key: str, value: str) -> None:
    with pytest.raises(InvalidTablePropertiesError) as err:
        TableConfig.from_properties(_props(**{key: value}), path=PATH)
    assert key in str(err.value)
    assert value.upper() in str(err.value).upper()
    assert err.value.path == PATH


def test_table_config_missing_table_name_raises_naming_key() -> None:
    props = _props()
    del props["hoodie.table.name"]
    del props["hoodie.table.checksum"]
    with pytest.raises(InvalidTablePropertiesError, match=r"hoodie\.table\.name"):
        TableConfig.from_properties(props, path=PATH)


def test_new_table_properties_checksum_and_keygen_valid_config() -> None:
    props = new_table_properties(
        name="t",
        table_type=TableType.MERGE_ON_READ,
        record_key_fields=("id",),
        partition_fields=("city",),
        precombine_field="ts",
        database_name="default",
    )
    assert props["hoodie.table.checksum"] == str(zlib.crc32(b"default.t"))
    assert props["hoodie.table.keygenerator.class"] == "org.apache.hudi.keygen.SimpleKeyGenerator"
    assert props["hoodie.compaction.payload.class"] == OVERWRITE
    cfg = TableConfig.from_properties(parse_properties(format_properties(props), path=PATH), path=PATH)
    assert cfg.version == 6
    assert cfg.merge_semantics is MergeSemantics.COMMIT_TIME_ORDERING


def test_table_config_deprecated_base_file_format_key_read_when_current_key_absent() -> None:
    (old,) = HoodieKey.BASE_FILE_FORMAT.deprecated
    props = {k: v for k, v in _props().items() if k != HoodieKey.BASE_FILE_FORMAT.key}
    assert TableConfig.from_properties({**props, old: "orc"}, path=PATH).base_file_format == "ORC"
    both = {**props, old: "orc", HoodieKey.BASE_FILE_FORMAT.key: "PARQUET"}
    assert TableConfig.from_properties(both, path=PATH).base_file_format == "PARQUET"
