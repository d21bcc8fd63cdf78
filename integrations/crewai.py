"""CrewAI: a crew agent's tools as one code tool.

    analyst = Agent(role="Analyst", goal=..., backstory=..., tools=[list_orders, get_customer])
    code = code_mode(analyst)          # the agent's tools become one `run_python` tool

    Agent(..., tools=[as_crewai_tool([list_orders, get_customer])])   # the same, by hand

The model sees `run_python`; its code calls the wrapped tools as Python functions. Each call
runs through CrewAI's own single-call path (`execute_single_native_tool_call`, what the agent
executor does for the model's calls): the before/after tool-call hooks (a hook may block the
call), the tools handler's cache, the `ToolUsageStarted`/`Finished`/`Error` events on the event
bus, usage limits and the failure policy, with the agent, task and crew of the running task.
A tool that raises, returns a `ToolFailure` or is blocked raises `ToolError` in the code; a
failed cell is returned as a `ToolFailure`, CrewAI's way for a tool to say it did not succeed.

One interpreter per conversation: by default the crew (a later kickoff of the same crew finds
its variables), else the agent; `conversation=` picks another key, e.g. a flow's state id
(CrewAI runs each agent executor as a flow of its own, so the current flow id says nothing).
Tool results are text in CrewAI, so figures reach the model as the files the text lists.

CrewAI 1.x removed its Docker code interpreter (`allow_code_execution` is deprecated and
`Agent.get_code_execution_tools()` returns nothing), so there is no executor slot to fill: an
agent that writes code gets this tool, with or without tools to wrap (`as_crewai_tool([])`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

from crewai.tools import BaseTool
from crewai.tools import tool as crewai_tool
from crewai.tools.tool_failure import ToolFailure, ToolFailureReason
from crewai.utilities.agent_utils import execute_single_native_tool_call
from crewai.utilities.string_utils import sanitize_tool_name
from pydantic import BaseModel, Field, PrivateAttr
from tooliscode import ToolError
from tooliscode.adapters import (
    Binding,
    Cell,
    CodeArgs,
    Hooks,
    OptionArgs,
    Options,
    Tools,
    ToolsFacade,
)
from tooliscode.adapters import evaluated as _evaluated
from tooliscode.codetool import CodeTool, Reply
from tooliscode.prompt import CODE_TOOL_NAME
from tooliscode.tools import return_schema
from typing_extensions import Unpack

__all__ = ["CodeModeTool", "ConversationKey", "as_crewai_tool", "code_mode"]

ConversationKey = Callable[[Any, Any, Any], "Hashable | None"]
"""`key(agent, task, crew)`: the conversation whose interpreter a call should use."""


@dataclass(kw_only=True)
class _Turn(Cell):
    """The running task's agent, task and crew (None when the tool runs outside a crew)."""

    agent: Any
    task: Any
    crew: Any
    handler: Any
    source: Any
    """The code tool: the events of inner calls name it as their source."""


class _Hooks(Hooks[BaseTool, _Turn]):
    """CrewAI tools, run through its own native tool-call path."""

    asynchronous = False

    def declare(self, native: BaseTool) -> Binding[BaseTool]:
        schema = native.args_schema.model_json_schema() if native.args_schema else {}
        function = getattr(native, "func", None)
        return Binding.of(native, name=sanitize_tool_name(native.name),
                          description=native.description, parameters=schema,
                          output_schema=return_schema(function) if function else None)

    def call(self, cell: _Turn, binding: Binding[BaseTool], arguments: dict[str, Any],
             call_id: str) -> Any:
        """One inner call through CrewAI's path for a native tool call (hooks, cache, events,
        usage limits); the tool's own value (not the text CrewAI would show the model) is
        what the code gets."""
        tool, name = binding.native, binding.name
        ran: dict[str, Any] = {}

        def run(**kwargs: Any) -> Any:
            try:
                ran["value"] = tool.run(**kwargs)
            except Exception as exc:
                ran["error"] = exc
                raise
            return ran["value"]

        outcome = execute_single_native_tool_call(
            {"id": call_id, "function": {"name": name, "arguments": arguments}},
            available_functions={name: run}, original_tools=[tool], structured_tools=None,
            tools_handler=cell.handler, agent=cell.agent, task=cell.task, crew=cell.crew,
            event_source=cell.source)
        if "error" in ran:
            raise ToolError(str(ran["error"])) from ran["error"]
        if "value" not in ran:
            if outcome.from_cache:  # the cache holds what the tool returned
                return cell.handler.cache.read(tool=name, input=_input(arguments))
            raise ToolError(outcome.result)  # blocked by a hook, or over its usage limit
        value = ran["value"]
        if isinstance(value, ToolFailure):
            raise ToolError(value.message)
        return value

    def render(self, reply: Reply) -> str | ToolFailure:
        """A failed cell is a `ToolFailure`, CrewAI's way for a tool to say it failed."""
        if not reply.ok:
            return ToolFailure(message=reply.text, reason=ToolFailureReason.TOOL_REPORTED)
        return reply.text

    def key(self, context: Any) -> Hashable:
        """By default the crew (a later kickoff of it finds its variables), else the agent."""
        if context.crew is not None:
            return ("crew", str(context.crew.id))
        return ("agent", str(context.agent.id)) if context.agent is not None else None


_HOOKS = _Hooks()


class CodeModeTool(BaseTool, ToolsFacade):
    """`run_python` over CrewAI tools, for an agent's `tools`."""

    name: str = CODE_TOOL_NAME
    description: str = ""
    args_schema: type[BaseModel] = CodeArgs
    instructions: str = ""
    """How to use the code tool and the tool catalog, for a backstory or system prompt."""
    agent: Any = Field(default=None, exclude=True)
    """The agent whose task context (task, crew, cache) inner calls run with."""
    conversation: Any = Field(default=None, exclude=True)
    """A key, or a `ConversationKey` function; None: the crew, else the agent."""

    _tools: Tools[BaseTool, _Turn] = PrivateAttr()
    _code_tool: CodeTool = PrivateAttr()
    _options: Options = PrivateAttr()

    def _run(self, code: str) -> str | ToolFailure:
        executor = getattr(self.agent, "agent_executor", None)
        turn = _Turn(agent=self.agent, task=getattr(executor, "task", None),
                     crew=getattr(self.agent, "crew", None) or getattr(executor, "crew", None),
                     handler=getattr(executor, "tools_handler", None), source=self,
                     call_id=self.name, tools=self._tools)
        choose = self.conversation
        if choose is None:
            key = _HOOKS.key(turn)
        else:
            key = choose(turn.agent, turn.task, turn.crew) if callable(choose) else choose
        return _HOOKS.render(self.code_tool.run_code(code, key=key, context=turn,
                                                     on_output=self._output(turn)))


def as_crewai_tool(tools: Iterable[Any] = (), *, agent: Any = None,
                   conversation: Hashable | ConversationKey | None = None,
                   **options: Unpack[OptionArgs]) -> CodeModeTool:
    """One CrewAI tool that runs code calling `tools` (CrewAI tools or callables).

    Give `agent` (or use `code_mode`) so inner calls carry the agent, its task and crew to the
    hooks, events and cache. The options are every front end's (`tooliscode.adapters.Options`).
    CrewAI gives a tool no way to add to the system prompt, so the catalog rides in the
    description unless `instructions="prompt"`; then put `tool.instructions` in the backstory.
    """
    settings = Options(**options)
    natives = [t if isinstance(t, BaseTool) else crewai_tool(_evaluated(t)) for t in tools]
    wrapped = Tools.of(_HOOKS, natives, settings.callers)
    catalog = wrapped.catalog(settings)
    tool = CodeModeTool(name=settings.name, instructions=catalog.instructions, agent=agent,
                        conversation=conversation,
                        description=catalog.tool_description(settings.in_description(False)))
    tool._serve(wrapped, settings)
    return tool


def code_mode(agent: Any, tools: Iterable[Any] | None = None, **options: Any) -> CodeModeTool:
    """Replace `agent`'s tools by one code tool over them, or over `tools` (plain callables
    too, which `Agent(tools=...)` refuses); options as for `as_crewai_tool`. Returns the code
    tool (close it when done); tools `callers` keeps for the model stay the agent's too."""
    tool = as_crewai_tool(agent.tools or [] if tools is None else tools, agent=agent, **options)
    agent.tools = [tool, *tool.direct_tools]
    return tool


def _input(arguments: dict[str, Any]) -> str:
    """The cache's key for arguments, as CrewAI writes it."""
    return json.dumps(arguments) if arguments else ""
