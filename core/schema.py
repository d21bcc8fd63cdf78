"""JSON Schema for a Python callable's arguments, from its signature, hints and docstring."""

from __future__ import annotations

import inspect
import re
import typing
from dataclasses import dataclass
from typing import Any, Callable

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError, create_model

__all__ = ["FunctionSchema", "function_schema", "parse_docstring", "describe_validation_error"]


@dataclass(frozen=True)
class FunctionSchema:
    name: str
    description: str
    parameters: dict[str, Any]
    validate: Callable[[dict[str, Any]], dict[str, Any]]
    output_schema: dict[str, Any] | None


_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Params|Returns?|Raises|Yields|Examples?|"
                      r"Notes?|Attributes)\s*:?\s*$", re.IGNORECASE)
_GOOGLE_ARG = re.compile(r"^\s*\*{0,2}(\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")
_SPHINX_ARG = re.compile(r"^\s*:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")
_NUMPY_ARG = re.compile(r"^\s*(\w+)\s*(?::\s*.*)?$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """(description, {argument: text}) from a Google, NumPy or Sphinx style docstring."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    for i, line in enumerate(lines):
        sphinx = _SPHINX_ARG.match(line)
        if sphinx:
            current = sphinx.group(1)
            params[current] = sphinx.group(2).strip()
            section = "params"
            continue
        if line.strip().startswith(":"):
            section, current = "other", None
            continue
        header = _SECTION.match(line)
        underline = i + 1 < len(lines) and set(lines[i + 1].strip()) == {"-"}
        if header:
            section = "params" if header.group(1).lower().startswith(("arg", "param")) else "other"
            current = None
            continue
        if underline or set(line.strip()) == {"-"}:
            continue
        if section is None:
            description.append(line)
        elif section == "params":
            indent = len(line) - len(line.lstrip())
            google = _GOOGLE_ARG.match(line) if indent <= 4 else None
            numpy = _NUMPY_ARG.match(line) if indent == 0 else None
            if google and google.group(3):
                current = google.group(1)
                params[current] = google.group(3).strip()
            elif numpy or (google and indent == 0):
                current = (numpy or google).group(1)  # type: ignore[union-attr]
                params.setdefault(current, "")
            elif current and line.strip():
                params[current] = (params[current] + " " + line.strip()).strip()
    return "\n".join(description).strip(), params


def describe_validation_error(exc: ValidationError) -> str:
    """A pydantic error as one line per bad field, in words a model can act on."""
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    return "; ".join(parts)


def _clean(schema: dict[str, Any]) -> dict[str, Any]:
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    return schema


def function_schema(fn: Callable[..., Any]) -> FunctionSchema:
    """Build the argument schema and a validator for `fn`."""
    name = getattr(fn, "__name__", None) or type(fn).__name__
    sig = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception:  # unresolvable forward references: fall back to raw annotations
        hints = {}
    description, arg_docs = parse_docstring(inspect.getdoc(fn))
    fields: dict[str, Any] = {}
    extra = "forbid"
    for param in sig.parameters.values():
        if param.kind is param.VAR_KEYWORD:
            extra = "allow"
            continue
        if param.kind is param.VAR_POSITIONAL:
            continue
        annotation = hints.get(param.name, param.annotation)
        if annotation is inspect.Parameter.empty:
            annotation = Any
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (annotation, Field(default, description=arg_docs.get(param.name)))
    model = create_model(f"{name}_arguments", __config__=ConfigDict(
        extra=extra, arbitrary_types_allowed=True), **fields)  # type: ignore[call-overload]
    try:
        parameters = _clean(model.model_json_schema())
    except Exception as exc:  # a parameter type pydantic cannot describe
        raise TypeError(f"cannot build a JSON Schema for {name}(): {exc}") from exc

    def validate(arguments: dict[str, Any]) -> dict[str, Any]:
        instance = model.model_validate(arguments)
        values = {key: getattr(instance, key) for key in fields}
        values.update(instance.__pydantic_extra__ or {})
        return values

    return FunctionSchema(name, description, parameters, validate, _output_schema(hints))


def _output_schema(hints: dict[str, Any]) -> dict[str, Any] | None:
    ret = hints.get("return")
    if ret is None or ret is Any or ret is type(None):
        return None
    try:
        return TypeAdapter(ret).json_schema()
    except Exception:
        return None
