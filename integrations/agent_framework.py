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
import dataclasses
import itertools
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field
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
from tooliscode import Limits, Tool, ToolError, ToolRegistry
from tooliscode.codetool import CodeTool, Reply, Sandbox, Toolbox, fingerprint
from tooliscode.durable import Keeper, SessionStore
from tooliscode.engine import run_in
from tooliscode.prompt import CODE_TOOL_SCHEMA, code_tool_description, instructions
from tooliscode.runtime import Runtime, python_note
from tooliscode.tools import return_schema

from ._inner import running

__all__ = ["CodeActProvider", "ExecuteCodeTool"]

EXECUTE_CODE = "execute_code"
"""The code tool's name, as in the framework's own CodeAct providers."""

ApprovalMode = Literal["always_require", "never_require"]
ToolsInput = FunctionTool | Callable[..., Any] | Sequence[FunctionTool | Callable[..., Any]]


@dataclass
class _Cell:
    """What the running cell's calls need: the code tool's invocation context, and its
    context variables (the current span among them)."""

    ctx: FunctionInvocationContext
    context: contextvars.Context
    call_id: str
    ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    async def call(self, tool: FunctionTool, arguments: dict[str, Any]) -> Any:
        outer = self.ctx
        ctx = FunctionInvocationContext(
            function=tool, arguments=arguments, session=outer.session, kwargs=outer.kwargs,
            tools=outer.tools,
            parent_service_session_state_keys=outer.parent_service_session_state_keys)
        try:
            return _plain(await tool.invoke(arguments=arguments, context=ctx, skip_parsing=True,
                                            tool_call_id=f"{self.call_id}:{next(self.ids)}"))
        except ToolException as exc:
            raise ToolError(str(exc)) from None


@dataclass(frozen=True)
class _InnerTool:
    """The function the session calls for one registered tool: it runs in the current cell."""

    sandbox: Sandbox
    tool: FunctionTool

    async def __call__(self, /, **arguments: Any) -> Any:
        cell = running(self.sandbox, _Cell)
        return await run_in(cell.context.copy(), cell.call(self.tool, arguments))


def _declaration(tool: FunctionTool) -> Tool:
    """The tool as the sandbox declares it: the framework's schema of its arguments, and what
    its function's return annotation says it returns."""
    func = tool.func
    return Tool(name=tool.name, description=tool.description or "",
                parameters=tool.parameters(),
                output_schema=return_schema(func) if callable(func) else None)


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


class ExecuteCodeTool(FunctionTool):
    """`execute_code`: runs the model's code in a sandbox where the registered tools are
    Python functions. Put it in an agent's `tools`, and `build_instructions(...)` in its
    instructions (or use `CodeActProvider`, which does both for every run).

    Interpreters are kept per `AgentSession` (by `session_id`) in `codetool`, which copies
    made by `create_run_tool` share; idle ones close after `idle_timeout_s`, at most
    `max_sessions` are kept. `runtime="data"` gives the code numpy, pandas and matplotlib
    (figures come back as image `Content`); `store=` keeps each session's interpreter in a
    store every worker process shares (`tooliscode.durable`).
    """

    def __init__(self, *, tools: ToolsInput | None = None,
                 approval_mode: ApprovalMode | None = None, name: str = EXECUTE_CODE,
                 limits: Limits | None = None, runtime: Runtime | str | None = None,
                 store: SessionStore | Keeper | None = None,
                 idle_timeout_s: float | None = 1800.0, max_sessions: int | None = 64,
                 describe_names: bool = True, codetool: CodeTool | None = None) -> None:
        super().__init__(name=name, description="", approval_mode="never_require",
                         func=self._run_code, input_model=dict(CODE_TOOL_SCHEMA))
        self._default_approval_mode: ApprovalMode = approval_mode or "never_require"
        self.codetool = codetool or CodeTool(
            limits=limits, runtime=runtime, store=store, idle_timeout_s=idle_timeout_s,
            max_sessions=max_sessions, describe_names=describe_names)
        """The interpreters, by session id (`None`: calls made outside a session)."""
        self._managed: list[FunctionTool] = []
        self._instructions: str | None = None
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
        needs = self._default_approval_mode == "always_require" or any(
            t.approval_mode == "always_require" for t in self._managed)
        self.approval_mode = "always_require" if needs else "never_require"
        tools = list(self._managed)
        declarations = [_declaration(t) for t in tools]
        self._registry = ToolRegistry(declarations)
        self._instructions = None
        self.description = code_tool_description(self._registry, self.name)
        self._toolbox = Toolbox(
            lambda sandbox: [dataclasses.replace(d, function=_InnerTool(sandbox, t))
                             for d, t in zip(declarations, tools)],
            (fingerprint(declarations), tuple(id(t) for t in tools)))

    # -- what the agent uses -------------------------------------------------------------

    def build_instructions(self, *, tools_visible_to_model: bool = False) -> str:
        """How to use the code tool, and the catalog of the registered tools."""
        if self._instructions is None:  # a catalog of many tools takes milliseconds to build
            self._instructions = instructions(self._registry, self.name,
                                              python=python_note(self.codetool.runtime))
        text = self._instructions
        if tools_visible_to_model:
            text += (f"\n\nSome of these tools may also be offered directly; use `{self.name}` "
                     "to combine them with Python control flow.")
        return text

    def create_run_tool(self) -> ExecuteCodeTool:
        """A copy with today's tools, for one run (it shares the interpreters)."""
        run = ExecuteCodeTool(approval_mode=self._default_approval_mode, name=self.name,
                              codetool=self.codetool)
        run._managed = list(self._managed)
        run._refresh()
        return run

    def build_serializable_state(self) -> dict[str, Any]:
        """What a run used, as JSON for the session's state."""
        runtime = self.codetool.runtime
        if runtime is not None and not isinstance(runtime, str):
            runtime = type(runtime).__name__
        return {"runtime": f"tooliscode:{runtime or 'default'}",
                "approval_mode": self.approval_mode,
                "tool_names": [t.name for t in self._managed]}

    # -- conversations ---------------------------------------------------------------------

    @property
    def session_ids(self) -> list[Hashable]:
        """The sessions with a live interpreter."""
        return self.codetool.keys

    def session(self, session_id: str | None = None) -> Any:
        """A session's live `tooliscode.Session`, or `None` (e.g. to read the files it wrote)."""
        sandbox = self.codetool.get(session_id)
        return sandbox.session if sandbox is not None else None

    def drop(self, session_id: str | None = None) -> bool:
        """Close one session's interpreter now (the conversation ended)."""
        return self.codetool.drop(session_id)

    def close(self) -> None:
        """Close every interpreter."""
        self.codetool.close()

    # -- running code ------------------------------------------------------------------------

    async def _run_code(self, code: str, ctx: FunctionInvocationContext) -> list[Content]:
        session = ctx.session
        key = session.session_id if isinstance(session, AgentSession) else None
        cell = _Cell(ctx, contextvars.copy_context(), f"{self.name}-{id(ctx):x}")
        try:
            reply = await self.codetool.arun_code(code, key=key, context=cell,
                                                  tools=self._toolbox)
        except Exception as exc:  # noqa: BLE001 - a closed tool must not fail the run
            return [Content.from_text(f"[error] {type(exc).__name__}: {exc}")]
        return _contents(reply)


def _contents(reply: Reply) -> list[Content]:
    """What the model reads: the text, then each figure the cell made as image data."""
    return [Content.from_text(reply.text),
            *(Content.from_data(data=i.data, media_type=i.mime, name=i.path,
                                additional_properties={"path": f"/session/{i.path}"})
              for i in reply.images)]


class CodeActProvider(ContextProvider):
    """Adds `execute_code` and its instructions to every run, over provider-owned tools.

    Mirrors the framework's `MontyCodeActProvider`: `tools` and `approval_mode` as there, and
    `add_tools`, `get_tools`, `remove_tool`, `clear_tools`. The code runs in tooliscode's
    sandbox (`limits`, `runtime`, `store` as in every tooliscode adapter), one interpreter
    per `AgentSession`.
    """

    DEFAULT_SOURCE_ID = "tooliscode_codeact"

    def __init__(self, source_id: str = DEFAULT_SOURCE_ID, *, tools: ToolsInput | None = None,
                 approval_mode: ApprovalMode | None = None, name: str = EXECUTE_CODE,
                 limits: Limits | None = None, runtime: Runtime | str | None = None,
                 store: SessionStore | Keeper | None = None,
                 idle_timeout_s: float | None = 1800.0, max_sessions: int | None = 64) -> None:
        super().__init__(source_id)
        self.execute_code = ExecuteCodeTool(
            tools=tools, approval_mode=approval_mode, name=name, limits=limits,
            runtime=runtime, store=store, idle_timeout_s=idle_timeout_s,
            max_sessions=max_sessions)
        """The provider's tool; each run gets a copy with the tools registered then."""
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

    def session(self, session_id: str | None = None) -> Any:
        """A session's live `tooliscode.Session`, or `None`."""
        return self.execute_code.session(session_id)

    def drop(self, session_id: str | None = None) -> bool:
        """Close one session's interpreter now."""
        return self.execute_code.drop(session_id)

    def close(self) -> None:
        """Close every interpreter."""
        self.execute_code.close()

    async def before_run(self, *, agent: Any, session: AgentSession | None,
                         context: SessionContext, state: dict[str, Any]) -> None:
        """Inject the CodeAct instructions and a run-scoped `execute_code` tool."""
        run_tool = self._run_tool
        if run_tool is None:  # a copy per tool list: runs that change nothing share one
            run_tool = self._run_tool = self.execute_code.create_run_tool()
        state.update(run_tool.build_serializable_state())  # the provider's own part of it
        context.extend_instructions(self.source_id, run_tool.build_instructions())
        context.extend_tools(self.source_id, [run_tool])
