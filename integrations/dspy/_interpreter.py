"""The sandbox as DSPy's `CodeInterpreter`: what `dspy.RLM`, `dspy.CodeAct` and
`dspy.ProgramOfThought` run their code through (by default Deno with Pyodide: a separate
binary, and Pyodide fetched on first use).

    dspy.configure(interpreter_factory=SandboxInterpreter)     # or, for one module:
    rlm = dspy.RLM("context, query -> answer", interpreter_factory=SandboxInterpreter)

DSPy makes one interpreter per forward pass and shuts it down after; state persists across
its `execute` calls. `tools` are host-side functions the code calls (RLM adds its own, such as
`llm_query`, before the first `execute`); `SUBMIT(...)` ends the code with the final output.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from dspy.primitives.code_interpreter import CodeExecutionError, CodeInterpreterError, FinalOutput
from tooliscode import SessionClosed
from tooliscode.adapters import Cell, Facade, OptionArgs, Options, Tools, variables_code
from tooliscode.codetool import Reply, Toolbox
from typing_extensions import Unpack

from ._hooks import HOOKS, as_tool

__all__ = ["SandboxInterpreter"]


class SandboxInterpreter(Facade):
    """A `CodeInterpreter` over one tooliscode sandbox (CPython on WebAssembly, in process).

    `tools` maps names to host functions the code calls (`dspy.Tool`s too); `output_fields`
    (set by RLM) gives `SUBMIT` its parameters. The options are every front end's
    (`tooliscode.adapters.Options`); the code calls the tools, so `callers` is refused.
    """

    execution_instructions: ClassVar[str] = (
        "Python (CPython 3.14; CPython 3.15 with numpy and pandas with runtime='data') runs in a "
        "WebAssembly sandbox in this process. State persists across executions; the standard "
        "library is there, but no network, subprocesses or host files.")

    def __init__(self, tools: dict[str, Any] | None = None,
                 output_fields: list[dict[str, Any]] | None = None,
                 **options: Unpack[OptionArgs]):
        self.options = Options(**options).code_only("the interpreter's code calls its tools")
        self.tools: dict[str, Any] = dict(tools or {})
        self.output_fields = output_fields
        self._tools_registered = False
        """Whether the sandbox has `tools` and `SUBMIT` as they are (RLM resets it)."""
        self._tools: Tools[Any, Cell] = Tools(HOOKS, ())
        self._code_tool = self.options.code_tool()
        self._listed: tuple[Any, ...] = ()
        self._closed = False

    def start(self) -> None:
        """Start the interpreter now (idempotent), with the tools given so far."""
        self._check_open()
        self._register()
        self.code_tool.session(None, self._tools.toolbox)

    def execute(self, code: str, variables: dict[str, Any] | None = None) -> Any:
        """Run `code` (after defining `variables`): `FinalOutput` when it called `SUBMIT`,
        else its last expression's value, or what it printed."""
        self._check_open()
        self._register()
        if variables:
            self._run(variables_code(variables))
        reply = self._run(code)
        result = reply.result
        if result is None:  # the sandbox itself failed: this session cannot go on
            self._closed = True
            raise CodeInterpreterError(reply.text)
        if result.restarted or result.rolled_back:  # a new guest: SUBMIT is given again
            self._tools_registered = False
        if result.has_final:
            return FinalOutput(result.final)
        if not result.ok:
            if result.error_type in ("SyntaxError", "IndentationError", "TabError"):
                raise SyntaxError(result.error)
            raise CodeExecutionError(f"{result.error_type}: {result.error}")
        return result.value if result.value is not None else result.stdout

    def shutdown(self) -> None:
        """End the session; a new interpreter is needed after it."""
        self._closed = True
        self.close()

    def _session_tools(self) -> Toolbox:
        return self._tools.toolbox

    def _register(self) -> None:
        """Declare the tools as they are now (a guest's tools are fixed when it starts, so a
        changed set starts a new one; new objects for the same tools do not), and define
        `SUBMIT` for the output fields."""
        listed = tuple((name, id(fn)) for name, fn in self.tools.items())
        if listed != self._listed:
            tools = Tools.of(HOOKS, [as_tool(fn, name) for name, fn in self.tools.items()])
            if tools.toolbox.key != self._tools.toolbox.key:
                self._tools_registered = False  # a new guest: SUBMIT is defined again
            self._tools, self._listed = tools, listed
        if not self._tools_registered:
            self._run(_submit(self.output_fields))
            self._tools_registered = True

    def _run(self, code: str) -> Reply:
        try:
            return self.code_tool.run_code(code, tools=self._tools.toolbox,
                                           context=Cell(call_id="execute", tools=self._tools),
                                           on_output=self.options.output("execute"))
        except SessionClosed as exc:
            raise CodeInterpreterError(str(exc)) from exc

    def _check_open(self) -> None:
        if self._closed:
            raise CodeInterpreterError("this interpreter was shut down: make a new one")


def _submit(output_fields: list[dict[str, Any]] | None) -> str:
    """`SUBMIT`, ending the code with the output fields as the final output."""
    names = [str(f["name"]) for f in output_fields or () if f.get("name")] or ["output"]
    fields = ", ".join(f"{json.dumps(n)}: {n}" for n in names)
    return f"def SUBMIT({', '.join(names)}):\n    final_answer({{{fields}}})"
