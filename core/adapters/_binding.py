"""A framework's tool, declared once for the sandbox: what the guest sees of it, and what
approval its calls need.

The declaration is what the model reads and the guest checks calls against. A call the
framework accepts when the model makes it directly must be accepted from code as well, so a
parameter whose schema gives a default is never required here, whatever the framework's
schema says (strict schemas require every parameter, so that a model sends them all): the
framework fills the default in when the code leaves it out, as it does for the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from ..tools import Tool

__all__ = ["Approval", "Binding", "callable_parameters"]

N = TypeVar("N")

Approval = Literal["never", "always", "asked"]
"""Whether a tool's calls need a person's approval: never, always, or as the framework's own
policy says at each call (a function of the arguments, a server's setting)."""


@dataclass(frozen=True)
class Binding(Generic[N]):
    """`native`, the framework's tool, as the sandbox declares it (`tool`, with no function:
    the front end's hooks call `native`)."""

    native: N
    tool: Tool
    approval: Approval = "never"

    @classmethod
    def of(cls, native: N, *, name: str, description: str = "",
           parameters: dict[str, Any] | None = None, output_schema: dict[str, Any] | None = None,
           approval: Approval = "never", **declared: Any) -> Binding[N]:
        """Declare `native` under `name`; `declared` are further `Tool` fields (namespace,
        python_name, metadata)."""
        if approval not in ("never", "always", "asked"):
            raise ValueError(f"approval must be 'never', 'always' or 'asked', not {approval!r}")
        return cls(native, Tool(name=name, description=description or "",
                                parameters=callable_parameters(parameters or {}),
                                output_schema=output_schema, **declared), approval)

    @property
    def name(self) -> str:
        return self.tool.name


def callable_parameters(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with no parameter that has a default among the required ones."""
    properties = schema.get("properties")
    required = schema.get("required")
    if not isinstance(properties, dict) or not isinstance(required, list):
        return schema
    kept = [name for name in required
            if not (isinstance(properties.get(name), dict) and "default" in properties[name])]
    return schema if len(kept) == len(required) else {**schema, "required": kept}
