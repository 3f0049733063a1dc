"""``hoodie.properties``: Java Properties text, the table checksum, and the typed table config.

Mirrors ``HoodieTableConfig`` (0.14/0.15): keys in arbitrary order, ``:``/``=`` escaped, checksum =
CRC32 of ``"<database>.<table>"``.
"""

from __future__ import annotations

import enum
import zlib
from collections.abc import Mapping
from dataclasses import dataclass

import pendulum

from lake_orchestration.config.keys import PAYLOAD_DEFAULT, HoodieKey
from lake_orchestration.errors import InvalidTablePropertiesError

SUPPORTED_TABLE_VERSIONS = ("6",)


class TableType(str, enum.Enum):
    """``hoodie.table.type``."""

    COPY_ON_WRITE = "COPY_ON_WRITE"
    MERGE_ON_READ = "MERGE_ON_READ"


class MergeSemantics(str, enum.Enum):
    """How a log record merges with the record it updates (derived from the payload class in v6)."""

    COMMIT_TIME_ORDERING = "COMMIT_TIME_ORDERING"
    """``OverwriteWithLatestAvroPayload``: the later write wins over the base file."""
    EVENT_TIME_ORDERING = "EVENT_TIME_ORDERING"
    """``DefaultHoodieRecordPayload``: the greater ordering value wins, base file included."""


class TimelineTimezone(str, enum.Enum):
    """``hoodie.table.timeline.timezone``."""

    LOCAL = "LOCAL"
    UTC = "UTC"


KEY_GENERATORS = {
    "SIMPLE": "org.apache.hudi.keygen.SimpleKeyGenerator",
    "COMPLEX": "org.apache.hudi.keygen.ComplexKeyGenerator",
    "NON_PARTITION": "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
    "TIMESTAMP": "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
    "CUSTOM": "org.apache.hudi.keygen.CustomKeyGenerator",
}


# -- Java Properties text ------------------------------------------------------------------------------------------
def parse_properties(text: str, *, path: str) -> dict[str, str]:
    """Parse ``java.util.Properties`` text (comments, ``\\`` escapes, line continuations).

    Raises:
        InvalidTablePropertiesError: a line without a separator, a bad ``\\u`` escape.
    """
    props: dict[str, str] = {}
    logical: list[str] = []
    buf = ""
    for raw in text.splitlines():
        line = raw.lstrip()
        if not buf and (not line or line[0] in "#!"):
            continue
        # A line ending in an odd number of backslashes continues on the next one.
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            buf += line[:-1]
            continue
        logical.append(buf + line)
        buf = ""
    if buf:
        logical.append(buf)
    for n, line in enumerate(logical, 1):
        key_chars: list[str] = []
        i = 0
        sep_found = False
        while i < len(line):
            c = line[i]
            if c == "\\" and i + 1 < len(line):
                key_chars.append(line[i : i + 2])
                i += 2
                continue
            if c in "=: \t":
                sep_found = True
                break
            key_chars.append(c)
            i += 1
        # skip separator: whitespace, then one of = or :, then whitespace
        while i < len(line) and line[i] in " \t":
            i += 1
        if i < len(line) and line[i] in "=:":
            sep_found = True
            i += 1
        while i < len(line) and line[i] in " \t":
            i += 1
        if not sep_found:
            raise InvalidTablePropertiesError(path, f"line {n} {line!r} has no '=' separator")
        key = _unescape("".join(key_chars), path)
        props[key] = _unescape(line[i:], path)
    return props


def _unescape(s: str, path: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            n = s[i + 1]
            if n == "u":
                hexs = s[i + 2 : i + 6]
                try:
                    out.append(chr(int(hexs, 16)))
                except ValueError as err:
                    raise InvalidTablePropertiesError(path, f"bad \\u escape {s[i : i + 6]!r}") from err
                i += 6
                continue
            out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(n, n))
            i += 2
            continue
        out.append(c)
        i += 1
    # \u escapes may encode UTF-16 surrogate pairs (as Java writes supplementary characters): recombine them.
    return "".join(out).encode("utf-16", "surrogatepass").decode("utf-16")


def _escape(s: str, *, is_key: bool) -> str:
    out: list[str] = []
    for idx, c in enumerate(s):
        if c == "\\":
            out.append("\\\\")
        elif c in "=:#!":
            out.append("\\" + c)
        elif c == " " and (is_key or idx == 0):
            out.append("\\ ")
        elif c == "\t":
            out.append("\\t")
        elif c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif c == "\f":
            out.append("\\f")
        elif ord(c) > 0xFFFF:
            # Java strings are UTF-16: a supplementary character is stored as an escaped surrogate pair.
            cp = ord(c) - 0x10000
            out.append(f"\\u{0xD800 + (cp >> 10):04X}\\u{0xDC00 + (cp & 0x3FF):04X}")
        elif ord(c) < 0x20 or ord(c) > 0x7E:
            out.append(f"\\u{ord(c):04X}")
        else:
            out.append(c)
    return "".join(out)


def format_properties(props: Mapping[str, str], *, now: pendulum.DateTime | None = None) -> str:
    """Render properties as Java's ``Properties.store`` does (header comments, escaped ``key=value`` lines)."""
    ts = now or pendulum.now("UTC")
    head = [
        f"#Updated at {ts.in_timezone('UTC').format('YYYY-MM-DDTHH:mm:ss.SSSSSS')}Z",
        "#" + ts.in_timezone("UTC").format("ddd MMM DD HH:mm:ss") + " UTC " + str(ts.year),
    ]
    body = [f"{_escape(k, is_key=True)}={_escape(v, is_key=False)}" for k, v in props.items()]
    return "\n".join(head + body) + "\n"


def table_checksum(props: Mapping[str, str]) -> str:
    """``hoodie.table.checksum``: CRC32 of UTF-8 ``"<database>.<table>"`` (database may be empty)."""
    db = props.get(HoodieKey.DATABASE_NAME.key, "")
    name = props.get(HoodieKey.TABLE_NAME.key, "")
    return str(zlib.crc32(f"{db}.{name}".encode()))


# -- typed config ------------------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class TableConfig:
    """The typed view of ``hoodie.properties`` (version 6)."""

    name: str
    """``hoodie.table.name``."""
    table_type: TableType
    """COPY_ON_WRITE or MERGE_ON_READ."""
    version: int
    """``hoodie.table.version``."""
    record_key_fields: tuple[str, ...]
    """Record key fields; empty for tables without meta fields that rely on a keyless layout."""
    partition_fields: tuple[str, ...]
    """Partition fields; empty for non-partitioned tables."""
    precombine_field: str | None
    """Ordering (precombine) field, if any."""
    key_generator_class: str | None
    """Key generator class name."""
    hive_style_partitioning: bool
    """Partition paths as ``field=value``."""
    url_encode_partitioning: bool
    """Partition path values are URL-encoded."""
    drop_partition_columns: bool
    """Partition columns are not stored in data files."""
    payload_class: str
    """Record payload class (``hoodie.compaction.payload.class``)."""
    populate_meta_fields: bool
    """Whether the ``_hoodie_*`` meta columns are written."""
    base_file_format: str
    """``PARQUET`` (ORC/HFILE are read-only out of scope)."""
    timeline_timezone: TimelineTimezone
    """Timezone of generated instant times."""
    database_name: str | None
    """``hoodie.database.name``."""
    archivelog_folder: str
    """Archived timeline folder under ``.hoodie``."""
    create_schema: str | None
    """``hoodie.table.create.schema`` (Avro JSON, no meta fields)."""
    raw: Mapping[str, str]
    """All properties as read (keys this class does not type are kept)."""

    @property
    def merge_semantics(self) -> MergeSemantics:
        """Commit-time ordering unless the payload class orders by event time."""
        if self.payload_class == PAYLOAD_DEFAULT or self.payload_class.endswith("EventTimeAvroPayload"):
            return MergeSemantics.EVENT_TIME_ORDERING
        return MergeSemantics.COMMIT_TIME_ORDERING

    @property
    def ordering_field(self) -> str | None:
        """The field that orders versions of a record: ``hoodie.payload.ordering.field`` or the precombine field."""
        return self.raw.get(HoodieKey.PAYLOAD_ORDERING_FIELD.key) or self.precombine_field

    @property
    def is_mor(self) -> bool:
        return self.table_type == TableType.MERGE_ON_READ

    @property
    def is_partitioned(self) -> bool:
        return bool(self.partition_fields)

    @classmethod
    def from_properties(cls, props: Mapping[str, str], *, path: str) -> TableConfig:
        """Type and validate raw properties.

        Raises:
            InvalidTablePropertiesError: a missing required key, an invalid value or a checksum mismatch.
        """

        def get(key: HoodieKey) -> str | None:
            v = props.get(key.key)
            if v is None:  # an older name Java still reads (ConfigProperty.withAlternatives)
                v = next((props[old] for old in key.deprecated if old in props), None)
            return v if v is not None else key.default

        def req(key: HoodieKey) -> str:
            v = props.get(key.key)
            if v is None or v == "":
                raise InvalidTablePropertiesError(path, f"required key {key.key} is missing")
            return v

        def boolean(key: HoodieKey) -> bool:
            v = (get(key) or "false").strip().lower()
            if v not in ("true", "false"):
                raise InvalidTablePropertiesError(path, f"{key.key}={v!r} is not a boolean (expected true|false)")
            return v == "true"

        def csv(key: HoodieKey) -> tuple[str, ...]:
            v = props.get(key.key) or ""
            return tuple(p.strip() for p in v.split(",") if p.strip())

        name = req(HoodieKey.TABLE_NAME)
        ttype_raw = get(HoodieKey.TABLE_TYPE) or ""
        try:
            ttype = TableType(ttype_raw)
        except ValueError as err:
            raise InvalidTablePropertiesError(
                path, f"{HoodieKey.TABLE_TYPE.key}={ttype_raw!r} (expected COPY_ON_WRITE or MERGE_ON_READ)"
            ) from err
        ver_raw = req(HoodieKey.TABLE_VERSION)  # no default: Java's is 0, which it would try to upgrade
        try:
            version = int(ver_raw)
        except ValueError as err:
            raise InvalidTablePropertiesError(
                path, f"{HoodieKey.TABLE_VERSION.key}={ver_raw!r} is not an integer"
            ) from err
        tz_raw = (get(HoodieKey.TIMELINE_TIMEZONE) or "LOCAL").upper()
        try:
            tz = TimelineTimezone(tz_raw)
        except ValueError as err:
            raise InvalidTablePropertiesError(
                path, f"{HoodieKey.TIMELINE_TIMEZONE.key}={tz_raw!r} (expected LOCAL or UTC)"
            ) from err
        checksum = props.get(HoodieKey.TABLE_CHECKSUM.key)
        if checksum is not None and checksum != table_checksum(props):
            raise InvalidTablePropertiesError(
                path,
                f"{HoodieKey.TABLE_CHECKSUM.key}={checksum} does not match CRC32 of "
                f"'{props.get(HoodieKey.DATABASE_NAME.key, '')}.{name}' = {table_checksum(props)}",
            )
        return cls(
            name=name,
            table_type=ttype,
            version=version,
            record_key_fields=csv(HoodieKey.RECORDKEY_FIELDS),
            partition_fields=csv(HoodieKey.PARTITION_FIELDS),
            precombine_field=props.get(HoodieKey.PRECOMBINE_FIELD.key) or None,
            key_generator_class=props.get(HoodieKey.KEYGENERATOR_CLASS.key),
            hive_style_partitioning=boolean(HoodieKey.HIVE_STYLE_PARTITIONING),
            url_encode_partitioning=boolean(HoodieKey.URL_ENCODE_PARTITIONING),
            drop_partition_columns=boolean(HoodieKey.DROP_PARTITION_COLUMNS),
            payload_class=get(HoodieKey.PAYLOAD_CLASS) or "",
            populate_meta_fields=boolean(HoodieKey.POPULATE_META_FIELDS),
            base_file_format=(get(HoodieKey.BASE_FILE_FORMAT) or "PARQUET").upper(),
            timeline_timezone=tz,
            database_name=props.get(HoodieKey.DATABASE_NAME.key),
            archivelog_folder=get(HoodieKey.ARCHIVELOG_FOLDER) or "archived",
            create_schema=props.get(HoodieKey.CREATE_SCHEMA.key),
            raw=dict(props),
        )


def new_table_properties(
    *,
    name: str,
    table_type: TableType,
    record_key_fields: tuple[str, ...],
    partition_fields: tuple[str, ...] = (),
    precombine_field: str | None = None,
    key_generator: str | None = None,
    hive_style_partitioning: bool = False,
    payload_class: str | None = None,
    create_schema: str | None = None,
    database_name: str | None = None,
    timeline_timezone: TimelineTimezone = TimelineTimezone.LOCAL,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The properties a new v6 table gets (what Spark SQL's CREATE TABLE writes), with checksum."""
    if key_generator is None:
        if not partition_fields:
            key_generator = KEY_GENERATORS["NON_PARTITION"]
        elif len(record_key_fields) > 1 or len(partition_fields) > 1:
            key_generator = KEY_GENERATORS["COMPLEX"]
        else:
            key_generator = KEY_GENERATORS["SIMPLE"]
    props: dict[str, str] = {
        HoodieKey.TABLE_TYPE.key: table_type.value,
        HoodieKey.ARCHIVELOG_FOLDER.key: "archived",
        HoodieKey.TIMELINE_LAYOUT_VERSION.key: "1",
        HoodieKey.DROP_PARTITION_COLUMNS.key: "false",
        HoodieKey.RECORDKEY_FIELDS.key: ",".join(record_key_fields),
        HoodieKey.TABLE_NAME.key: name,
        HoodieKey.HIVE_STYLE_PARTITIONING.key: str(hive_style_partitioning).lower(),
        HoodieKey.KEYGENERATOR_CLASS.key: KEY_GENERATORS.get(key_generator, key_generator),
        HoodieKey.URL_ENCODE_PARTITIONING.key: "false",
        HoodieKey.TABLE_VERSION.key: "6",
    }
    if table_type == TableType.MERGE_ON_READ:
        props[HoodieKey.PAYLOAD_CLASS.key] = payload_class or str(HoodieKey.PAYLOAD_CLASS.default)
        props[HoodieKey.RECORD_MERGER_STRATEGY.key] = str(HoodieKey.RECORD_MERGER_STRATEGY.default)
    elif payload_class:
        props[HoodieKey.PAYLOAD_CLASS.key] = payload_class
    if partition_fields:
        props[HoodieKey.PARTITION_FIELDS.key] = ",".join(partition_fields)
    if precombine_field:
        props[HoodieKey.PRECOMBINE_FIELD.key] = precombine_field
    if create_schema:
        props[HoodieKey.CREATE_SCHEMA.key] = create_schema
    if database_name is not None:
        props[HoodieKey.DATABASE_NAME.key] = database_name
    if timeline_timezone != TimelineTimezone.LOCAL:
        props[HoodieKey.TIMELINE_TIMEZONE.key] = timeline_timezone.value
    props.update(extra or {})
    props[HoodieKey.TABLE_CHECKSUM.key] = table_checksum(props)
    return props
