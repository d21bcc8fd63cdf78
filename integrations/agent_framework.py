"""Microsoft Agent Framework: code mode as a CodeAct context provider, or as one tool.

    codeact = CodeActProvider(tools=[get_orders, get_customer])
    agent = Agent(client=client, instructions="Be brief.", context_providers=[codeact])

The shape is the framework's own CodeAct providers' (`HyperlightCodeActProvider`,
`MontyCodeActProvider`): tools registered on the provider are not shown to the model; before
every run the provider adds one `execute_code` tool and the instructions with their catalog.
`ExecuteCodeTool` is the same tool for an agent's `tools=[...]`, beside tools the model calls
directly.

Each call the code makes runs the real `FunctionTool` with `invoke`, given a
`FunctionInvocationContext` made from the code tool's own (the session, the run's keyword
arguments, the live tool list), in the code tool's context variables, so its spans nest under
the code tool's. A `ToolException` from a tool is raised in the code as a `ToolError`.
Approval works as in the framework's providers: the `execute_code` call needs approval when
the provider says so or any registered tool requires it.

One interpreter per conversation: the `AgentSession`'s `session_id` picks it, so variables
survive across the runs of one session.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from agent_framework import (
    AgentSession,
    Content,
    ContextProvider,
    FunctionInvocationContext,
    FunctionTool,
    SessionContext,
    normalize_tools,
)
from agent_framework.exceptions import ToolException
from tooliscode import ToolError
from tooliscode.adapters import (
    Binding,
    Cell,
    Facade,
    Hooks,
    OptionArgs,
    Options,
    Tools,
    ToolsFacade,
)
from tooliscode.codetool import CodeTool, Reply, Toolbox
from tooliscode.engine import run_in
from tooliscode.prompt import CODE_TOOL_SCHEMA
from tooliscode.tools import return_schema
from typing_extensions import Unpack

__all__ = ["CodeActProvider", "ExecuteCodeTool"]

EXECUTE_CODE = "execute_code"
"""The code tool's name, as in the framework's own CodeAct providers."""

ApprovalMode = Literal["always_require", "never_require"]
ToolsInput = FunctionTool | Callable[..., Any] | Sequence[FunctionTool | Callable[..., Any]]


@dataclass(kw_only=True)
class _Cell(Cell):
    """What the running cell's calls need: the code tool's invocation context, and its
    context variables (the current span among them)."""

    ctx: FunctionInvocationContext
    context: contextvars.Context


class _Hooks(Hooks[FunctionTool, _Cell]):
    """Function tools, invoked as the framework invokes the model's calls. A tool needing
    approval makes the `execute_code` call itself need it (as in the framework's own CodeAct
    providers): its inner calls run once that call is approved."""

    approves = True

    def declare(self, native: FunctionTool) -> Binding[FunctionTool]:
        """The framework's schema of the arguments, and what the function's return
        annotation says it returns."""
        func = native.func
        return Binding.of(native, name=native.name, description=native.description,
                          parameters=native.parameters(),
                          output_schema=return_schema(func) if callable(func) else None,
                          approval="always" if native.approval_mode == "always_require"
                          else "never")

    async def call(self, cell: _Cell, binding: Binding[FunctionTool], arguments: dict[str, Any],
                   call_id: str) -> Any:
        # in the code tool's context variables (its span): no task of its own
        return await run_in(cell.context.copy(), _invoke(cell, binding.native, arguments,
                                                         call_id))

    def render(self, reply: Reply) -> list[Content]:
        """The text, then each figure the cell made as image data."""
        return [Content.from_text(reply.text),
                *(Content.from_data(data=i.data, media_type=i.mime, name=i.path,
                                    additional_properties={"path": f"/session/{i.path}"})
                  for i in reply.images)]

    def key(self, context: Any) -> Any:
        session = context.session
        return session.session_id if isinstance(session, AgentSession) else None


_HOOKS = _Hooks()


async def _invoke(cell: _Cell, tool: FunctionTool, arguments: dict[str, Any],
                  call_id: str) -> Any:
    outer = cell.ctx
    ctx = FunctionInvocationContext(
        function=tool, arguments=arguments, session=outer.session, kwargs=outer.kwargs,
        tools=outer.tools,
        parent_service_session_state_keys=outer.parent_service_session_state_keys)
    try:
        return _plain(await tool.invoke(arguments=arguments, context=ctx, skip_parsing=True,
                                        tool_call_id=call_id))
    except ToolException as exc:
        raise ToolError(str(exc)) from None


def _collect(*groups: Any, name: str) -> list[FunctionTool]:
    """Function tools by name, later ones replacing earlier ones. An MCP tool gives the
    functions it listed when it connected; the code tool itself is left out."""
    found: dict[str, FunctionTool] = {}
    for group in groups:
        for item in normalize_tools(group):
            listed = getattr(item, "functions", None)
            if not isinstance(item, FunctionTool) and isinstance(listed, list):
                if not listed:
                    raise ValueError(f"{getattr(item, 'name', item)!r} lists no functions: "
                                     "connect the MCP tool before registering it")
                items = listed
            elif isinstance(item, FunctionTool):
                items = [item]
            else:
                raise TypeError(f"code can call function tools only, not {type(item).__name__}"
                                "; give other tools to the Agent itself")
            for tool in items:
                if isinstance(tool, ExecuteCodeTool) or tool.name == name:
                    continue
                found.pop(tool.name, None)
                found[tool.name] = tool
    return list(found.values())


def _plain(value: Any) -> Any:
    """What the code gets: a tool's value, or, for `Content` (MCP tools return a list of
    it), its text."""
    if isinstance(value, Content):
        value = [value]
    if isinstance(value, list) and value and all(isinstance(c, Content) for c in value):
        if all(c.type == "text" for c in value):
            return "".join(c.text or "" for c in value)
    return value


class ExecuteCodeTool(FunctionTool, ToolsFacade):
    """`execute_code`: runs the model's code in a sandbox where the registered tools are
    Python functions. Put it in an agent's `tools` (the catalog rides in its description
    unless `instructions="prompt"`: then put `build_instructions()` in the agent's
    instructions), or use `CodeActProvider`, which adds both to every run.

    Interpreters are kept per `AgentSession` (by `session_id`) in `code_tool`, which the
    copies `create_run_tool` makes share. The options are every front end's
    (`tooliscode.adapters.Options`); `code_tool=` shares another one's interpreters.
    """

    def __init__(self, *, tools: ToolsInput | None = None,
                 approval_mode: ApprovalMode | None = None, code_tool: CodeTool | None = None,
                 **options: Unpack[OptionArgs]) -> None:
        self.options = Options(**{"name": EXECUTE_CODE, **options})  # type: ignore[arg-type]
        super().__init__(name=self.options.name, description="", approval_mode="never_require",
                         func=self._run_code, input_model=dict(CODE_TOOL_SCHEMA))
        self._default_approval_mode: ApprovalMode = approval_mode or "never_require"
        self._code_tool = code_tool or self.options.code_tool()
        self._managed: list[FunctionTool] = []
        self._prompted = False
        self._refresh()
        if tools is not None:
            self.add_tools(tools)

    # -- the registered tools, as the framework's providers manage theirs ----------------

    def add_tools(self, tools: ToolsInput) -> None:
        """Register tools the code can call (function tools, or callables made into them)."""
        self._managed = _collect(self._managed, tools, name=self.name)
        self._refresh()

    def get_tools(self) -> list[FunctionTool]:
        return list(self._managed)

    def remove_tool(self, name: str) -> None:
        kept = [t for t in self._managed if t.name != name]
        if len(kept) == len(self._managed):
            raise KeyError(f"No managed tool named {name!r} is registered.")
        self._managed = kept
        self._refresh()

    def clear_tools(self) -> None:
        self._managed = []
        self._refresh()

    def _refresh(self) -> None:
        """The approval mode, catalog and sandbox tools for the current tool list. A guest's
        tools are fixed when it starts: a session whose tools changed gets a new one."""
        managed = list(self._managed)
        callers = {k: v for k, v in self.options.callers.items()
                   if any(t.name == k for t in managed)}
        self._tools = Tools.of(_HOOKS, managed, callers, extra_key=tuple(map(id, managed)))
        needs = self._default_approval_mode == "always_require" or any(
            b.approval != "never" for b in self._tools.bindings)
        self.approval_mode = "always_require" if needs else "never_require"
        catalog = self._tools.catalog(self.options)
        self.description = catalog.tool_description(self.options.in_description(self._prompted))

    # -- what the agent uses -------------------------------------------------------------

    def build_instructions(self, *, tools_visible_to_model: bool = False) -> str:
        """How to use the code tool, and the catalog of the registered tools."""
        text = self._tools.catalog(self.options).instructions
        if tools_visible_to_model:
            text += (f"\n\nSome of these tools may also be offered directly; use `{self.name}` "
                     "to combine them with Python control flow.")
        return text

    def create_run_tool(self) -> ExecuteCodeTool:
        """A copy with today's tools, for one run (it shares the interpreters)."""
        run = ExecuteCodeTool(approval_mode=self._default_approval_mode,
                              code_tool=self.code_tool, **self.options.args())
        run._managed, run._prompted = list(self._managed), self._prompted
        run._refresh()
        return run

    def build_serializable_state(self) -> dict[str, Any]:
        """What a run used, as JSON for the session's state."""
        runtime = self.code_tool.runtime
        if runtime is not None and not isinstance(runtime, str):
            runtime = type(runtime).__name__
        return {"runtime": f"tooliscode:{runtime or 'default'}",
                "approval_mode": self.approval_mode,
                "tool_names": [t.name for t in self._managed]}

    # -- running code ------------------------------------------------------------------------

    async def _run_code(self, code: str, ctx: FunctionInvocationContext) -> list[Content]:
        cell = _Cell(ctx=ctx, context=contextvars.copy_context(), tools=self._tools,
                     call_id=f"{self.name}-{id(ctx):x}")
        try:
            # A streamed run's updates come from the model and from finished tool calls
            # only: the framework has no update a running tool can add, so what the code
            # prints goes to the application's own `on_output`.
            reply = await self.code_tool.arun_code(
                code, key=_HOOKS.key(ctx), context=cell, tools=self._tools.toolbox,
                on_output=self.options.output(cell.call_id))
        except Exception as exc:  # noqa: BLE001 - a closed tool must not fail the run
            return [Content.from_text(f"[error] {type(exc).__name__}: {exc}")]
        return _HOOKS.render(reply)


class CodeActProvider(ContextProvider, Facade):
    """Adds `execute_code` and its instructions to every run, over provider-owned tools.

    Mirrors the framework's `MontyCodeActProvider`: `tools` and `approval_mode` as there, and
    `add_tools`, `get_tools`, `remove_tool`, `clear_tools`. The code runs in tooliscode's
    sandbox (the options are every front end's), one interpreter per `AgentSession`.
    """

    DEFAULT_SOURCE_ID = "tooliscode_codeact"

    def __init__(self, source_id: str = DEFAULT_SOURCE_ID, *, tools: ToolsInput | None = None,
                 approval_mode: ApprovalMode | None = None,
                 **options: Unpack[OptionArgs]) -> None:
        super().__init__(source_id)
        self.execute_code = ExecuteCodeTool(tools=tools, approval_mode=approval_mode,
                                            **options)
        """The provider's tool; each run gets a copy with the tools registered then."""
        self.execute_code._prompted = True
        self.execute_code._refresh()
        self._code_tool = self.execute_code.code_tool
        self._run_tool: ExecuteCodeTool | None = None

    def add_tools(self, tools: ToolsInput) -> None:
        self.execute_code.add_tools(tools)
        self._run_tool = None

    def get_tools(self) -> list[FunctionTool]:
        return self.execute_code.get_tools()

    def remove_tool(self, name: str) -> None:
        self.execute_code.remove_tool(name)
        self._run_tool = None

    def clear_tools(self) -> None:
        self.execute_code.clear_tools()
        self._run_tool = None

    def _session_tools(self) -> Toolbox:
        return self.execute_code._session_tools()

    async def before_run(self, *, agent: Any, session: AgentSession | None,
                         context: SessionContext, state: dict[str, Any]) -> None:
        """Inject the CodeAct instructions and a run-scoped `execute_code` tool (and the
        tools `callers` gives the model itself)."""
        run_tool = self._run_tool
        if run_tool is None:  # a copy per tool list: runs that change nothing share one
            run_tool = self._run_tool = self.execute_code.create_run_tool()
        state.update(run_tool.build_serializable_state())  # the provider's own part of it
        context.extend_instructions(self.source_id, run_tool.build_instructions())
        context.extend_tools(self.source_id, [run_tool, *run_tool.direct_tools])
