"""A whole tool-using conversation with a raw `openai` client, on either API.

    result = run_conversation(openai.OpenAI(), "Which customer spent most?",
                              toolset=tic, model="gpt-5-mini")
    print(result.output)

The loop asks the model, runs every code-tool call in its reply (several per reply are
fine), sends the outputs back, and stops when the model answers in text, when code calls
`final_answer(value)` (no extra model turn), or after `max_iterations` model calls.
The async forms take an `AsyncOpenAI`; `run_batch` / `arun_batch` run many prompts at once,
each in its own session.
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import inspect
import uuid
from collections.abc import Callable, Generator, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..adapters import OutputSink
from ..errors import ToolIsCodeError
from ._callback import LLM
from ._streaming import PartialCall, ToolCallAccumulator
from ._tool_call import Api
from ._toolset import ToolIsCode, ToolOutput
from ._turn import Turn, Wire, wire_for

__all__ = ["LoopResult", "MaxIterationsExceeded", "arun_batch", "arun_conversation",
           "llm_from_client", "run_batch", "run_conversation"]

Prompt = str | list[Any]


@dataclass
class LoopResult:
    """How a conversation ended."""

    output: Any
    """The `final_answer(...)` value when code gave one, else the model's last text."""
    has_final: bool
    text: str
    """The model's last text ("" when the code's final answer ended the run)."""
    iterations: int
    """Model calls made."""
    history: list[Any]
    """Input items (Responses) or messages (Chat), to continue the conversation from."""
    outputs: list[ToolOutput] = field(default_factory=list)
    """Every code-tool output, in order; `.result` holds each cell's `CellResult`."""


class MaxIterationsExceeded(ToolIsCodeError):
    """The model was still calling tools after `max_iterations` model calls."""

    def __init__(self, max_iterations: int, history: list[Any], outputs: list[ToolOutput]):
        super().__init__(f"the model was still calling tools after {max_iterations} model "
                         f"call(s) (max_iterations={max_iterations}); raise max_iterations or "
                         "look at .history to see what it was doing")
        self.max_iterations = max_iterations
        self.history = history
        self.outputs = outputs


@dataclass
class _Ask:
    """A step of the loop: call the model with these arguments."""

    request: dict[str, Any]


@dataclass
class _Run:
    """A step of the loop: run this tool call."""

    item: dict[str, Any]


_SKIPPED = "[not run: final_answer(...) in an earlier call ended the run]"


def _steps(wire: Wire, toolset: ToolIsCode, prompt: Prompt, model: str, max_iterations: int,
           create: dict[str, Any]) -> _Steps:
    return _Steps(_loop(wire, toolset, prompt, model, max_iterations, create))


def _loop(wire: Wire, toolset: ToolIsCode, prompt: Prompt, model: str, max_iterations: int,
          create: dict[str, Any]) -> Generator[_Ask | _Run, Any, LoopResult]:
    """The loop without I/O: yields what to do, receives the outcome (a Turn or ToolOutput)."""
    history = wire.start(prompt)
    outputs: list[ToolOutput] = []
    for iteration in range(1, max_iterations + 1):
        turn: Turn = yield _Ask(wire.request(toolset, history, model, create))
        history += turn.items
        if not turn.calls:
            return LoopResult(turn.text, False, turn.text, iteration, history, outputs)
        final: ToolOutput | None = None
        for item in turn.calls:
            if final is not None:  # answer the remaining calls so the history stays valid
                history.append(_skipped(toolset, item))
                continue
            out: ToolOutput = yield _Run(item)
            outputs.append(out)
            history.append(out)
            final = out if out.has_final else None
        if final is not None:
            return LoopResult(final.final, True, "", iteration, history, outputs)
    raise MaxIterationsExceeded(max_iterations, history, outputs)


class _Steps:
    """The loop's generator, remembering the result it returned."""

    def __init__(self, gen: Generator[_Ask | _Run, Any, LoopResult]):
        self.gen = gen
        self.result: LoopResult | None = None

    def done(self) -> LoopResult:
        """The result, once the loop has returned it."""
        assert self.result is not None, "the loop has not ended"
        return self.result


def _advance(steps: _Steps, outcome: Any) -> _Ask | _Run | None:
    """Hand the loop the outcome of its last step; the next step, or None when it is done."""
    try:
        return steps.gen.send(outcome)
    except StopIteration as stop:
        steps.result = stop.value
        return None


def _skipped(toolset: ToolIsCode, item: dict[str, Any]) -> ToolOutput:
    from ._tool_call import parse_call

    return ToolOutput(parse_call(item, toolset.name).output(_SKIPPED))


def _sync_turn(wire: Wire, client: Any, request: dict[str, Any], stream: bool,
               on_partial: Callable[[PartialCall], None] | None) -> Turn:
    response = wire.method(client)(**request, **({"stream": True} if stream else {}))
    if inspect.isawaitable(response):
        getattr(response, "close", lambda: None)()
        raise TypeError("this client is async (AsyncOpenAI): use arun_conversation/arun_batch")
    if not stream:
        return wire.read(response)
    acc = ToolCallAccumulator(on_partial)
    for event in response:
        acc.feed(event)
    acc.finish()
    return wire.read_stream(acc)


async def _async_turn(wire: Wire, client: Any, request: dict[str, Any], stream: bool,
                      on_partial: Callable[[PartialCall], None] | None) -> Turn:
    response = wire.method(client)(**request, **({"stream": True} if stream else {}))
    if not inspect.isawaitable(response):
        raise TypeError("this client is not async: use run_conversation/run_batch with OpenAI")
    response = await response
    if not stream:
        return wire.read(response)
    acc = ToolCallAccumulator(on_partial)
    async for event in response:
        acc.feed(event)
    acc.finish()
    return wire.read_stream(acc)


def run_conversation(client: Any, prompt: Prompt, *, toolset: ToolIsCode, model: str,
                     api: Api | None = None, max_iterations: int = 10, key: Hashable = None,
                     stream: bool = False, on_partial: Callable[[PartialCall], None] | None = None,
                     on_output: OutputSink | None = None, **create: Any) -> LoopResult:
    """Run the conversation with an `openai.OpenAI` client until the model is done.

    `prompt` is the user's message, or a list of earlier items/messages to continue from
    (such as a previous `LoopResult.history` plus a new user message). `key` picks the
    toolset's session (the default one when `None`). With `stream=True` the replies are
    streamed and `on_partial` sees each call's code as it grows; `on_output` sees what the
    code prints while it runs (`OutputChunk`s, whether or not replies are streamed). Other
    keywords go to the API call as they are (e.g. `temperature`, `instructions`, `reasoning`).
    """
    wire = wire_for(api or toolset.api)
    steps, outcome = _steps(wire, toolset, prompt, model, max_iterations, create), None
    while (step := _advance(steps, outcome)) is not None:
        outcome = (_sync_turn(wire, client, step.request, stream, on_partial)
                   if isinstance(step, _Ask) else toolset.tool_call(step.item, key=key,
                                                                   **_watched(on_output)))
    return steps.done()


async def arun_conversation(client: Any, prompt: Prompt, *, toolset: ToolIsCode, model: str,
                            api: Api | None = None, max_iterations: int = 10,
                            key: Hashable = None, stream: bool = False,
                            on_partial: Callable[[PartialCall], None] | None = None,
                            on_output: OutputSink | None = None,
                            **create: Any) -> LoopResult:
    """`run_conversation` with an `openai.AsyncOpenAI` client (`on_output` is called on the
    running loop, and what it returns awaited when it is awaitable)."""
    wire = wire_for(api or toolset.api)
    steps, outcome = _steps(wire, toolset, prompt, model, max_iterations, create), None
    while (step := _advance(steps, outcome)) is not None:
        outcome = (await _async_turn(wire, client, step.request, stream, on_partial)
                   if isinstance(step, _Ask) else await toolset.atool_call(
                       step.item, key=key, **_watched(on_output)))
    return steps.done()


def _watched(on_output: OutputSink | None) -> dict[str, Any]:
    """`on_output` for a code call, when given: a toolset that stands in for `ToolIsCode`
    (the benchmarks' plain tool calling, say) need not take it otherwise."""
    return {} if on_output is None else {"on_output": on_output}


def _batch_key() -> str:
    return f"batch-{uuid.uuid4().hex}"


def run_batch(client: Any, prompts: Sequence[Prompt], *, toolset: ToolIsCode,
              max_concurrency: int = 4, return_exceptions: bool = False,
              **options: Any) -> list[LoopResult | BaseException]:
    """Run one conversation per prompt, `max_concurrency` at a time, each in a fresh session
    (closed when it ends). Results are in prompt order; with `return_exceptions` a failed
    conversation gives its exception instead of raising it."""
    def one(prompt: Prompt) -> LoopResult:
        key = _batch_key()
        try:
            return run_conversation(client, prompt, toolset=toolset, key=key, **options)
        finally:
            toolset.drop(key)

    with cf.ThreadPoolExecutor(max(1, max_concurrency), "tooliscode-batch") as pool:
        futures = [pool.submit(one, p) for p in prompts]
        cf.wait(futures)
    results: list[LoopResult | BaseException] = []
    for future in futures:
        error = future.exception()
        if error is not None and not return_exceptions:
            raise error
        results.append(error if error is not None else future.result())
    return results


async def arun_batch(client: Any, prompts: Sequence[Prompt], *, toolset: ToolIsCode,
                     max_concurrency: int = 4, return_exceptions: bool = False,
                     **options: Any) -> list[LoopResult | BaseException]:
    """`run_batch` with an `AsyncOpenAI` client, on the running event loop."""
    gate = asyncio.Semaphore(max(1, max_concurrency))

    async def one(prompt: Prompt) -> LoopResult:
        key = _batch_key()
        async with gate:
            try:
                return await arun_conversation(client, prompt, toolset=toolset, key=key,
                                               **options)
            finally:
                await asyncio.to_thread(toolset.drop, key)

    return list(await asyncio.gather(*(one(p) for p in prompts),
                                     return_exceptions=return_exceptions))


def llm_from_client(client: Any, model: str, *, api: Api = "responses", **create: Any) -> LLM:
    """A `prompt -> text` callable over an openai client, for `ToolIsCode(llm=...)`: sync for
    `OpenAI`, async for `AsyncOpenAI`."""
    wire = wire_for(api)
    method = wire.method(client)

    def request(prompt: str) -> dict[str, Any]:
        return wire.request(None, wire.start(prompt), model, create)

    if inspect.iscoroutinefunction(method):
        async def ask_async(prompt: str) -> str:
            return wire.read(await method(**request(prompt))).text
        return ask_async

    def ask(prompt: str) -> str:
        return wire.read(method(**request(prompt))).text
    return ask
