"""Google ADK adapter: ADK's own runner (`InMemoryRunner`, in-memory sessions and artifacts)
with a scripted `BaseLlm`, real tools with a `ToolContext`, callbacks, OpenTelemetry spans,
and the code executor."""

from __future__ import annotations

import asyncio
import itertools
import sys
from typing import Any

import pytest
from _cancels import (
    CAME_BACK,
    LOOP,
    READ,
    SET,
    cancel_when_running,
    leftovers,
    nothing_left,
    until,
    until_running,
)
from _pyplot import DRAW, PNG_MAGIC, give_pyplot
from _shop import BIG, CAUGHT, CUSTOMERS, GOLD, PROGRAM, get_customer, list_orders, refund
from google.adk.agents import LlmAgent
from google.adk.models import BaseLlm, LlmResponse
from google.adk.runners import InMemoryRunner
from google.adk.tools import FunctionTool, ToolContext
from google.adk.tools.mcp_tool import McpToolset, StdioConnectionParams
from google.genai import types
from mcp import StdioServerParameters
from mcp_servers import INVENTORY
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tooliscode import Limits
from tooliscode.integrations.google_adk import CodeModeToolset, SandboxCodeExecutor

SPANS = InMemorySpanExporter()


async def remember(note: str, tool_context: ToolContext) -> str:
    """Keep a note in the session state, and as an artifact."""
    tool_context.state["notes"] = [*tool_context.state.get("notes", []), note]
    await tool_context.save_artifact("note.txt", types.Part.from_text(text=note))
    return f"noted ({tool_context.function_call_id})"


class Script(BaseLlm):
    """A model that sends the code calls (or texts, for the code executor) in turn, then
    answers with the last function response it was shown."""

    model: str = "script"
    steps: list[Any] = []
    seen: list[Any] = []

    async def generate_content_async(self, llm_request: Any, stream: bool = False) -> Any:
        self.seen.append(llm_request)
        step = self.steps.pop(0) if self.steps else None
        if isinstance(step, str):
            call = types.FunctionCall(name="run_python", args={"code": step},
                                      id=f"call-{len(self.seen)}")
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(
                function_call=call)]))
            return
        if isinstance(step, tuple) and step[0] == "call":  # ("call", tool, args): a direct call
            call = types.FunctionCall(name=step[1], args=step[2], id=f"call-{len(self.seen)}")
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(
                function_call=call)]))
            return
        if isinstance(step, tuple):  # ("text", words): the code executor reads code blocks
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(
                text=step[1])]))
            return
        part = llm_request.contents[-1].parts[0]
        said = part.function_response.response if part.function_response else part.text
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(
            text=f"answer: {said}")]))


@pytest.fixture(scope="module")
def code():
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(SPANS))
    trace.set_tracer_provider(provider)
    toolset = CodeModeToolset([list_orders, get_customer, FunctionTool(remember), refund],
                              limits=Limits(timeout_s=60))
    yield toolset
    toolset.code_tool.close()


users = itertools.count()


def make_runner(code: CodeModeToolset, **options: Any) -> InMemoryRunner:
    return InMemoryRunner(agent=LlmAgent(name="shop", model=Script(), tools=[code], **options),
                          app_name="shop")


async def ask(runner: InMemoryRunner, *steps: Any, session: Any = None) -> tuple[Any, list[Any]]:
    """One user turn with a fresh script (a new session unless given); returns the session
    after the turn and the function responses."""
    runner.agent.model.steps = list(steps)
    if session is None:
        session = await runner.session_service.create_session(app_name="shop",
                                                               user_id=f"u{next(users)}")
    message = types.Content(role="user", parts=[types.Part(text="go")])
    responses = [r async for e in runner.run_async(user_id=session.user_id, session_id=session.id,
                                                   new_message=message)
                 for r in e.get_function_responses()]
    session = await runner.session_service.get_session(app_name="shop", user_id=session.user_id,
                                                       session_id=session.id)
    return session, responses


async def test_program_gathers_calls_with_context_callbacks_and_spans(code) -> None:
    seen: list[str] = []
    runner = make_runner(code, before_tool_callback=lambda tool, args, tool_context: seen.append(
        tool.name))
    SPANS.clear()
    session, (response,) = await ask(
        runner, PROGRAM + 'print(len(big), gold, await remember(note="big ones"))')

    assert response.response == {"result": f"{len(BIG)} {GOLD} noted (call-1:{2 + CUSTOMERS})"}
    request = runner.agent.model.seen[0]
    assert [d.name for t in request.config.tools for d in t.function_declarations] == \
        ["run_python"]
    assert "def list_orders(status: str) -> list[dict]:" in \
        request.config.system_instruction
    assert seen == ["run_python", "list_orders", *["get_customer"] * CUSTOMERS, "remember"]
    assert session.state["notes"] == ["big ones"], "the inner ToolContext's state is saved"
    spans = {s.name: s for s in SPANS.get_finished_spans()}
    outer = spans["execute_tool run_python"]
    assert spans["execute_tool list_orders"].parent.span_id == outer.context.span_id
    assert spans["execute_tool remember"].parent.span_id == outer.context.span_id


async def test_state_and_artifacts_land_with_the_code_tools_event(code) -> None:
    runner = make_runner(code)
    runner.agent.model.steps = ['remember(note="one")\nremember(note="two")']
    session = await runner.session_service.create_session(app_name="shop", user_id="art")
    events = [e async for e in runner.run_async(
        user_id="art", session_id=session.id,
        new_message=types.Content(role="user", parts=[types.Part(text="go")]))]
    (responded,) = [e for e in events if e.get_function_responses()]
    assert responded.actions.state_delta == {"notes": ["one", "two"]}
    assert set(responded.actions.artifact_delta) == {"note.txt"}
    note = await runner.artifact_service.load_artifact(app_name="shop", user_id="art",
                                                       session_id=session.id,
                                                       filename="note.txt")
    assert note.text == "two"


async def test_a_failing_tool_and_a_failing_cell(code) -> None:
    errors: list[str] = []

    def on_error(tool: Any, args: Any, tool_context: Any, error: Exception) -> Any:
        errors.append(f"{tool.name}: {error}")

    runner = make_runner(code, on_tool_error_callback=on_error)
    _, (first, second, third) = await ask(runner, CAUGHT, "refund(order_id=-5)", "1 / 0")
    assert first.response["result"] == "caught: ValueError: order -1 does not exist\nrefunded 7"
    assert "order -5 does not exist" in second.response["error"]
    assert "ZeroDivisionError" in third.response["error"]
    assert errors == ["refund: order -1 does not exist", "refund: order -5 does not exist"]


async def test_sessions_keep_state_across_turns_and_apart(code) -> None:
    runner = make_runner(code)
    session, (first,) = await ask(runner, "x = 41")
    assert "result" in first.response
    _, (second,) = await ask(runner, "print(x + 1)", session=session)
    assert second.response == {"result": "42"}
    _, (other,) = await ask(runner, "print(x)")
    assert "NameError" in other.response["error"]


async def test_figures_come_back_as_image_parts(code) -> None:
    runner = make_runner(code)
    session = await runner.session_service.create_session(app_name="shop", user_id="fig")
    give_pyplot(code.session(("shop", "fig", session.id)))
    runner.agent.model.steps = [DRAW]
    events = [e async for e in runner.run_async(
        user_id="fig", session_id=session.id,
        new_message=types.Content(role="user", parts=[types.Part(text="draw")]))]
    (response,) = [r for e in events for r in e.get_function_responses()]
    assert response.response.get("result", "").startswith("drew"), response.response
    (image,) = response.parts
    assert image.inline_data.mime_type == "image/png"
    assert image.inline_data.data.startswith(PNG_MAGIC)


async def test_code_executor_keeps_state_and_saves_figures() -> None:
    executor = SandboxCodeExecutor(limits=Limits(timeout_s=60))
    agent = LlmAgent(name="analyst", model=Script(), code_executor=executor)
    runner = InMemoryRunner(agent=agent, app_name="lab")
    session = await runner.session_service.create_session(app_name="lab", user_id="u")
    give_pyplot(executor.session(session.id))
    agent.model.steps = [("text", "```python\ntotal = sum(range(10))\nprint(total)\n```"),
                         ("text", f"```python\n{DRAW}\nprint(total * 2)\n```"),
                         ("text", "```python\nundefined_name\n```")]
    try:
        events = [e async for e in runner.run_async(
            user_id="u", session_id=session.id,
            new_message=types.Content(role="user", parts=[types.Part(text="go")]))]
    finally:
        executor.close()
    results = [p.code_execution_result for e in events for p in (e.content.parts or ())
               if e.content and p.code_execution_result]
    assert "45" in results[0].output and results[0].outcome == types.Outcome.OUTCOME_OK
    assert "90" in results[1].output, "state kept between code blocks"
    assert "NameError" in results[2].output and results[2].outcome == types.Outcome.OUTCOME_FAILED
    saved = [name for e in events for name in e.actions.artifact_delta]
    assert len(saved) == 1 and saved[0].endswith(".png")
    figure = await runner.artifact_service.load_artifact(app_name="lab", user_id="u",
                                                         session_id=session.id, filename=saved[0])
    assert figure.inline_data.data.startswith(PNG_MAGIC)


async def test_mcp_toolset_tools_are_called_from_code() -> None:
    mcp = McpToolset(connection_params=StdioConnectionParams(
        server_params=StdioServerParameters(command=sys.executable, args=[INVENTORY]),
        timeout=30))
    runner = InMemoryRunner(agent=LlmAgent(name="shop", model=Script(), tools=[
        CodeModeToolset([mcp, refund], limits=Limits(timeout_s=60))]), app_name="shop")
    try:
        _, (response,) = await ask(runner, "tools = list_items(category='tools')\n"
                                           "print(sorted(i['sku'] for i in tools), add(a=2, b=3),"
                                           " refund(order_id=1))")
    finally:
        await runner.close()  # closes the code tool's interpreters and the MCP toolset
    assert response.response == {"result": "['A1', 'C3'] 5 refunded 1"}


@pytest.mark.parametrize("as_given", ["decorated", "callable"])
async def test_defaults_are_the_frameworks_when_code_gives_only_what_is_required(as_given):
    from _defaults import CODE, ONLY_REQUIRED, asame_as_direct, post

    async def direct():
        runner = InMemoryRunner(agent=LlmAgent(name="shop", model=Script(),
                                               tools=[FunctionTool(post)]), app_name="shop")
        await ask(runner, ("call", "post", dict(ONLY_REQUIRED)))

    async def from_code():
        code = CodeModeToolset([FunctionTool(post) if as_given == "decorated" else post])
        try:
            await ask(make_runner(code), CODE)
        finally:
            await code.close()

    await asame_as_direct(direct, from_code)


async def test_a_tool_that_needs_confirmation_never_runs_from_code() -> None:
    """`require_confirmation`, as a user sets it: code cannot ask the user, so the call is
    refused (the model is told to call it itself), and the tool does not run."""
    sent: list[str] = []

    def send_email(to: str) -> str:
        """Send an email."""
        sent.append(to)
        return f"sent to {to}"

    code = CodeModeToolset([FunctionTool(send_email, require_confirmation=True)])
    try:
        _, (response,) = await ask(make_runner(code), "print(send_email(to='ann'))")
    finally:
        await code.close()
    assert "needs the user's confirmation" in response.response["error"]
    assert sent == []


async def test_what_the_code_prints_comes_as_partial_events_of_the_run(code) -> None:
    runner = make_runner(code)
    runner.agent.model.steps = ["for i in range(200):\n    print(f'row {i}')"]
    session = await runner.session_service.create_session(app_name="shop", user_id="stream")
    message = types.Content(role="user", parts=[types.Part(text="go")])
    events = [e async for e in runner.run_async(user_id=session.user_id, session_id=session.id,
                                                new_message=message)]
    partial = [e for e in events if e.partial and (e.custom_metadata or {}).get("type")
               == "tooliscode.output"]
    assert "".join(e.content.parts[0].text for e in partial) == \
        "".join(f"row {i}\n" for i in range(200))
    assert {e.custom_metadata["call_id"] for e in partial} == {"call-1"}
    assert {e.branch for e in partial} == {"run_python@call-1"}
    answer = next(i for i, e in enumerate(events) if e.get_function_responses())
    assert all(events.index(e) < answer for e in partial)  # while the cell ran
    stored = await runner.session_service.get_session(app_name="shop", user_id="stream",
                                                      session_id=session.id)
    assert not any(e.partial for e in stored.events)  # streamed, not kept in the session


async def _aborted(runner: InMemoryRunner, session: Any, code_tool: Any) -> None:
    """A turn ADK's own abort (`run_async(abort_signal=...)`) ends once its code runs."""
    abort = asyncio.Event()
    message = types.Content(role="user", parts=[types.Part(text="go")])
    turn = asyncio.ensure_future(_drain(runner.run_async(
        user_id=session.user_id, session_id=session.id, new_message=message,
        abort_signal=abort)))
    stopped = await until_running(code_tool)
    abort.set()
    await turn
    await asyncio.to_thread(until, lambda: stopped._running is None, "the cell stops")


async def _drain(events: Any) -> None:
    async for _ in events:
        pass


@pytest.mark.parametrize("how", ["task cancelled", "aborted"])
async def test_a_stopped_run_stops_its_cell_and_the_next_turn_sees_the_state_before(code, how):
    runner = make_runner(code)
    session, _ = await ask(runner, SET)
    before = leftovers()
    if how == "task cancelled":
        await cancel_when_running(code.code_tool, ask(runner, LOOP, session=session))
    else:
        runner.agent.model.steps = [LOOP]
        await _aborted(runner, session, code.code_tool)
    _, responses = await ask(runner, READ, session=session)
    read = responses[-1].response["result"]
    assert CAME_BACK in read and read.endswith("\n41"), read
    await asyncio.to_thread(nothing_left, before)


@pytest.mark.parametrize("how", ["aborted", "timeout_seconds"])
async def test_an_aborted_run_or_its_time_limit_stops_the_code_executors_block(how) -> None:
    """ADK runs a code executor on a thread, where a cancel of the run's task does not reach:
    its abort and the executor's `timeout_seconds` do. The block stops, the model reads why,
    and the state comes back."""
    executor = SandboxCodeExecutor(limits=Limits(timeout_s=60),
                                   timeout_seconds=1 if how == "timeout_seconds" else None)
    runner = InMemoryRunner(agent=LlmAgent(name="analyst", model=Script(),
                                           code_executor=executor), app_name="shop")
    try:
        session, _ = await ask(runner, ("text", f"```python\n{SET}\n```"))
        runner.agent.model.steps = [("text", f"```python\n{LOOP}\n```")]
        if how == "aborted":
            await _aborted(runner, session, executor.code_tool)
        else:
            events = [e async for e in runner.run_async(
                user_id=session.user_id, session_id=session.id,
                new_message=types.Content(role="user", parts=[types.Part(text="go")]))]
            (result, *_) = [p.code_execution_result for e in events
                            for p in (e.content.parts or ())
                            if e.content and p.code_execution_result]
            assert "(the code executor's time limit, timeout_seconds=1, ran out)" in \
                result.output, result.output
        assert executor.code_tool.run_code(READ, key=session.id).text == "41"
    finally:
        executor.close()
