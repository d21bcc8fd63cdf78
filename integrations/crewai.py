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

import itertools
import json
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from crewai.tools import BaseTool
from crewai.tools import tool as crewai_tool
from crewai.tools.tool_failure import ToolFailure, ToolFailureReason
from crewai.utilities.agent_utils import execute_single_native_tool_call
from crewai.utilities.string_utils import sanitize_tool_name
from pydantic import BaseModel, Field, PrivateAttr
from tooliscode import Limits, Session, Tool, ToolError, ToolRegistry
from tooliscode.codetool import CodeTool, Reply
from tooliscode.durable import Keeper, SessionStore
from tooliscode.prompt import (
    CODE_TOOL_NAME,
    CODE_TOOL_SCHEMA,
    code_tool_description,
    instructions,
)
from tooliscode.runtime import Runtime, python_note

from ._inner import bind_sync, resolved, returns, toolbox

__all__ = ["CodeModeTool", "ConversationKey", "as_crewai_tool", "code_mode"]

ConversationKey = Callable[[Any, Any, Any], "Hashable | None"]
"""`key(agent, task, crew)`: the conversation whose interpreter a call should use."""


class _CodeArgs(BaseModel):
    code: str = Field(description=CODE_TOOL_SCHEMA["properties"]["code"]["description"])


@dataclass
class _Turn:
    """The running task's agent, task and crew (None when the tool runs outside a crew)."""

    agent: Any
    task: Any
    crew: Any
    handler: Any
    ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))


class CodeModeTool(BaseTool):
    """`run_python` over CrewAI tools, for an agent's `tools`."""

    name: str = CODE_TOOL_NAME
    description: str = ""
    args_schema: type[BaseModel] = _CodeArgs
    instructions: str = ""
    """How to use the code tool and the tool catalog, for a backstory or system prompt."""
    agent: Any = Field(default=None, exclude=True)
    """The agent whose task context (task, crew, cache) inner calls run with."""
    conversation: Any = Field(default=None, exclude=True)
    """A key, or a `ConversationKey` function; None: the crew, else the agent."""

    _tools: list[BaseTool] = PrivateAttr(default_factory=list)
    _names: list[str] = PrivateAttr(default_factory=list)
    """The wrapped tools' names as CrewAI's tool calls spell them."""
    _code: CodeTool = PrivateAttr()

    @property
    def tools(self) -> list[BaseTool]:
        """The wrapped tools."""
        return list(self._tools)

    def _run(self, code: str) -> str | ToolFailure:
        turn = self._turn()
        reply = self._code.run_code(code, key=self._key(turn), context=turn)
        return _answer(reply)

    def _turn(self) -> _Turn:
        executor = getattr(self.agent, "agent_executor", None)
        task = getattr(executor, "task", None)
        crew = getattr(self.agent, "crew", None) or getattr(executor, "crew", None)
        return _Turn(self.agent, task, crew, getattr(executor, "tools_handler", None))

    def _key(self, turn: _Turn) -> Hashable:
        choose = self.conversation
        if choose is not None:
            return choose(turn.agent, turn.task, turn.crew) if callable(choose) else choose
        if turn.crew is not None:
            return ("crew", str(turn.crew.id))
        return ("agent", str(turn.agent.id)) if turn.agent is not None else None

    def _call(self, index: int, turn: _Turn, arguments: dict[str, Any]) -> Any:
        """One inner call through CrewAI's path for a native tool call; the tool's own value
        (not the text CrewAI would show the model) is what the code gets."""
        tool, name = self._tools[index], self._names[index]
        ran: dict[str, Any] = {}

        def run(**kwargs: Any) -> Any:
            try:
                ran["value"] = tool.run(**kwargs)
            except Exception as exc:
                ran["error"] = exc
                raise
            return ran["value"]

        outcome = execute_single_native_tool_call(
            {"id": f"{self.name}-{next(turn.ids)}", "function": {"name": name,
                                                                 "arguments": arguments}},
            available_functions={name: run}, original_tools=[tool], structured_tools=None,
            tools_handler=turn.handler, agent=turn.agent, task=turn.task, crew=turn.crew,
            event_source=self)
        if "error" in ran:
            raise ToolError(str(ran["error"])) from ran["error"]
        if "value" not in ran:
            if outcome.from_cache:  # the cache holds what the tool returned
                return turn.handler.cache.read(tool=name, input=_input(arguments))
            raise ToolError(outcome.result)  # blocked by a hook, or over its usage limit
        value = ran["value"]
        if isinstance(value, ToolFailure):
            raise ToolError(value.message)
        return value

    # -- conversations ---------------------------------------------------------------------

    def session(self, key: Hashable = None) -> Session:
        """A conversation's interpreter, started now if need be (e.g. to read its files)."""
        return self._code.session(key)

    def drop(self, key: Hashable = None) -> bool:
        """Close one conversation's interpreter now."""
        return self._code.drop(key)

    def close(self) -> None:
        """Close every interpreter."""
        self._code.close()


def as_crewai_tool(tools: Iterable[Any] = (), *, agent: Any = None,
                   conversation: Hashable | ConversationKey | None = None,
                   limits: Limits | None = None, runtime: Runtime | str | None = None,
                   store: SessionStore | Keeper | None = None, name: str = CODE_TOOL_NAME,
                   instructions_in_description: bool = True,
                   idle_timeout_s: float | None = 1800.0,
                   max_sessions: int | None = None) -> CodeModeTool:
    """One CrewAI tool that runs code calling `tools` (CrewAI tools or callables).

    Give `agent` (or use `code_mode`) so inner calls carry the agent, its task and crew to the
    hooks, events and cache. The catalog goes in the description unless
    `instructions_in_description` is false; then put `tool.instructions` in the backstory.
    """
    wrapped = [t if isinstance(t, BaseTool) else crewai_tool(resolved(t)) for t in tools]
    declared = [_declaration(t) for t in wrapped]
    registry = ToolRegistry(declared)
    guide = instructions(registry, name, python=python_note(runtime))
    tool = CodeModeTool(
        name=name, instructions=guide, agent=agent, conversation=conversation,
        description=guide if instructions_in_description else code_tool_description(
            registry, name))
    tool._tools, tool._names = wrapped, [d.name for d in declared]
    tool._code = CodeTool(toolbox(declared, lambda sandbox, i: bind_sync(
        declared[i], sandbox, _Turn, lambda turn, args: tool._call(i, turn, args))),
        limits=limits, runtime=runtime, store=store, idle_timeout_s=idle_timeout_s,
        max_sessions=max_sessions)
    return tool


def code_mode(agent: Any, tools: Iterable[Any] | None = None, **options: Any) -> CodeModeTool:
    """Replace `agent`'s tools by one code tool over them, or over `tools` (plain callables
    too, which `Agent(tools=...)` refuses); options as for `as_crewai_tool`. Returns the code
    tool (close it when done)."""
    tool = as_crewai_tool(agent.tools or [] if tools is None else tools, agent=agent, **options)
    agent.tools = [tool]
    return tool


# -- helpers ---------------------------------------------------------------------------------


def _declaration(tool: BaseTool) -> Tool:
    """A CrewAI tool as the sandbox declares it (its function is bound per sandbox)."""
    schema = tool.args_schema.model_json_schema() if tool.args_schema else {}
    function = getattr(tool, "func", None)
    return Tool(name=sanitize_tool_name(tool.name), description=tool.description or "",
                parameters=schema, output_schema=returns(function) if function else None)


def _input(arguments: dict[str, Any]) -> str:
    """The cache's key for arguments, as CrewAI writes it."""
    return json.dumps(arguments) if arguments else ""


def _answer(reply: Reply) -> str | ToolFailure:
    if not reply.ok:
        return ToolFailure(message=reply.text, reason=ToolFailureReason.TOOL_REPORTED)
    return reply.text
