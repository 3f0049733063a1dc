"""The packaged Hudi 0.14/0.15 Avro schemas (``org.apache.hudi.avro.model``), loaded once.

``schema_for(name)`` returns a self-contained writer schema in the exact JSON form Java's
``Schema.toString()`` produces for Hudi's generated classes (key order, ``"avro.java.string":"String"`` on
strings and maps, each named type defined once at its first use), so the ``avro.schema`` header of our
container files equals Java's byte for byte.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

import fastavro

from lake_orchestration.errors import SchemaError

NAMESPACE = "org.apache.hudi.avro.model"

#: Schema files in dependency order (a file may only reference named types of earlier files).
PARSE_ORDER: tuple[str, ...] = (
    "HoodieInstantInfo",
    "HoodieCommitMetadata",
    "HoodieCompactionMetadata",
    "HoodieCleanPartitionMetadata",
    "HoodieCleanMetadata",
    "HoodieCleanerPlan",
    "HoodieRollbackMetadata",
    "HoodieRollbackPlan",
    "HoodieSavePointMetadata",
    "HoodieCompactionStrategy",
    "HoodieCompactionOperation",
    "HoodieSliceInfo",
    "HoodieClusteringGroup",
    "HoodieClusteringStrategy",
    "HoodieClusteringPlan",
    "HoodieRequestedReplaceMetadata",
    "HoodieReplaceCommitMetadata",
    "HoodieIndexCommitMetadata",
    "HoodieMergeArchiveFilePlan",
    "HoodieArchivedMetaEntry",
    "HoodiePath",
    "HoodieFSPermission",
    "HoodieFileStatus",
    "HoodieBootstrapPartitionMetadata",
    "HoodieBootstrapFilePartitionInfo",
    "HoodieBootstrapIndexInfo",
    "HoodieMetadata",
)

_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
_JAVA_STRING = "avro.java.string"
# Keys Java's parser consumes itself (Schema.SCHEMA_RESERVED / FIELD_RESERVED); every other key is kept as a
# property. "doc" on a map/array/primitive is dropped by Java, "default" on a map/array type is kept.
_TYPE_RESERVED = frozenset(
    {
        "type",
        "doc",
        "fields",
        "items",
        "name",
        "namespace",
        "size",
        "symbols",
        "values",
        "aliases",
        _JAVA_STRING,
    }
)
_FIELD_RESERVED = frozenset({"name", "type", "doc", "default", "order", "aliases"})


def _full_name(name: str, namespace: str | None) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


def _split(full: str) -> tuple[str | None, str]:
    ns, _, short = full.rpartition(".")
    return ns or None, short


def read_schema_file(file_name: str) -> Any:
    """Read one packaged schema file as JSON.

    Args:
        file_name: File name inside the ``schemas`` directory, e.g. ``"HoodieRollbackPlan.avsc"``.

    Returns:
        The parsed JSON document.

    Raises:
        SchemaError: The file is missing or is not JSON.
    """
    resource = resources.files(__package__).joinpath("schemas", file_name)
    try:
        return json.loads(resource.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise SchemaError(f"Cannot load packaged Avro schema {file_name}: {err}") from err


@functools.cache
def _definitions() -> dict[str, tuple[dict[str, Any], str | None]]:
    """Every named type of the packaged set: full name -> (definition as written, its namespace)."""
    defs: dict[str, tuple[dict[str, Any], str | None]] = {}
    named: dict[str, Any] = {}

    def collect(node: Any, ns: str | None) -> None:
        if isinstance(node, list):
            for branch in node:
                collect(branch, ns)
        elif isinstance(node, dict):
            kind = node.get("type")
            if kind in ("record", "error", "enum", "fixed"):
                full = _full_name(node["name"], node.get("namespace", ns))
                defs[full] = (node, _split(full)[0])
                for fld in node.get("fields", ()):
                    collect(fld["type"], _split(full)[0])
            elif kind == "array":
                collect(node["items"], ns)
            elif kind == "map":
                collect(node["values"], ns)
            elif isinstance(kind, (dict, list)):
                collect(kind, ns)

    for stem in PARSE_ORDER:
        doc = read_schema_file(f"{stem}.avsc")
        try:
            # Validates the file and that every name it references was defined by an earlier file.
            fastavro.parse_schema(doc, named_schemas=named)
        except Exception as err:
            raise SchemaError(f"Packaged Avro schema {stem}.avsc does not parse: {err}") from err
        collect(doc, None)
    return defs


def _java_form(node: Any, ns: str | None, seen: set[str]) -> Any:
    """Rewrite a schema node the way Java's Schema.toString() prints a Hudi SpecificRecord schema."""
    if isinstance(node, list):
        return [_java_form(branch, ns, seen) for branch in node]
    if isinstance(node, str):
        if node in _PRIMITIVES:
            return {"type": "string", _JAVA_STRING: "String"} if node == "string" else node
        full = _full_name(node, ns)
        if full in seen:
            ref_ns, short = _split(full)
            return short if ref_ns == ns else full
        try:
            definition, def_ns = _definitions()[full]
        except KeyError as err:
            raise SchemaError(f"Unknown Avro named type {full!r} (not in the packaged schema set)") from err
        return _java_form({**definition, "namespace": def_ns}, ns, seen)
    kind = node["type"]
    props = {k: v for k, v in node.items() if k not in _TYPE_RESERVED}
    if isinstance(kind, (dict, list)):
        return _java_form(kind, ns, seen)
    if kind in ("record", "error", "enum", "fixed"):
        full = _full_name(node["name"], node.get("namespace", ns))
        own_ns, short = _split(full)
        seen.add(full)
        out: dict[str, Any] = {"type": kind, "name": short}
        if own_ns != ns:
            out["namespace"] = own_ns
        if "doc" in node:
            out["doc"] = node["doc"]
        if kind in ("record", "error"):
            out["fields"] = [_java_field(fld, own_ns, seen) for fld in node["fields"]]
        elif kind == "enum":
            out["symbols"] = node["symbols"]
        else:
            out["size"] = node["size"]
        if "aliases" in node:
            out["aliases"] = node["aliases"]
        return {**out, **props}
    if kind == "array":
        return {"type": "array", "items": _java_form(node["items"], ns, seen), **props}
    if kind == "map":
        # Hudi builds with stringType=String: map keys are java.lang.String, marked on the map itself.
        return {
            "type": "map",
            "values": _java_form(node["values"], ns, seen),
            _JAVA_STRING: "String",
            **props,
        }
    if kind == "string":
        return {"type": "string", _JAVA_STRING: "String", **props}
    return {"type": kind, **props} if props else kind


def _java_field(fld: dict[str, Any], ns: str | None, seen: set[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"name": fld["name"], "type": _java_form(fld["type"], ns, seen)}
    for key in ("doc", "default", "order", "aliases"):
        if key in fld:
            out[key] = fld[key]
    out.update({k: v for k, v in fld.items() if k not in _FIELD_RESERVED})
    return out


def _resolve_name(avro_name: str) -> str:
    full = _full_name(avro_name, NAMESPACE)
    if full not in _definitions():
        raise SchemaError(f"No packaged Avro schema named {avro_name!r}: expected one of {sorted(_definitions())}")
    return full


@functools.cache
def schema_for(avro_name: str) -> dict[str, Any]:
    """Self-contained writer schema of a Hudi record type, in Java's JSON form.

    The result is cached and shared: do not mutate it.

    Args:
        avro_name: Record name, short (``"HoodieRollbackPlan"``) or full (``"org.apache.hudi.avro.model.…"``).

    Returns:
        The schema as a JSON-compatible dict (every referenced named type inlined once).

    Raises:
        SchemaError: No such record in the packaged set.
    """
    full = _resolve_name(avro_name)
    definition, def_ns = _definitions()[full]
    # Top level: Java's enclosing namespace is null, so the record always prints its namespace.
    out = _java_form({**definition, "namespace": def_ns}, None, set())
    assert isinstance(out, dict)
    return out


@functools.cache
def schema_text(avro_name: str) -> str:
    """``schema_for(avro_name)`` as the compact JSON text Java writes into the ``avro.schema`` header."""
    return json.dumps(schema_for(avro_name), separators=(",", ":"), ensure_ascii=False)


@functools.cache
def parsed_schema_for(avro_name: str) -> Any:
    """``schema_for(avro_name)`` parsed by fastavro (cached).

    Raises:
        SchemaError: No such record, or fastavro rejects the schema.
    """
    try:
        return fastavro.parse_schema(schema_for(avro_name))
    except SchemaError:
        raise
    except Exception as err:
        raise SchemaError(f"fastavro cannot parse the schema of {avro_name}: {err}") from err
