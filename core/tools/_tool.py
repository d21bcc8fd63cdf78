"""The framework-free tool: a name, a JSON Schema for its arguments, and a way to call it."""

from __future__ import annotations

import builtins
import functools
import inspect
import keyword
import re
import sys
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["GUEST_HELPERS", "Tool", "ToolFunction", "as_tool", "global_name", "python_name"]

ToolFunction = Callable[..., Any]
"""Called with the arguments as keywords; may be sync or async."""

_EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def python_name(name: str) -> str:
    """`name` as the Python identifier the guest writes. A name that already is one, in any
    script (`número_de_pedido`), is kept; otherwise characters an identifier cannot hold
    become `_`, and a leading digit or a keyword gets a `_` added. Soft keywords (`type`,
    `match`) are identifiers: kept.

    NFKC-normalised, as Python normalises the identifiers of the code that will use it: a
    decomposed `é` in a schema key would otherwise never match the model's keyword."""
    text = unicodedata.normalize("NFKC", name.strip())
    out = "".join(ch if ("_" + ch).isidentifier() else "_" for ch in text) or "_"
    if not out.isidentifier():  # a leading digit or combining mark
        out = "_" + out
    if keyword.iskeyword(out):
        out += "_"
    return out


GUEST_HELPERS = frozenset({"help", "search_tools", "final_answer", "ToolError"})
"""Globals the sandbox defines beside the tools."""


@functools.lru_cache(maxsize=1)
def _reserved() -> frozenset[str]:
    return frozenset(dir(builtins)) | frozenset(sys.stdlib_module_names) | GUEST_HELPERS


def global_name(name: str) -> str:
    """`python_name(name)`, with a `_` added when it would hide a builtin (`filter`), a
    standard module the model's code may import (`time`) or a sandbox helper (`help`)."""
    out = python_name(name)
    return out + "_" if out in _reserved() else out


@dataclass
class Tool:
    """One tool the model's code can call.

    `function` receives the arguments as keywords. When it is missing, the tool is only a
    declaration and whoever runs the session supplies a callback (see `ToolIsCode`).
    """

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: dict(_EMPTY_SCHEMA))
    """JSON Schema of the arguments object."""
    function: ToolFunction | None = None
    output_schema: dict[str, Any] | None = None
    namespace: str | None = None
    """Group under which the guest sees the tool: `namespace.tool(...)`; made an identifier
    (see `global_name`)."""
    timeout_s: float | None = None
    python_name: str = ""
    """The identifier the guest uses; derived from `name` when empty (see `global_name`)."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Free-form; `{"hidden": True}` keeps a tool callable but out of the catalog and search."""
    validate: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    """Checks and coerces arguments on the host before `function` runs."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError("a tool needs a non-empty name")
        if self.namespace is not None:
            self.namespace = global_name(self.namespace)
        if not self.python_name:
            self.python_name = python_name(self.name) if self.namespace else global_name(self.name)
        elif not self.python_name.isidentifier() or keyword.iskeyword(self.python_name):
            raise ValueError(f"tool {self.name!r}: python_name {self.python_name!r} is not a "
                             "Python identifier")
        else:  # the form Python reads the model's code in (see `python_name`)
            self.python_name = unicodedata.normalize("NFKC", self.python_name)
        if not isinstance(self.parameters, Mapping):
            raise TypeError(f"tool {self.name!r}: parameters must be a JSON Schema object")
        self.parameters = dict(self.parameters) or dict(_EMPTY_SCHEMA)

    @property
    def qualified_name(self) -> str:
        """How the guest writes it: `namespace.python_name` or `python_name`."""
        return f"{self.namespace}.{self.python_name}" if self.namespace else self.python_name

    @property
    def is_async(self) -> bool:
        """Whether `function` is a coroutine function (cached per function object)."""
        fn = self.function
        cached = self.__dict__.get("_async_of")
        if cached is not None and cached[0] is fn:
            return cached[1]
        target = fn
        while isinstance(target, functools.partial):
            target = target.func
        answer = inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(
            getattr(target, "__call__", None))  # noqa: B004 - the method, to test it
        self.__dict__["_async_of"] = (fn, answer)
        return answer

    def invoke(self, arguments: dict[str, Any]) -> Any:
        """Call the tool; returns its value, or an awaitable for async tools."""
        if self.function is None:
            raise RuntimeError(f"tool {self.name!r} has no function to run")
        if self.validate is not None:
            arguments = self.validate(arguments)
        return self.function(**arguments)

    async def ainvoke(self, arguments: dict[str, Any]) -> Any:
        result = self.invoke(arguments)
        if inspect.isawaitable(result):
            result = await result
        return result

    # -- constructors --------------------------------------------------------------------

    @classmethod
    def from_function(cls, fn: Callable[..., Any], *, name: str | None = None,
                      description: str | None = None, **options: Any) -> Tool:
        """A tool from a Python callable: schema from its signature, type hints and docstring."""
        from ._schema import function_schema

        schema = function_schema(fn)
        return cls(name=name or schema.name, description=description or schema.description,
                   parameters=schema.parameters, function=fn, validate=schema.validate,
                   output_schema=options.pop("output_schema", schema.output_schema), **options)

    @classmethod
    def from_openai(cls, spec: Mapping[str, Any], function: ToolFunction | None = None,
                    **options: Any) -> Tool:
        """A tool from an OpenAI function tool, Responses or Chat Completions shape."""
        if spec.get("type", "function") != "function":
            raise ValueError(f"not a function tool: type={spec.get('type')!r}")
        body = spec.get("function", spec)
        if not isinstance(body, Mapping) or not body.get("name"):
            raise ValueError("an OpenAI function tool needs a name")
        return cls(name=body["name"], description=body.get("description") or "",
                   parameters=body.get("parameters") or dict(_EMPTY_SCHEMA), function=function,
                   output_schema=body.get("output_schema"), **options)

    @classmethod
    def from_model(cls, model: type, function: ToolFunction | None = None, **options: Any) -> Tool:
        """A tool whose arguments are a pydantic model's fields (the struct-to-tool pattern).

        `function` receives the validated model instance as its only argument.
        """
        from pydantic import BaseModel

        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise TypeError("from_model needs a pydantic BaseModel subclass")
        wrapped = None
        if function is not None:
            target = function

            if inspect.iscoroutinefunction(target):
                async def wrapped(**arguments: Any) -> Any:
                    return await target(model.model_validate(arguments))
            else:
                def wrapped(**arguments: Any) -> Any:
                    return target(model.model_validate(arguments))
        name = options.pop("name", None) or _snake(model.__name__)
        description = options.pop("description", None) or inspect.cleandoc(model.__doc__ or "")
        return cls(name=name, description=description, parameters=model.model_json_schema(),
                   function=wrapped, **options)


def _snake(name: str) -> str:
    """`GetHTTPPage` -> `get_http_page`."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def as_tool(obj: Any) -> Tool:
    """Whatever the user passed (a `Tool`, a callable, an OpenAI tool dict, a pydantic model
    class) as a `Tool`. A model class becomes a declaration: a callback runs it."""
    if isinstance(obj, Tool):
        return obj
    if isinstance(obj, Mapping):
        return Tool.from_openai(obj)
    if isinstance(obj, type) and hasattr(obj, "model_json_schema"):
        return Tool.from_model(obj)
    if callable(obj):
        return Tool.from_function(obj)
    raise TypeError(f"cannot make a tool from {type(obj).__name__}: pass a Tool, a callable, "
                    "an OpenAI function tool dict or a pydantic model class")
