"""The raw-client loop, with the real openai client against a local scripted server."""

from __future__ import annotations

import json

import openai
import pytest
from tooliscode import ToolError, ToolIsCode
from tooliscode.openai import (  # the async forms too, where the errors send users
    MaxIterationsExceeded,
    arun_batch,
    arun_conversation,
    llm_from_client,
    run_batch,
    run_conversation,
)
from tooliscode.openai.testing import ScriptedRequest, ScriptedServer, call, code, say

APIS = [("responses", False), ("responses", True), ("chat", False), ("chat", True)]


def price(sku: str) -> float:
    """Price of a product."""
    if sku == "missing":
        raise ToolError("no such product: missing")
    return {"a": 2.5, "b": 4.0}[sku]


def client_for(server: ScriptedServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)


def async_client_for(server: ScriptedServer) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)


@pytest.fixture
def tic():
    with ToolIsCode([price]) as t:
        yield t


@pytest.mark.parametrize("api, stream", APIS)
def test_conversation_with_several_calls_errors_and_bad_json(tic, api, stream):
    script = [
        code("total = price('a') + price('b')", "print(total)", text="Let me compute."),
        call("run_python", {"code": "price('missing')"}, ("run_python", "{oops")),
        say("The total is 6.5."),
    ]
    partial: list[str] = []
    with ScriptedServer(script) as server:
        result = run_conversation(client_for(server), "What do a and b cost?", toolset=tic,
                                  model="m", api=api, stream=stream,
                                  on_partial=lambda p: partial.append(p.code))
        requests = server.requests
    assert result.output == result.text == "The total is 6.5."
    assert not result.has_final and result.iterations == 3 and len(requests) == 3
    # what the model read back, as the server received it
    assert requests[1].tool_outputs() == [
        "(the cell ran and printed nothing; it defined: total = 6.5)", "6.5"]
    error, bad_json = requests[2].tool_outputs()
    assert "ToolError: no such product: missing" in error
    assert bad_json.startswith("[error] The arguments were not valid JSON")
    # the code tool and instructions went with every request
    body = requests[0].body
    tools = body["tools"]
    assert (tools[0].get("name") or tools[0]["function"]["name"]) == "run_python"
    system = body["instructions"] if api == "responses" else body["messages"][0]["content"]
    assert "def price(" in system
    if stream:  # the code showed as it grew, a chunk at a time
        assert "total = price('a') + price('b')" in partial and "price('missing')" in partial
        assert len(partial) > 6 and partial[0] == "to"
    else:
        assert partial == []


@pytest.mark.parametrize("api, stream", APIS)
def test_final_answer_needs_no_further_model_turn(tic, api, stream):
    script = [code("x = price('b') * 2"), code("final_answer({'cost': x})", "print('skipped')")]
    with ScriptedServer(script) as server:
        result = run_conversation(client_for(server), "go", toolset=tic, model="m", api=api,
                                  stream=stream)
        assert len(server.requests) == 2
    assert result.has_final and result.output == {"cost": 8.0} and result.iterations == 2
    # the call after the final answer is answered, not run, so the history stays valid
    last = result.history[-1]
    assert "not run" in (last.get("output") or last.get("content"))


def test_max_iterations_is_a_clear_error(tic):
    def forever(request: ScriptedRequest):
        return code(f"print({request.index})")

    with ScriptedServer(forever) as server:
        with pytest.raises(MaxIterationsExceeded, match="still calling tools after 3") as info:
            run_conversation(client_for(server), "loop", toolset=tic, model="m",
                             max_iterations=3)
        assert len(server.requests) == 3
    assert [o["output"] for o in info.value.outputs] == ["0", "1", "2"]


def test_history_continues_the_conversation(tic):
    with ScriptedServer([code("n = 41"), say("stored"), code("print(n + 1)"),
                         say("42")]) as server:
        client = client_for(server)
        first = run_conversation(client, "store 41", toolset=tic, model="m")
        second = run_conversation(
            client, first.history + [{"role": "user", "content": "add one"}],
            toolset=tic, model="m")
        assert server.requests[2].body["input"][0] == {"role": "user", "content": "store 41"}
        assert server.requests[3].tool_outputs() == ["42"]
    assert second.output == "42"


def test_extra_instructions_and_options_pass_through(tic):
    with ScriptedServer([say("hi")]) as server:
        run_conversation(client_for(server), "hello", toolset=tic, model="m", api="chat",
                         instructions="Be brief.", temperature=0.2)
        body = server.requests[0].body
    assert body["messages"][0]["content"].startswith("Be brief.\n\n")
    assert body["temperature"] == 0.2


def test_sync_loop_refuses_an_async_client(tic):
    with ScriptedServer([say("x")]) as server, pytest.raises(TypeError, match="arun_conversation"):
        run_conversation(async_client_for(server), "hi", toolset=tic, model="m")


def _per_prompt(request: ScriptedRequest):
    """Each conversation stores its own prompt, then reads it back: sessions must not mix."""
    if request.api == "chat":
        messages = request.body["messages"]
        prompt = next(m["content"] for m in messages if m["role"] == "user")
        done = sum(1 for m in messages if m["role"] == "tool")
    else:
        prompt = request.body["input"][0]["content"]
        done = sum(1 for i in request.body["input"] if i.get("type") == "function_call_output")
    if done == 0:
        return code(f"mine = {prompt!r}")
    if done == 1:
        return code("final_answer(mine.upper())")
    raise AssertionError("one conversation went on too long")


@pytest.mark.parametrize("api", ["responses", "chat"])
def test_batch_runs_prompts_in_their_own_sessions(tic, api):
    prompts = [f"prompt {i}" for i in range(5)]
    with ScriptedServer(_per_prompt) as server:
        results = run_batch(client_for(server), prompts, toolset=tic, model="m", api=api,
                            max_concurrency=3)
    assert [r.output for r in results] == [p.upper() for p in prompts]
    assert tic.keys == []  # every batch session was closed


async def test_async_conversation_and_batch(tic):
    with ScriptedServer(_per_prompt) as server:
        client = async_client_for(server)
        one = await arun_conversation(client, "solo", toolset=tic, model="m", stream=True)
        many = await arun_batch(client, ["a", "b", "c"], toolset=tic, model="m", api="chat",
                                max_concurrency=2)
    assert one.output == "SOLO" and one.has_final
    assert [r.output for r in many] == ["A", "B", "C"]


def test_batch_failures_can_be_returned(tic):
    def flaky(request: ScriptedRequest):
        if "bad" in json.dumps(request.body["input"]):
            raise RuntimeError("model exploded")
        return say("fine")

    with ScriptedServer(flaky) as server:
        results = run_batch(client_for(server), ["good", "bad"], toolset=tic, model="m",
                            return_exceptions=True)
        assert results[0].output == "fine"
        assert isinstance(results[1], openai.InternalServerError)
        with pytest.raises(openai.InternalServerError):
            run_batch(client_for(server), ["bad"], toolset=tic, model="m")


@pytest.mark.parametrize("api", ["responses", "chat"])
def test_llm_query_through_a_real_client(api):
    def model(request: ScriptedRequest):
        if request.body.get("tools"):  # the main conversation
            if request.index == 0:
                return code("print(llm_query('Name a colour'))")
            return say("done")
        return say("teal")  # the sub-model call from inside the sandbox

    with ScriptedServer(model) as server:
        client = client_for(server)
        with ToolIsCode([price], llm=llm_from_client(client, "small", api=api)) as tic:
            result = run_conversation(client, "go", toolset=tic, model="big", api=api)
        sub = [r for r in server.requests if not r.body.get("tools")]
    assert result.outputs[0].text == "teal"
    assert len(sub) == 1 and sub[0].body["model"] == "small"


async def test_async_llm_from_client():
    with ScriptedServer([say("async reply")]) as server:
        ask = llm_from_client(async_client_for(server), "small")
        assert await ask("hi") == "async reply"
        assert server.requests[0].body["input"] == [{"role": "user", "content": "hi"}]


PRINTS = "for i in range(200):\n    print(f'row {i}')"
PRINTED = "".join(f"row {i}\n" for i in range(200))


@pytest.mark.parametrize("api, stream", APIS)
def test_the_loop_gives_on_output_what_the_code_prints(tic, api, stream):
    chunks = []
    with ScriptedServer([code(PRINTS), say("done")]) as server:
        result = run_conversation(client_for(server), "go", toolset=tic, model="m", api=api,
                                  stream=stream, on_output=chunks.append)
    assert result.output == "done"
    assert "".join(c.text for c in chunks) == PRINTED
    (call_id,) = {c.call_id for c in chunks}
    assert call_id and call_id == (result.outputs[0].get("call_id")
                                   or result.outputs[0].get("tool_call_id"))


async def test_the_async_loop_awaits_on_output_on_its_loop(tic):
    import asyncio

    loop, chunks = asyncio.get_running_loop(), []

    async def on_output(chunk):
        assert asyncio.get_running_loop() is loop
        chunks.append(chunk.text)

    with ScriptedServer([code(PRINTS), say("done")]) as server:
        result = await arun_conversation(async_client_for(server), "go", toolset=tic,
                                         model="m", stream=True, on_output=on_output)
    assert result.output == "done" and "".join(chunks) == PRINTED


def test_tool_call_and_the_option_both_get_the_chunks():
    mine, option = [], []
    with ToolIsCode([price], on_output=option.append) as t:
        out = t.tool_call({"type": "function_call", "call_id": "c9", "name": "run_python",
                           "arguments": json.dumps({"code": "print(price('a'))"})},
                          on_output=mine.append)
    assert out["output"] == "2.5"
    assert [(c.call_id, c.text) for c in mine] == [(c.call_id, c.text) for c in option] == \
        [("c9", "2.5\n")]
