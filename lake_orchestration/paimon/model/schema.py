"""A Paimon table schema: ``schema/schema-N`` (JSON, Java's ``TableSchema``/``SchemaSerializer``).

Only what the merge tree needs is typed (fields with their types, partition and primary keys, options); the rest of
the JSON is kept in :attr:`TableSchema.extra` so nothing is lost.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from lake_orchestration.errors import CorruptFileError

_ATOMIC = re.compile(
    r"^\s*([A-Z_ ]+?)\s*(?:\(([^)]*)\))?\s*(WITH LOCAL TIME ZONE|WITHOUT TIME ZONE)?\s*(NOT NULL)?\s*$"
)


@dataclass(frozen=True, kw_only=True)
class DataType:
    """A Paimon data type (``org.apache.paimon.types.DataType``).

    Atomic types come from strings such as ``"INT NOT NULL"``, ``"VARCHAR(20)"`` or ``"DECIMAL(10, 2)"``; nested types
    (``ARRAY``, ``MAP``, ``MULTISET``, ``ROW``, ``VECTOR``) from JSON objects, kept whole in :attr:`json`.
    """

    root: str
    """Type root: ``INT``, ``BIGINT``, ``VARCHAR`` (``STRING`` is ``VARCHAR`` of max length), ``ROW`` ..."""
    nullable: bool = True
    """False for ``... NOT NULL``."""
    params: tuple[int, ...] = ()
    """Length, or precision and scale (``DECIMAL(10, 2)`` -> (10, 2)); empty when the type has none."""
    local_time_zone: bool = False
    """True for ``TIMESTAMP(p) WITH LOCAL TIME ZONE``."""
    json: Any = None
    """The type exactly as serialized in the schema file."""

    @classmethod
    def parse(cls, value: Any, *, where: str) -> DataType:
        """Parse a schema-file type (a string or a JSON object).

        Raises:
            CorruptFileError: Not a type string or object Paimon writes.
        """
        if isinstance(value, dict):
            root = str(value.get("type", "")).upper()
            if not root:
                raise CorruptFileError(where, f"type object without 'type': {value!r}")
            nullable = not root.endswith(" NOT NULL")
            return cls(root=root.removesuffix(" NOT NULL"), nullable=nullable, json=value)
        if not isinstance(value, str):
            raise CorruptFileError(where, f"expected a type string or object, found {value!r}")
        m = _ATOMIC.match(value)
        if m is None:
            raise CorruptFileError(where, f"unparseable type {value!r}: expected e.g. 'INT NOT NULL' or 'VARCHAR(20)'")
        name, args, tz, not_null = m.groups()
        root = name.strip()
        params: tuple[int, ...] = ()
        if args:
            try:
                params = tuple(int(a) for a in args.split(","))
            except ValueError as err:
                raise CorruptFileError(where, f"unparseable type parameters in {value!r}") from err
        if root == "STRING":
            root, params = "VARCHAR", (2147483647,)
        elif root == "BYTES":
            root, params = "VARBINARY", (2147483647,)
        elif root in ("TIMESTAMP_LTZ", "TIMESTAMP WITH LOCAL TIME ZONE"):
            root, tz = "TIMESTAMP", "WITH LOCAL TIME ZONE"
        if root in ("TIMESTAMP", "TIME") and not params:
            params = (6,) if root == "TIMESTAMP" else (0,)
        if root == "DECIMAL" and not params:
            params = (10, 0)
        return cls(
            root=root,
            nullable=not_null is None,
            params=params,
            local_time_zone=tz == "WITH LOCAL TIME ZONE",
            json=value,
        )

    @property
    def precision(self) -> int:
        """Precision of DECIMAL/TIMESTAMP/TIME (first parameter), 0 if none."""
        return self.params[0] if self.params else 0

    @property
    def scale(self) -> int:
        """Scale of DECIMAL, else 0."""
        return self.params[1] if len(self.params) > 1 else 0


@dataclass(frozen=True, kw_only=True)
class DataField:
    """A table column (``org.apache.paimon.types.DataField``)."""

    id: int
    """Field id (stable across schema evolution)."""
    name: str
    """Column name."""
    type: DataType
    """Column type."""
    description: str | None = None
    """Column comment."""


@dataclass(frozen=True, kw_only=True)
class TableSchema:
    """A ``schema-N`` file.

    Example:
        >>> s = TableSchema.from_json(b'{"version":3,"id":0,"fields":[{"id":0,"name":"k","type":"INT NOT NULL"}],'
        ...     b'"highestFieldId":0,"partitionKeys":[],"primaryKeys":["k"],"options":{"bucket":"2"}}', path="s")
        >>> s.trimmed_primary_keys, s.options["bucket"]
        (('k',), '2')
    """

    version: int
    """Schema file format version (3 for Paimon 1.x)."""
    id: int
    """Schema id (``N`` of ``schema-N``)."""
    fields: tuple[DataField, ...]
    """Columns in table order."""
    highest_field_id: int
    """Highest field id ever assigned."""
    partition_keys: tuple[str, ...]
    """Partition columns."""
    primary_keys: tuple[str, ...]
    """Primary key columns (may include partition columns)."""
    options: dict[str, str]
    """Table options (see :mod:`lake_orchestration.paimon.model.options`)."""
    comment: str | None = None
    """Table comment."""
    time_millis: int | None = None
    """Creation time of this schema version."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Any other top-level JSON keys, kept as read."""

    @classmethod
    def from_json(cls, data: bytes | str, *, path: str) -> TableSchema:
        """Parse a ``schema-N`` file.

        Raises:
            CorruptFileError: Not JSON, or a required key is missing or has the wrong type.
        """
        if isinstance(data, bytes):
            try:
                data = data.decode("utf-8")
            except UnicodeDecodeError as err:
                raise CorruptFileError(
                    path,
                    f"not UTF-8 text (byte {err.start} is {data[err.start : err.start + 1]!r}): expected the "
                    "JSON object of a Java TableSchema",
                ) from err
        try:
            obj = json.loads(data)
            fields = tuple(
                DataField(
                    id=int(f["id"]),
                    name=str(f["name"]),
                    type=DataType.parse(f["type"], where=f"{path} field {f['name']!r}"),
                    description=f.get("description"),
                )
                for f in obj["fields"]
            )
            known = {"version", "id", "fields", "highestFieldId", "partitionKeys", "primaryKeys", "options"}
            known |= {"comment", "timeMillis"}
            return cls(
                version=int(obj.get("version", 1)),
                id=int(obj["id"]),
                fields=fields,
                highest_field_id=int(obj["highestFieldId"]),
                partition_keys=tuple(obj.get("partitionKeys", ())),
                primary_keys=tuple(obj.get("primaryKeys", ())),
                options={str(k): str(v) for k, v in obj.get("options", {}).items()},
                comment=obj.get("comment"),
                time_millis=obj.get("timeMillis"),
                extra={k: v for k, v in obj.items() if k not in known},
            )
        except CorruptFileError:
            raise
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise CorruptFileError(
                path,
                f"not a Paimon schema file ({type(err).__name__}: {err}): expected the JSON object of a Java "
                "TableSchema",
            ) from err

    def field(self, name: str) -> DataField:
        """The column called ``name``.

        Raises:
            KeyError: No such column.
        """
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"no column {name!r} in schema {self.id}: columns are {[f.name for f in self.fields]}")

    @property
    def trimmed_primary_keys(self) -> tuple[str, ...]:
        """Primary keys without the partition keys: the fields of a data file's key (``_KEY_*``, min/max key)."""
        return tuple(k for k in self.primary_keys if k not in self.partition_keys)

    @property
    def key_types(self) -> tuple[DataType, ...]:
        """Types of :attr:`trimmed_primary_keys`, in key order."""
        return tuple(self.field(k).type for k in self.trimmed_primary_keys)

    @property
    def partition_types(self) -> tuple[DataType, ...]:
        """Types of the partition keys, in order."""
        return tuple(self.field(k).type for k in self.partition_keys)
