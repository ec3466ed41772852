"""A small JSON Schema validator: the keywords docs/audit-log.schema.json uses, no more.

type, properties, required, additionalProperties, enum, const, minimum,
maximum, minLength, items, $ref (to #/$defs), oneOf, anyOf, allOf, not,
if/then/else. An unknown keyword is an error, so the schema cannot quietly use
one this checker ignores.
"""

from __future__ import annotations

from typing import Any

KNOWN = {
    "$schema",
    "$id",
    "title",
    "description",
    "type",
    "properties",
    "required",
    "additionalProperties",
    "enum",
    "const",
    "minimum",
    "maximum",
    "minLength",
    "items",
    "$ref",
    "oneOf",
    "anyOf",
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "$defs",
}
TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: type(v) is int,
    "number": lambda v: type(v) in (int, float),
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
}


def errors(
    schema: dict[str, Any], value: Any, root: dict[str, Any] | None = None, path: str = "$"
) -> list[str]:
    """Every way ``value`` breaks ``schema`` (empty when it conforms)."""
    root = root if root is not None else schema
    unknown = set(schema) - KNOWN
    if unknown:
        raise ValueError(f"schema keyword(s) this checker does not know: {sorted(unknown)}")
    found: list[str] = []
    if "$ref" in schema:
        ref = schema["$ref"]
        assert ref.startswith("#/$defs/"), ref
        found += errors(root["$defs"][ref[len("#/$defs/") :]], value, root, path)
    if "type" in schema:
        kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(TYPES[k](value) for k in kinds):
            return [*found, f"{path}: not of type {kinds}"]
    if "const" in schema and not (
        value == schema["const"] and type(value) is type(schema["const"])
    ):
        found.append(f"{path}: not {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        found.append(f"{path}: {value!r} not one of {schema['enum']}")
    if isinstance(value, int) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            found.append(f"{path}: below {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            found.append(f"{path}: above {schema['maximum']}")
    if isinstance(value, str) and "minLength" in schema and len(value) < schema["minLength"]:
        found.append(f"{path}: shorter than {schema['minLength']}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                found.append(f"{path}.{key}: required")
        for key, item in value.items():
            if key in props:
                found += errors(props[key], item, root, f"{path}.{key}")
            elif schema.get("additionalProperties") is False:
                found.append(f"{path}.{key}: not allowed")
            elif isinstance(schema.get("additionalProperties"), dict):
                found += errors(schema["additionalProperties"], item, root, f"{path}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            found += errors(schema["items"], item, root, f"{path}[{i}]")
    if "allOf" in schema:
        for sub in schema["allOf"]:
            found += errors(sub, value, root, path)
    if "anyOf" in schema and not any(not errors(s, value, root, path) for s in schema["anyOf"]):
        found.append(f"{path}: matches none of anyOf")
    if "oneOf" in schema:
        matches = sum(1 for s in schema["oneOf"] if not errors(s, value, root, path))
        if matches != 1:
            found.append(f"{path}: matches {matches} of oneOf, not exactly one")
    if "not" in schema and not errors(schema["not"], value, root, path):
        found.append(f"{path}: matches a schema it must not")
    if "if" in schema:
        branch = "then" if not errors(schema["if"], value, root, path) else "else"
        if branch in schema:
            found += errors(schema[branch], value, root, path)
    return found
