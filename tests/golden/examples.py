"""Arguments a schema allows, and arguments it does not, for testing the guest's checks.

`example(schema)` builds a valid instance (only what is required, or every property);
`breakages(schema, value)` yields copies with one field given a value of the wrong type,
with the path to it. Both are checked against the `jsonschema` library in the tests, so a
mistake here shows up as a test failure, not as a false pass.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from tooliscode.guest.validate import resolve

_FORMATS = {"date": "2024-05-01", "date-time": "2024-05-01T12:00:00Z", "email": "a@example.com",
            "uuid": "12345678-1234-5678-1234-567812345678", "uri": "https://example.com"}
_WRONG = {"string": 12345, "integer": "seven", "number": "seven", "boolean": "yes",
          "array": "not a list", "object": "not a dict"}


def example(schema: Any, root: dict[str, Any] | None = None, full: bool = False,
            depth: int = 0) -> Any:
    """A value `schema` allows: required parts only, or everything when `full`."""
    root = schema if root is None else root
    if not isinstance(schema, dict) or not schema:
        return "anything"
    if "examples" in schema:
        return copy.deepcopy(schema["examples"][0])
    if "$ref" in schema:
        return example(resolve(root, schema["$ref"]), root, full and depth < 3, depth + 1)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return next((v for v in schema["enum"] if v is not None), None)
    for key in ("anyOf", "oneOf"):
        if key in schema and "properties" not in schema:
            options = [o for o in schema[key] if o.get("type") != "null"] or schema[key]
            return example(options[0], root, full, depth + 1)
    if "allOf" in schema:
        merged: dict[str, Any] = {"type": "object", "properties": {}, "required": []}
        for part in schema["allOf"]:
            part = resolve(root, part["$ref"]) if "$ref" in part else part
            merged["properties"].update(part.get("properties", {}))
            merged["required"] += part.get("required", [])
        return example(merged, root, full, depth + 1)
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next(k for k in kind if k != "null")
    if kind == "string":
        if "format" in schema and schema["format"] in _FORMATS:
            return _FORMATS[schema["format"]]
        return "x" * max(1, schema.get("minLength", 1))
    if kind in ("integer", "number"):
        low = schema.get("minimum", 1)
        return low + 1 if schema.get("exclusiveMinimum") is True else max(low, 1)
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    if kind == "array":
        items = schema.get("prefixItems") or schema.get("items")
        if isinstance(items, list):
            return [example(s, root, full, depth + 1) for s in items]
        count = max(schema.get("minItems", 0), 1 if full else 0)
        return [_distinct(example(items, root, full, depth + 1), i) for i in range(count)]
    props = schema.get("properties", {})
    keys = [k for k in props if full or k in schema.get("required", ())]
    options = schema.get("oneOf", ())  # alternatives as `required` lists: fill the first only
    if options:
        others = {k for option in options[1:] for k in option["required"]}
        keys = [k for k in keys if k not in others] + options[0]["required"]
    return {k: example(props[k], root, full, depth + 1) for k in dict.fromkeys(keys)}


def _distinct(value: Any, i: int) -> Any:
    return f"{value}{i}" if isinstance(value, str) and i else value


def breakages(schema: dict[str, Any], value: Any) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """(path, broken copy of the whole value) for each field that has a declared type."""
    for where, sub in _typed_fields(schema, value, schema, ()):
        kind = sub.get("type")
        if isinstance(kind, str) and kind in _WRONG:
            yield where, replaced(value, where, _WRONG[kind])


def _typed_fields(schema: Any, value: Any, root: dict[str, Any],
                  path: tuple[Any, ...]) -> Iterator[tuple[tuple[Any, ...], dict[str, Any]]]:
    if isinstance(schema, dict) and "$ref" in schema:
        schema = resolve(root, schema["$ref"])
    if not isinstance(schema, dict):
        return
    if path:
        yield path, schema
    if isinstance(value, dict):
        for key, item in value.items():
            sub = (schema.get("properties") or {}).get(key)
            if sub is not None:
                yield from _typed_fields(sub, item, root, path + (key,))
    elif isinstance(value, list) and isinstance(schema.get("items"), dict) and value:
        yield from _typed_fields(schema["items"], value[0], root, path + (0,))


def replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    """A copy of `value` with the part at `path` replaced by `new`."""
    if not path:
        return new
    out = copy.deepcopy(value)
    node = out
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = new
    return out
