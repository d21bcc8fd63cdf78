"""A front end's tool set: its tools declared once, those the model calls itself, the
sandbox's functions for them and the catalog.

The functions the sandbox gets are fixed by the declarations (a guest's tools are fixed when
it starts); each call finds the running cell, and through it the tools of this call of the
code tool, so a framework that lists new objects for the same tools (an MCP toolset listed
again each run) keeps its interpreter.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Generic, TypeVar

from ..codetool import Sandbox, Toolbox, fingerprint
from ..errors import ToolError
from ..tools import Caller, Tool, split_callers
from ._binding import Binding
from ._catalog import Catalog
from ._cell import Cell, running
from ._hooks import Hooks
from ._options import Options

__all__ = ["Tools", "unapproved"]

N = TypeVar("N")
C = TypeVar("C", bound=Cell)


def unapproved(name: str, fix: str = "") -> ToolError:
    """The error of a call that needs a person's approval code cannot ask for here (it did
    not run): `fix` says what would let it, else the model is told to ask the user."""
    return ToolError(f"{name} needs a person's approval, which code cannot ask for here, so "
                     "the call was refused; " + (fix or "tell the user what you meant to do "
                                                 "with it"))


@dataclass(frozen=True, eq=False)
class Tools(Generic[N, C]):
    """`bindings`, the tools the code calls, through `hooks`; `direct`, the ones `callers`
    gives the model itself."""

    hooks: Hooks[N, C]
    bindings: tuple[Binding[N], ...]
    direct: tuple[N, ...] = ()
    extra_key: Hashable = field(default=None, repr=False)
    """Tells tool sets apart beyond their declarations (the functions behind them)."""

    @classmethod
    def of(cls, hooks: Hooks[N, C], natives: Iterable[N],
           callers: Mapping[str, Caller] | None = None, *,
           named: Callable[[Binding[N]], str] | None = None,
           extra_key: Hashable = None) -> Tools[N, C]:
        """Declare `natives` with `hooks`, and split them by `callers` (keyed by `named`,
        the binding's name by default)."""
        bindings = [hooks.declare(n) for n in natives]
        in_code, direct = split_callers(bindings, callers, named or _name)
        return cls(hooks, tuple(in_code), tuple(b.native for b in direct), extra_key)

    @cached_property
    def declared(self) -> list[Tool]:
        return [b.tool for b in self.bindings]

    @cached_property
    def toolbox(self) -> Toolbox:
        """The sandbox's functions, keyed by what the model and the guest see of them."""
        kind = _AsyncCall if self.hooks.asynchronous else _Call
        declared = self.declared

        def bind(sandbox: Sandbox) -> list[Tool]:
            return [replace(t, function=kind(sandbox, self, i)) for i, t in enumerate(declared)]

        return Toolbox(bind, (fingerprint(declared), self.extra_key))

    def catalog(self, options: Options, notes: Iterable[str] = ()) -> Catalog:
        """The catalog of these tools, for `options`' runtime and code tool name."""
        return Catalog.of(self.declared, options.name, python=options.python, notes=notes)

    def natives(self) -> list[N]:
        return [b.native for b in self.bindings]


def _name(binding: Binding[Any]) -> str:
    return binding.name


class _Call:
    """A tool as the sandbox calls it: through the running cell's tool set, to `hooks.call`."""

    __slots__ = ("index", "sandbox", "tools")

    def __init__(self, sandbox: Sandbox, tools: Tools[Any, Any], index: int):
        self.sandbox, self.tools, self.index = sandbox, tools, index

    def __call__(self, /, **arguments: Any) -> Any:
        return self._call(arguments)

    def _call(self, arguments: dict[str, Any]) -> Any:
        cell = running(self.sandbox)
        tools = cell.tools if isinstance(cell.tools, Tools) else self.tools
        binding = tools.bindings[self.index]
        hooks = tools.hooks
        if binding.approval == "always" and not hooks.approves:
            raise unapproved(binding.tool.qualified_name)
        return hooks.call(cell, binding, arguments, cell.inner_id())


class _AsyncCall(_Call):
    """`_Call` for hooks whose calls are coroutines: awaited on the runner's loop."""

    __slots__ = ()

    async def __call__(self, /, **arguments: Any) -> Any:
        return await self._call(arguments)
