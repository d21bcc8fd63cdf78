"""Tools -> what the guest needs to call them: a spec per tool and the stub text it shows."""

from __future__ import annotations

from typing import Any

from .tools import Tool

__all__ = ["guest_spec", "stub", "summary"]

_SIMPLE = {"string": "str", "integer": "int", "number": "float", "boolean": "bool",
           "array": "list", "object": "dict", "null": "None"}


def _annotation(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "Any"
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(_SIMPLE.get(k, "Any") for k in kind) or "Any"
    return _SIMPLE.get(kind, "Any") if isinstance(kind, str) else "Any"


def summary(tool: Tool) -> str:
    """The first sentence of the description, for catalogs and search results."""
    text = " ".join(tool.description.split())
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]


def stub(tool: Tool) -> str:
    """A Python signature with a docstring, as `help(tool)` shows it."""
    props = tool.parameters.get("properties") or {}
    required = set(tool.parameters.get("required") or ())
    params = []
    for name, prop in props.items():
        ann = _annotation(prop)
        if name in required:
            params.append(f"{name}: {ann}")
        else:
            default = prop.get("default") if isinstance(prop, dict) else None
            params.append(f"{name}: {ann} = {default!r}")
    params.sort(key=lambda p: "=" in p)
    doc = tool.description.strip().replace('"""', "'''")
    arg_lines = [f"    {n}: {p.get('description')}" for n, p in props.items()
                 if isinstance(p, dict) and p.get("description")]
    body = doc + ("\n\nArgs:\n" + "\n".join(arg_lines) if arg_lines else "")
    body = "\n".join("    " + line if line else "" for line in body.splitlines())
    return (f"def {tool.python_name}({', '.join(params)}) -> Any:\n"
            f'    """\n{body}\n    """' if body.strip() else
            f"def {tool.python_name}({', '.join(params)}) -> Any: ...")


def guest_spec(tool: Tool) -> dict[str, Any]:
    """What the guest's `ToolFunction` is built from."""
    props = tool.parameters.get("properties") or {}
    required = [r for r in (tool.parameters.get("required") or ()) if r in props]
    ordered = [p for p in props if p in required] + [p for p in props if p not in required]
    return {
        "name": tool.python_name,
        "wire": tool.name,
        "namespace": tool.namespace,
        "params": ordered,
        "required": required,
        "open": not props or tool.parameters.get("additionalProperties") not in (None, False),
        "doc": tool.description,
        "summary": summary(tool),
        "stub": stub(tool),
    }
