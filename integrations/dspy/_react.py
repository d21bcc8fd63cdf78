"""Code mode for `dspy.ReAct`: its tools behind one `run_python` tool."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Any

import dspy
from pydantic import PrivateAttr
from tooliscode.adapters import Cell, OptionArgs, Options, Tools, ToolsFacade
from tooliscode.codetool import CodeTool
from typing_extensions import Unpack

from ._hooks import HOOKS, as_tool

__all__ = ["CodeModeTool", "as_dspy_tool"]


class CodeModeTool(dspy.Tool, ToolsFacade):
    """`run_python` as a `dspy.Tool`: the model's code calls the wrapped tools as functions.
    One interpreter per conversation (`conversation`: a key, or a function returning the
    current one; `None`, the one interpreter of this tool)."""

    instructions: str = ""
    """How to use the code tool and the catalog, for a signature's instructions."""
    conversation: Any = None
    _tools: Tools[dspy.Tool, Cell] = PrivateAttr()
    _code_tool: CodeTool = PrivateAttr()
    _options: Options = PrivateAttr()

    def __init__(self, tools: Tools[dspy.Tool, Cell], options: Options,
                 conversation: Hashable | Callable[[], Hashable] = None):
        catalog = tools.catalog(options)
        super().__init__(self._run, name=options.name,
                         desc=catalog.tool_description(options.in_description(False)))
        self.instructions, self.conversation = catalog.instructions, conversation
        self._serve(tools, options)

    def _run(self, code: str) -> str:
        """Run Python code in the sandbox, where the tools are functions."""
        choose = self.conversation
        key = choose() if callable(choose) else choose
        cell = Cell(call_id=self.name or "run_python", tools=self._tools)
        return HOOKS.render(self.code_tool.run_code(code, key=key, context=cell,
                                                    on_output=self._output(cell)))


def as_dspy_tool(tools: Iterable[Any], *,
                 conversation: Hashable | Callable[[], Hashable] = None,
                 **options: Unpack[OptionArgs]) -> CodeModeTool:
    """One `dspy.Tool` that runs code calling `tools` (`dspy.Tool`s or callables), for
    `dspy.ReAct(signature, tools=[...])`. The options are every front end's
    (`tooliscode.adapters.Options`); ReAct describes a tool by its description, so the
    catalog rides there unless `instructions="prompt"` (then put `tool.instructions` in the
    signature's instructions). `callers` keeps tools for ReAct to call itself:
    `tool.direct_tools`, to give ReAct beside this one."""
    settings = Options(**options)
    wrapped = Tools.of(HOOKS, [as_tool(t) for t in tools], settings.callers)
    return CodeModeTool(wrapped, settings, conversation)
