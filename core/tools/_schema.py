"""JSON Schema for a Python callable's arguments, from its signature, hints and docstring."""

from __future__ import annotations

import copy
import functools
import inspect
import types
import typing
import weakref
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError, create_model

__all__ = [
    "DocstringParts",
    "FunctionSchema",
    "describe_validation_error",
    "function_schema",
    "parse_docstring",
    "return_schema",
]


@dataclass(frozen=True)
class FunctionSchema:
    name: str
    description: str
    parameters: dict[str, Any]
    validate: Callable[[dict[str, Any]], dict[str, Any]]
    output_schema: dict[str, Any] | None


@dataclass(frozen=True)
class DocstringParts:
    description: str
    params: dict[str, str]
    returns: str


def parse_docstring(doc: str | None) -> DocstringParts:
    """The description, argument texts and returns text of a Google, NumPy or Sphinx
    docstring (the style is inferred).

    Parsed by griffe, the parser pydantic-ai and the Agents SDK use too: it knows the three
    styles' sections, types and continuation lines. Imported on first use (about 60 ms).
    Without it the whole docstring is the description.
    """
    text = inspect.cleandoc(doc or "")
    if not text:
        return DocstringParts("", {}, "")
    try:
        import griffe
    except ImportError:
        return DocstringParts(text, {}, "")
    parsed = griffe.Docstring(text, lineno=1)
    style, _ = griffe.infer_docstring_style(parsed)
    options = {"returns_named_value": False, "returns_multiple_items": False} \
        if style in (None, "google") else {}
    sections = parsed.parse(style or "google", warnings=False, **options)
    description: list[str] = []
    params: dict[str, str] = {}
    returns: list[str] = []
    for section in sections:
        kind = section.kind.value
        if kind == "text":
            description.append(section.value)
        elif kind in ("parameters", "other_parameters"):
            for param in section.value:
                params.setdefault(param.name.lstrip("*"), " ".join(param.description.split()))
        elif kind == "returns":
            returns += [" ".join(r.description.split()) for r in section.value if r.description]
    return DocstringParts("\n\n".join(description).strip(), params, " ".join(returns))


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


_made: weakref.WeakKeyDictionary[Any, tuple[tuple[Any, ...], FunctionSchema]] = \
    weakref.WeakKeyDictionary()
"""Schemas already built, per callable: building one (a pydantic model and its JSON Schema)
costs milliseconds, and a program often makes a session per conversation over the same
functions."""


def _fingerprint(fn: Callable[..., Any]) -> tuple[Any, ...]:
    """What the schema is built from and a program could change on the same callable."""
    _, typed = _named(fn)
    return tuple(getattr(typed, attr, None) for attr in (
        "__doc__", "__annotations__", "__defaults__", "__kwdefaults__", "__signature__"))


def function_schema(fn: Callable[..., Any]) -> FunctionSchema:
    """The argument schema and a validator for `fn` (built once per callable)."""
    try:
        made = _made.get(fn)
    except TypeError:  # neither hashable nor weakly referenceable: build it each time
        return _build_schema(fn)
    mark = _fingerprint(fn)
    if made is not None and all(a is b for a, b in zip(made[0], mark)):
        return replace(made[1], parameters=copy.deepcopy(made[1].parameters),
                       output_schema=copy.deepcopy(made[1].output_schema))
    schema = _build_schema(fn)
    try:
        _made[fn] = (mark, schema)
    except TypeError:
        return schema
    return replace(schema, parameters=copy.deepcopy(schema.parameters),
                   output_schema=copy.deepcopy(schema.output_schema))


def _build_schema(fn: Callable[..., Any]) -> FunctionSchema:
    name, typed = _named(fn)
    sig = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(typed, include_extras=True)
    except Exception:  # noqa: BLE001 - unresolvable forward references: use raw annotations
        hints = {}
    doc = parse_docstring(inspect.getdoc(typed) or inspect.getdoc(fn))
    description = doc.description
    if doc.returns:
        description += f"\n\nReturns: {doc.returns}"
    arg_docs = doc.params
    fields: dict[str, Any] = {}
    extra: Literal["allow", "forbid"] = "forbid"
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
        extra=extra, arbitrary_types_allowed=True), **fields)
    try:
        parameters = _clean(model.model_json_schema())
    except Exception as exc:  # a parameter type pydantic cannot describe
        raise TypeError(f"cannot build a JSON Schema for {name}(): {exc}") from exc

    def checked(arguments: dict[str, Any]) -> dict[str, Any]:
        instance = model.model_validate(arguments)
        values = {key: getattr(instance, key) for key in fields}
        values.update(instance.__pydantic_extra__ or {})
        return values

    plain = None if extra == "allow" else _plain_arguments(model, fields)
    validate = checked if plain is None else _fast_path(plain, checked)
    return FunctionSchema(name, description, parameters, validate, _output_schema(hints))


_ANY = object()
"""Stands for `Any`: every value passes unchanged."""
_SCALARS = {int: (int,), str: (str,), float: (float,), bool: (bool,)}
"""Annotation -> the exact types pydantic hands back unchanged (it turns an int into a float
for a `float` parameter, so an int is not one of them)."""
_IMMUTABLE = (type(None), int, str, float, bool)


def _plain_types(annotation: Any) -> Any:
    """The exact types `annotation` passes through unchanged, `_ANY`, or None when pydantic
    must look (constraints, containers, models, anything it might convert)."""
    if annotation is Any:
        return _ANY
    found = _SCALARS.get(annotation)
    if found is not None:
        return found
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        parts = [_SCALARS.get(a, (type(None),) if a is type(None) else None)
                 for a in typing.get_args(annotation)]
        if all(parts):
            return tuple(t for part in parts for t in part)  # type: ignore[union-attr]
    return None


def _plain_arguments(model: Any, fields: dict[str, Any]) -> tuple[Any, ...] | None:
    """(types per parameter, required names, defaults) when every parameter is a plain
    scalar (or Any) with an immutable default, so arguments of exactly those types are valid
    as they are; None otherwise."""
    kinds, defaults = {}, {}
    model_fields = model.model_fields
    for name, (annotation, _) in fields.items():
        info = model_fields.get(name)
        kind = _plain_types(annotation)
        if info is None or info.alias is not None or info.metadata or kind is None:
            return None
        if not info.is_required():
            if type(info.default) not in _IMMUTABLE:
                return None  # pydantic copies a mutable default: let it
            defaults[name] = info.default
        kinds[name] = kind
    return kinds, frozenset(kinds) - frozenset(defaults), defaults


def _fast_path(plain: tuple[Any, ...], checked: Callable[[dict[str, Any]], dict[str, Any]]
               ) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """`checked` behind a test that lets through, with one type lookup per argument, what
    pydantic would hand back unchanged; everything else (and every error) is pydantic's."""
    kinds, required, defaults = plain
    count = len(kinds)

    def validate(arguments: dict[str, Any]) -> dict[str, Any]:
        for key, value in arguments.items():
            kind = kinds.get(key)
            if kind is None or (kind is not _ANY and type(value) not in kind):
                return checked(arguments)
        if len(arguments) == count:
            return arguments
        if required <= arguments.keys():
            return {**defaults, **arguments}
        return checked(arguments)

    return validate


def _named(fn: Callable[..., Any]) -> tuple[str, Any]:
    """(name, what holds the type hints and docstring): a partial's function, a callable
    object's `__call__` under its class name."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    name = getattr(fn, "__name__", None)
    if name is None and callable(fn):  # an instance with __call__
        return type(fn).__name__, type(fn).__call__
    return name or type(fn).__name__, fn


def return_schema(fn: Callable[..., Any]) -> dict[str, Any] | None:
    """JSON Schema of what `fn` returns, from its return annotation (`None` when it has none
    pydantic can describe): for tools whose arguments a framework describes already."""
    _, typed = _named(fn)
    try:
        hints = typing.get_type_hints(typed, include_extras=True)
    except Exception:  # noqa: BLE001 - unresolvable forward references: no schema
        return None
    return _output_schema(hints)


def _output_schema(hints: dict[str, Any]) -> dict[str, Any] | None:
    ret = hints.get("return")
    if ret is None or ret is Any or ret is type(None):
        return None
    try:
        return TypeAdapter(ret).json_schema(mode="serialization")
    except Exception:  # noqa: BLE001 - a return type pydantic cannot describe: Any
        return None
