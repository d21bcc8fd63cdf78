"""Inner calls through a LangChain agent's tool-call middleware.

`create_agent` composes every middleware's `wrap_tool_call` into one chain, first listed
outermost, ending in the `ToolNode`'s execution of `request.tool` (which need not be one of
the agent's tools). `CodeModeMiddleware`, listed first, keeps the rest of that chain (its
`handler`) for the `run_python` call; each call the code makes is sent down it as a tool call
of its own, `<run_python call id>:<n>`, so every middleware listed after it sees the call as
it sees a direct one (human-in-the-loop, retries, error handling, your own).

The chain ends in a `ToolMessage`, whose content is text. The tool the chain runs is a
`CodeCall` standing in for the real one: it invokes the real tool with the arguments, as the
code tool does without middleware (a child run of `run_python`), and returns its message with
the value itself as the artifact, so the code gets the value and not its text.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import reprlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import patch_config
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langgraph.errors import GraphInterrupt
from langgraph.types import Command
from pydantic import PrivateAttr
from tooliscode import ToolError
from tooliscode.adapters import Cell
from tooliscode.engine import CallPaused, background_loop, run_in

try:
    from langgraph.errors import is_invalid_resume
except ImportError:  # langgraph before 1.2 never marks resume errors
    def is_invalid_resume(error: BaseException) -> bool:
        return False

__all__ = ["Chain", "CodeCall", "Turn", "async_only", "failure", "interrupted", "outer_id",
           "request_for", "through_chain", "unreviewed", "value_of"]

_PREVIEW = reprlib.Repr()
_PREVIEW.maxstring, _PREVIEW.maxother, _PREVIEW.maxlist, _PREVIEW.maxdict = 400, 200, 10, 10

_calling: contextvars.ContextVar[Turn | None] = contextvars.ContextVar(
    "tooliscode_langchain_turn", default=None)
"""The turn an inner call runs for, inside the chain (where `CodeCall` reads it)."""
unreviewed: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "tooliscode_langchain_unreviewed", default=None)
"""Set (to the tool's name) on an inner call that human-in-the-loop must ask about in the
chain before the tool runs: the tool refuses to run if it was not asked."""


@dataclass(frozen=True)
class _Value:
    """A tool's value, riding as a `ToolMessage` artifact past the middleware."""

    value: Any


@dataclass
class Chain:
    """The rest of the agent's tool-call chain for one `run_python` call."""

    request: Any
    """The `run_python` call's `ToolCallRequest`: inner calls are variations of it."""
    handler: Callable[[Any], Any]
    """Runs a request through the middleware after `CodeModeMiddleware`, then the tool
    (returns an awaitable under an async agent)."""


@dataclass(kw_only=True)
class Turn(Cell):
    """What the running cell's inner calls need (the sandbox's `context` for one cell)."""

    config: RunnableConfig
    """The code tool's config, its callbacks the code tool run's child manager."""
    is_async: bool
    chain: Chain | None = None
    context: contextvars.Context | None = None
    """The code tool's context (LangGraph's config lives in it: `interrupt()` needs it)."""
    gate: Any = None
    """Decides which inner calls wait for a person (see `_approval.py`)."""
    consumed: int = 0
    """How many of this task's LangGraph interrupts this invocation has had answered."""
    raised: dict[str, GraphInterrupt] = field(default_factory=dict)
    """The interrupts inner calls raised in this invocation, by inner call id."""
    pause_s: float | None = None
    """How long a paused call waits for its answer (`Limits.pause_s`)."""
    waiting: dict[str, tuple[str, Any]] = field(default_factory=dict)
    """Calls a cell run again from its record waited on (id: kind and metadata): they
    pause again as they did, not asked again (that would take another call's answer)."""
    refused: frozenset[str] = frozenset()
    """Outside the chain: tools a reviewer around the code tool reviews, refused from code."""


class CodeCall(BaseTool):
    """The tool the chain runs for an inner call: the real tool, its value kept as the
    message's artifact. Its name, description, schema and function stand for the real
    tool's, so middleware (and LangGraph's argument injection) read them as the real one's."""

    name: str
    description: str = ""
    args_schema: Any = None
    func: Any = None
    coroutine: Any = None
    _tool: BaseTool = PrivateAttr()

    @classmethod
    def of(cls, tool: BaseTool) -> CodeCall:
        call = cls(name=tool.name, description=tool.description, args_schema=tool.args_schema,
                   func=getattr(tool, "func", None), coroutine=getattr(tool, "coroutine", None))
        call._tool = tool
        return call

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        self._check_reviewed()
        tool, arguments, config = self._tool, input["args"], _child(config)
        if async_only(tool):  # as without middleware: on the sandbox's own loop
            value = asyncio.run_coroutine_threadsafe(tool.ainvoke(arguments, config, **kwargs),
                                                     background_loop()).result()
        else:
            value = tool.invoke(arguments, config, **kwargs)
        return self._message(input, value)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None,
                      **kwargs: Any) -> Any:
        self._check_reviewed()
        return self._message(input, await self._tool.ainvoke(input["args"], _child(config),
                                                             **kwargs))

    def _check_reviewed(self) -> None:
        if unreviewed.get() == self.name:
            raise ToolError(
                f"{self.name} needs a person's review, which HumanInTheLoopMiddleware did not "
                "ask for: list it after CodeModeMiddleware in the agent's middleware, so that "
                "the calls the code makes pass through it; the call did not run")

    def _message(self, call: dict[str, Any], value: Any) -> ToolMessage:
        content = value if isinstance(value, str) else _PREVIEW.repr(value)
        return ToolMessage(content, artifact=_Value(value), tool_call_id=call["id"],
                           name=self.name)

    def _run(self, *args: Any, **kwargs: Any) -> Any:  # only `invoke` runs it
        raise NotImplementedError


def async_only(tool: BaseTool) -> bool:
    return isinstance(tool, StructuredTool) and tool.func is None and tool.coroutine is not None


def outer_id(request: Any) -> str:
    """The id of the `run_python` call: the model's, else LangGraph's task's (the same
    when the task runs again on resume)."""
    found = request.tool_call.get("id")
    if found:
        return str(found)
    info = getattr(request.runtime, "execution_info", None)
    return f"task-{info.task_id}" if info is not None else "run_python"


def _child(config: RunnableConfig | None) -> RunnableConfig:
    """`config` with the code tool run's child callbacks, so the real tool's run shows as
    a child of `run_python`, as without middleware."""
    turn = _calling.get()
    if turn is None or config is None:
        return config or {}
    callbacks = turn.config.get("callbacks")  # the child manager `_tool.py` made for the cell
    return patch_config(config, callbacks=callbacks)  # type: ignore[arg-type]


def value_of(result: Any, call_id: str) -> Any:
    """What the code gets for the chain's `result`: the tool's value (or the text that
    took its place); `ToolError` for an error message."""
    message = result
    if isinstance(result, Command):
        update = result.update if isinstance(result.update, dict) else {}
        message = next((m for m in reversed(update.get("messages") or [])
                        if isinstance(m, ToolMessage) and m.tool_call_id == call_id), None)
    if not isinstance(message, ToolMessage):
        return None
    if message.status == "error":
        raise ToolError(str(message.text))
    if isinstance(message.artifact, _Value):
        return message.artifact.value
    return message.content


def request_for(turn: Turn, tool: CodeCall, arguments: dict[str, Any], call_id: str) -> Any:
    """The `run_python` request made into one inner call's."""
    request = turn.chain.request  # type: ignore[union-attr]
    runtime = request.runtime
    if dataclasses.is_dataclass(runtime) and not isinstance(runtime, type):
        runtime = dataclasses.replace(runtime, tool_call_id=call_id)
    return dataclasses.replace(
        request, tool=tool, runtime=runtime,
        tool_call={"name": tool.name, "args": arguments, "id": call_id, "type": "tool_call"})


def through_chain(turn: Turn, tool: CodeCall, arguments: dict[str, Any], call_id: str,
                  before: Callable[[], None] | None = None) -> Any:
    """Send one inner call down the chain in the code tool's context: its value, or (under
    an async agent) an awaitable of it. `before` runs first, in that context."""
    context = (turn.context or contextvars.copy_context()).copy()
    if turn.is_async:
        return run_in(context, _acall(turn, tool, arguments, call_id, before))
    return context.run(_call, turn, tool, arguments, call_id, before)


def _call(turn: Turn, tool: CodeCall, arguments: dict[str, Any], call_id: str,
          before: Callable[[], None] | None) -> Any:
    with _calling_through(turn, call_id, before):
        request = request_for(turn, tool, arguments, call_id)
        return value_of(turn.chain.handler(request), call_id)  # type: ignore[union-attr]


async def _acall(turn: Turn, tool: CodeCall, arguments: dict[str, Any], call_id: str,
                 before: Callable[[], None] | None) -> Any:
    with _calling_through(turn, call_id, before):
        request = request_for(turn, tool, arguments, call_id)
        return value_of(await turn.chain.handler(request), call_id)  # type: ignore[union-attr]


@contextlib.contextmanager
def _calling_through(turn: Turn, call_id: str,
                     before: Callable[[], None] | None) -> Iterator[None]:
    """Around one inner call down the chain (in its own context): `before` first; an
    interrupt pauses the call, a `ToolException` is the code's `ToolError`."""
    _calling.set(turn)
    if before is not None:
        before()
    try:
        yield
    except GraphInterrupt as exc:
        raise _paused(turn, call_id, exc) from None
    except ToolException as exc:
        raise ToolError(str(exc)) from None


def failure(exc: BaseException) -> str:
    """What the code reads for a tool that failed (as the sandbox words it); an answer
    that does not fit an interrupt's schema is raised instead, to be answered again."""
    if is_invalid_resume(exc):
        raise exc
    if isinstance(exc, ToolError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _paused(turn: Turn, call_id: str, interrupt: GraphInterrupt) -> CallPaused:
    """Something in the chain (human-in-the-loop in `per_call` mode, a tool calling
    `interrupt()`) interrupted the graph at this call: the call waits for the answer."""
    turn.raised[call_id] = interrupt
    return CallPaused("interrupt", interrupted(turn))


def interrupted(turn: Turn) -> dict[str, Any]:
    """What a call paused by an interrupt records: how many answers came before it, and
    when its pause expires (its answer then comes too late: the tool must not run)."""
    return {"slot": turn.consumed,
            "expires": None if turn.pause_s is None else time.time() + turn.pause_s}
