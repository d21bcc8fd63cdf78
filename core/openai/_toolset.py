"""`ToolIsCode`: code mode for the raw OpenAI APIs (Responses and Chat Completions).

    tic = ToolIsCode(tools, callback)
    response = client.responses.create(model=..., tools=tic.tools,
                                       instructions=tic.instructions, input=...)
    outputs = [tic.tool_call(item) for item in response.output if item.type == "function_call"]

The model sees one tool, `run_python`; its code calls the real tools, which run here.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import json
from collections.abc import Hashable, Iterable, Mapping
from operator import attrgetter
from pathlib import Path
from typing import Any

from typing_extensions import Unpack

from .._closing import Closing
from ..adapters import Catalog, Facade, OptionArgs, Options, OutputSink
from ..codetool import Outcome, Reply, Sandbox, Toolbox
from ..engine import CellResult, Limits, background_loop
from ..errors import ToolError
from ..prompt import (
    CODE_TOOL_SCHEMA,
    LLM_QUERY_NOTE,
    responses_output,
)
from ..runtime import Runtime
from ..tools import Tool, ToolRegistry, as_tool, split_callers
from ._callback import LLM, LLM_TOOL_NAME, Callback, CallIds, bind_callback, llm_tool
from ._tool_call import Api, CodeCall, parse_call

__all__ = ["ToolIsCode", "ToolOutput"]


class ToolOutput(dict, Outcome):
    """The item to send back to the model (to the API it is a plain dict), plus what ran.

    `has_final` says the code called `final_answer(value)`: `final` is then the answer and
    the caller can stop without another model turn.
    """

    def __init__(self, item: Mapping[str, Any], result: CellResult | None = None):
        super().__init__(item)
        self.result = result

    @property
    def text(self) -> str:
        """What the model reads (besides any images)."""
        output = self.get("output", self.get("content", ""))
        if isinstance(output, list):
            return "".join(p.get("text", "") for p in output if isinstance(p, dict))
        return str(output)


def _output(call: CodeCall, reply: Reply) -> ToolOutput:
    """The output item of a run: on Responses, the text and each figure as an `input_image`
    (Chat Completions tool messages carry text only; the text lists the files)."""
    item = call.output(reply.text)
    if reply.images and call.api == "responses":
        item["output"] = responses_output(reply.text, reply.images)
    return ToolOutput(item, reply.result)


def _split(tools: Iterable[Any]) -> tuple[list[Tool], list[dict[str, Any]]]:
    """Function tools, and the other tools (web search, file search, ...) passed through."""
    function_tools: list[Tool] = []
    passthrough: list[dict[str, Any]] = []
    for item in tools:
        if isinstance(item, Mapping) and item.get("type", "function") != "function":
            passthrough.append(copy.deepcopy(dict(item)))
        else:
            function_tools.append(as_tool(item))
    return function_tools, passthrough



def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                            default=str)


def _failure(exc: Exception) -> str:
    return f"[error] {exc}" if isinstance(exc, ToolError) else \
        f"[error] {type(exc).__name__}: {exc}"


async def _awaited(value: Any) -> Any:
    return await value


class ToolIsCode(Facade, Closing):
    """An agent's tools as one code tool, with a stateful sandbox per conversation.

    `tools` may be callables, `Tool`s, or OpenAI tool dicts (either API's shape). Function
    tools without a callable of their own run through `callback(req_id, func_name, args)`
    (sync or async), where `req_id` is the model's call id and a counter, e.g. `call_7:2`.
    Non-function tools pass through to `.tools` untouched. Given `llm` (a prompt -> text
    callable), code can call `llm_query(prompt)`.

    One instance is one conversation unless you pass `key=` (a conversation id) to
    `tool_call`; keyed sessions idle for `idle_timeout_s` are closed, and at most
    `max_sessions` are kept.

    `callers` names the function tools the model calls itself: "direct" ones are listed
    beside the code tool and left out of the code, "both" ones are in each; `tool_call` runs
    a direct call too.
    """

    def __init__(self, tools: Iterable[Any] = (), callback: Callback | None = None, *,
                 llm: LLM | None = None, api: Api = "responses",
                 workdir: str | Path | None = None, catalog_chars: int = 6_000,
                 **options: Unpack[OptionArgs]):
        if api not in ("responses", "chat"):
            raise ValueError(f"api must be 'responses' or 'chat', not {api!r}")
        if "key" in options:
            raise TypeError("ToolIsCode() takes no key=: one instance serves every "
                            "conversation; pass key=conversation_id to each tool_call, "
                            "atool_call, run_code or run_conversation")
        self.api: Api = api
        self.options = Options(**options)
        """Every front end's options (`tooliscode.adapters.Options`)."""
        self.name = self.options.name
        self.limits = self.options.limits or Limits()
        self._callback = callback
        self._llm = llm
        every, self._passthrough = _split(tools)
        self._tools, direct = split_callers(every, self.options.callers, attrgetter("name"))
        self._direct = {t.name: t for t in direct}
        self.registry = ToolRegistry(self._tools)
        """The tools the code can call (`llm_query` is not counted among them)."""
        unbound = [t.name for t in every if t.function is None]
        if unbound and callback is None:
            raise ValueError(f"tools {', '.join(unbound[:5])} have no function: pass "
                             "callback=fn(req_id, func_name, args) to run them")
        if llm is not None and LLM_TOOL_NAME in self.registry:
            raise ValueError(f"a tool is already named {LLM_TOOL_NAME!r}; rename it to use llm=")
        self._inner = frozenset(t.name for t in self._tools) | frozenset(
            t.python_name for t in self._tools)
        self._direct_names = frozenset(self._direct)
        self._catalog_chars = catalog_chars
        self._code_tool = Options.of(self.options, limits=self.limits).code_tool(
            Toolbox(self._bind), workdir=workdir)

    # -- what the model is given --------------------------------------------------------------

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The tool list for the API chosen with `api=` (Responses by default)."""
        return self.tools_for(self.api)

    def tools_for(self, api: Api) -> list[dict[str, Any]]:
        """The code tool in `api`'s shape, then the tools the model calls directly, then the
        passed-through non-function tools."""
        catalog = self._catalog()
        bodies: list[dict[str, Any]] = [{"name": self.name,
                   "description": catalog.tool_description(self.options.in_description(True)),
                   "parameters": copy.deepcopy(CODE_TOOL_SCHEMA), "strict": True},
                  *({"name": t.name, "description": t.description,
                     "parameters": copy.deepcopy(t.parameters)} for t in self._direct.values())]
        shaped: list[dict[str, Any]] = [{"type": "function", "function": b} if api == "chat"
                                        else {"type": "function", **b} for b in bodies]
        return [*shaped, *copy.deepcopy(self._passthrough)]

    @property
    def llm(self) -> LLM | None:
        """The model callable behind `llm_query` in the sandbox, if one was given."""
        return self._llm

    @property
    def instructions(self) -> str:
        """The system prompt part: how to use the code tool, and the tool catalog (pass it as
        the API's instructions, unless `instructions="description"` put it in the tool)."""
        return self._catalog().instructions

    def _catalog(self) -> Catalog:
        return Catalog.of(self._tools, self.name, python=self.options.python,
                          budget_chars=self._catalog_chars,
                          notes=[LLM_QUERY_NOTE] if self._llm is not None else [])

    @property
    def runtime(self) -> Runtime | str | None:
        return self.code_tool.runtime

    @property
    def workdir(self) -> Path | None:
        return self.code_tool.workdir

    # -- running calls ------------------------------------------------------------------------

    def tool_call(self, item: Any, *, key: Hashable = None,
                  on_output: OutputSink | None = None) -> ToolOutput:
        """Run one call of the code tool and return the output item to send back.

        `item` is a Responses `function_call` item or a Chat Completions tool call, as a dict
        or an openai SDK object; the answer has the same API's shape. Mistakes the model made
        (bad JSON, another tool's name, no code) come back as outputs, never as exceptions.
        `on_output` (and the `on_output` option) get what the code prints while it runs, as
        `OutputChunk`s named by the model's call id, on the thread that runs the code.
        """
        call = parse_call(item, self.name, self._inner, self._direct_names)
        if call.arguments is not None:
            return self._run_direct(call)
        if call.code is None:
            return ToolOutput(call.output(f"[error] {call.problem}"))
        reply = self.run_code(call.code, key=key, call_id=call.call_id, on_output=on_output)
        return _output(call, reply)

    async def atool_call(self, item: Any, *, key: Hashable = None,
                         on_output: OutputSink | None = None) -> ToolOutput:
        """`tool_call` for async code: async tools and callbacks run on the running loop, and
        so does `on_output` (an awaitable it returns is awaited, in order)."""
        call = parse_call(item, self.name, self._inner, self._direct_names)
        if call.arguments is not None:
            return await self._arun_direct(call)
        if call.code is None:
            return ToolOutput(call.output(f"[error] {call.problem}"))
        reply = await self.arun_code(call.code, key=key, call_id=call.call_id,
                                     on_output=on_output)
        return _output(call, reply)

    def run_code(self, code: str, *, key: Hashable = None, call_id: str = "",
                 on_output: OutputSink | None = None) -> Reply:
        """Run `code` in conversation `key`'s session, without an API's call shape;
        `callback` tools get request ids made from `call_id`, and so do the chunks of what it
        prints (see `tool_call`)."""
        return self.code_tool.run_code(code, key=key, context=CallIds(call_id),
                                       on_output=self.options.output(call_id, on_output))

    async def arun_code(self, code: str, *, key: Hashable = None, call_id: str = "",
                        on_output: OutputSink | None = None) -> Reply:
        """`run_code` for async code."""
        return await self.code_tool.arun_code(code, key=key, context=CallIds(call_id),
                                              on_output=self.options.output(call_id, on_output))

    def _direct_tool(self, call: CodeCall) -> Tool:
        tool = self._direct[call.name]
        if tool.function is None and self._callback is not None:
            tool = bind_callback(tool, self._callback, lambda: call.call_id)
        return tool

    def _run_direct(self, call: CodeCall) -> ToolOutput:
        """A call of a tool the model calls itself, answered with its value as text."""
        try:
            value = self._direct_tool(call).invoke(call.arguments or {})
            if inspect.isawaitable(value):
                value = asyncio.run_coroutine_threadsafe(_awaited(value),
                                                         background_loop()).result()
        except Exception as exc:  # noqa: BLE001 - the model reads the failure
            return ToolOutput(call.output(_failure(exc)))
        return ToolOutput(call.output(_as_text(value)))

    async def _arun_direct(self, call: CodeCall) -> ToolOutput:
        tool = self._direct_tool(call)
        try:
            value = await (tool.ainvoke(call.arguments or {}) if tool.is_async else
                           asyncio.to_thread(tool.invoke, call.arguments or {}))
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:  # noqa: BLE001 - the model reads the failure
            return ToolOutput(call.output(_failure(exc)))
        return ToolOutput(call.output(_as_text(value)))

    # -- sessions -----------------------------------------------------------------------------

    def _bind(self, sandbox: Sandbox) -> list[Tool]:
        """The session's tools: callback tools ask the running cell's `CallIds` for ids."""
        def request_id() -> str:
            ids = sandbox.context
            return ids.next() if isinstance(ids, CallIds) else "call"

        tools: list[Tool] = [bind_callback(t, self._callback, request_id)
                             if t.function is None and self._callback is not None else t
                             for t in self._tools]
        if self._llm is not None:
            tools.append(llm_tool(self._llm))
        return tools

    @property
    def keys(self) -> list[Hashable]:
        """The conversation keys with a live session (as `live()`)."""
        return self.live()

    def evict_idle(self) -> list[Hashable]:
        """Close the keyed sessions idle too long now (it also happens on every call)."""
        return self.code_tool.evict_idle()

