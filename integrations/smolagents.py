"""smolagents: the sandbox as a `CodeAgent`'s executor.

    agent = CodeAgent(tools=[get_orders], model=model, executor=WasmExecutor())

The agent's code runs in CPython compiled to WebAssembly instead of smolagents' own
`LocalPythonExecutor` (an AST interpreter in the host process): full Python, isolated, with
wall-time and memory limits. The agent's loop, prompts and memory are untouched. Variables
persist between steps and runs, as with the local executor. The agent's tools and managed
agents stay on the host: each call the code makes runs the real tool there. `final_answer`
ends the run through the agent's own final-answer tool.

`CodeAgent(executor=...)` is smolagents' public way to give an agent another executor; this
one implements its `PythonExecutor` interface (`send_tools`, `send_variables`, `__call__`
returning a `CodeOutput`, and `cleanup`).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

from smolagents import AgentError, AgentImage, PythonExecutor

# `CodeOutput` and `InterpreterError` are public classes that smolagents' top-level package
# does not re-export; its own remote executors import them from this module too.
from smolagents.local_python_executor import CodeOutput, InterpreterError
from tooliscode import Session, ToolError, adapters
from tooliscode.adapters import Binding, Cell, Hooks, OptionArgs, Options, Tools, ToolsFacade
from tooliscode.codetool import Reply
from typing_extensions import Unpack

__all__ = ["WasmExecutor"]

_JSON_TYPES = {"string": "string", "boolean": "boolean", "integer": "integer",
               "number": "number", "array": "array", "object": "object", "null": "null"}
"""smolagents' input and output types that are JSON Schema types ("any", "image" and
"audio" are not: they declare no type)."""

Named = tuple[str, Any]
"""One of the agent's tools or managed agents, under the name the agent gives it."""


def _schema(spec: Mapping[str, Any]) -> dict[str, Any]:
    """One smolagents input (`{"type": ..., "description": ..., "nullable": ...}`) as JSON
    Schema."""
    out: dict[str, Any] = {}
    kinds = spec.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    known = [_JSON_TYPES[k] for k in kinds if k in _JSON_TYPES]
    if known and len(known) == len(kinds):
        out["type"] = known[0] if len(known) == 1 else known
    for key in ("description", "enum", "items", "properties", "default"):
        if key in spec:
            out[key] = spec[key]
    return out


class _Hooks(Hooks[Named, Cell]):
    """The agent's tools, called on the host as the local executor calls them."""

    asynchronous = False

    def declare(self, native: Named) -> Binding[Named]:
        """A tool or managed agent, from its `inputs` (a nullable input is optional, as the
        agent's own validation has it)."""
        name, tool = native
        inputs: Mapping[str, Mapping[str, Any]] = getattr(tool, "inputs", None) or {}
        output = getattr(tool, "output_schema", None) or (
            {"type": _JSON_TYPES[t]} if (t := getattr(tool, "output_type", None)) in _JSON_TYPES
            else None)
        return Binding.of(native, name=name, description=getattr(tool, "description", ""),
                          parameters={"type": "object",
                                      "required": [k for k, spec in inputs.items()
                                                   if not spec.get("nullable")],
                                      "properties": {k: _schema(s) for k, s in inputs.items()}},
                          output_schema=output)

    def call(self, cell: Cell, binding: Binding[Named], arguments: dict[str, Any],
             call_id: str) -> Any:
        """smolagents' own errors reach the code as `ToolError` with their message."""
        try:
            return binding.native[1](**arguments)
        except AgentError as exc:
            raise ToolError(exc.message) from None

    def render(self, reply: Reply) -> str:
        """The step's execution logs: what the model reads back, without the last
        expression's value, which the agent shows itself as the step's output."""
        text = reply.text
        value = reply.result.value if reply.result is not None else None
        if value is not None:
            line = f"[value] {value}"
            if text == line:
                text = ""
            elif text.startswith(line + "\n"):
                text = text[len(line) + 1:]
            else:
                text = text.replace("\n" + line, "", 1)
        return text + "\n" if text else ""


_HOOKS = _Hooks()


class WasmExecutor(PythonExecutor, ToolsFacade):
    """A `CodeAgent` executor that runs the agent's code in tooliscode's WebAssembly sandbox.

    `limits` bound each step's code (wall time, memory, output, tool calls); `runtime="data"`
    gives it numpy, pandas and matplotlib. One interpreter serves the agent's steps and runs;
    with `store=`, it is kept in a store under `conversation` (a key you choose), so another
    process can continue it. Figures the code makes are kept in `figures` as PIL images, and
    `attach_figures` (a step callback) shows them to the model with the step's
    observations. `cleanup()` (called by `CodeAgent.cleanup()` and `with CodeAgent(...)`)
    closes the interpreter. The options are every front end's (`tooliscode.adapters.Options`);
    a CodeAgent's tools are called from code only, so `callers` is refused.
    """

    def __init__(self, *, conversation: Hashable | None = None, **options: Unpack[OptionArgs]):
        self.options = Options(**options).code_only("a CodeAgent calls its tools from code only")
        if self.options.store is not None and conversation is None:
            raise ValueError("store= keeps an interpreter under a conversation key: pass "
                             "conversation= as well")
        self.conversation = conversation
        self._code_tool = self.options.code_tool()
        self._tools: Tools[Named, Cell] = Tools(_HOOKS, ())
        self._final: Any = None
        self._variables: dict[str, Any] = {}
        self.figures: list[Any] = []
        """The figures the last step's code made, as PIL images."""

    # -- PythonExecutor ----------------------------------------------------------------------

    def send_tools(self, tools: dict[str, Any]) -> None:
        """The agent's tools and managed agents, before each run. `final_answer` is not
        declared: the sandbox has its own, which ends the code; its value then goes through
        the agent's final-answer tool."""
        self._final = tools.get("final_answer")
        listed = [(name, tool) for name, tool in tools.items() if name != "final_answer"]
        key = tuple((name, id(tool)) for name, tool in listed)
        if key != self._tools.extra_key:  # a guest's tools are fixed: new ones need a new guest
            self._tools = Tools.of(_HOOKS, listed, extra_key=key)

    def send_variables(self, variables: dict[str, Any]) -> None:
        """The agent's state (`run(additional_args=...)`), defined in the sandbox before the
        next code runs, as JSON values (the rule tool results follow)."""
        self._variables.update(variables)

    def __call__(self, code_action: str) -> CodeOutput:
        self.figures = []
        if self._variables:
            variables, self._variables = self._variables, {}
            self._check(self._run(adapters.variables_code(variables)))
        reply = self._check(self._run(code_action))
        self.figures = [AgentImage(i.data).to_raw() for i in reply.images]
        result = reply.result
        if result is not None and result.has_final:
            final = self._final(result.final) if self._final is not None else result.final
            return CodeOutput(output=final, logs=_HOOKS.render(reply), is_final_answer=True)
        return CodeOutput(output=result.value if result is not None else None,
                          logs=_HOOKS.render(reply), is_final_answer=False)

    def cleanup(self) -> None:
        """Close the interpreter."""
        self.close()

    # -- figures -----------------------------------------------------------------------------

    def attach_figures(self, memory_step: Any, agent: Any = None) -> None:
        """A step callback (`CodeAgent(..., step_callbacks=[executor.attach_figures])`): the
        figures of the step's code go into its `observations_images`, which the model sees
        with the step's observations."""
        if self.figures and hasattr(memory_step, "observations_images"):
            memory_step.observations_images = [*(memory_step.observations_images or ()),
                                               *self.figures]
            self.figures = []

    # -- the interpreter ---------------------------------------------------------------------

    def session(self, key: Hashable = None) -> Session:
        """The interpreter's session (`key` None: this executor's `conversation`)."""
        return super().session(self.conversation if key is None else key)

    def _run(self, code: str) -> Reply:
        # A step's output reaches the agent as its logs once the code ends: what it prints
        # meanwhile goes to `on_output`, if given.
        return self.code_tool.run_code(code, key=self.conversation, tools=self._tools.toolbox,
                                       context=Cell(call_id="step", tools=self._tools),
                                       on_output=self.options.output("step"))

    @staticmethod
    def _check(reply: Reply) -> Reply:
        """A reply whose code ran; a failed cell raises what the local executor raises, with
        the output and traceback the model reads (the agent records it as the step's error)."""
        if not reply.ok and not reply.has_final:
            raise InterpreterError(reply.text)
        return reply

