"""The streamed tool-call accumulator, fed by the real openai client's stream objects."""

from __future__ import annotations

import json

import openai
import pytest
from tooliscode import ToolIsCode
from tooliscode.openai._streaming import ToolCallAccumulator, partial_code
from tooliscode.openai.testing import ScriptedServer, call, code

SOURCE = 'rows = [1, 2, 3]\nprint("sum:", sum(rows), "caf\u00e9 \U0001F600")'


def stream(server: ScriptedServer, api: str):
    client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    if api == "responses":
        return client.responses.create(model="m", input="go", stream=True)
    return client.chat.completions.create(model="m", messages=[{"role": "user", "content": "go"}],
                                          stream=True)


@pytest.mark.parametrize("api", ["responses", "chat"])
def test_calls_complete_once_and_code_grows(api):
    reply = code(SOURCE, "print('second')", text="Running it.")
    seen: list[tuple[str, str]] = []
    acc = ToolCallAccumulator(on_partial=lambda p: seen.append((p.key, p.code)))
    completed = []
    with ScriptedServer([reply], chunk_chars=5) as server:
        for event in stream(server, api):
            done = acc.feed(event)
            if done:
                assert all(c.done for c in acc.calls.values() if c.item() in done)
            completed += done
    assert acc.finish() == []  # nothing left open
    assert acc.text == "Running it."
    codes = [json.loads(c["arguments"] if api == "responses" else c["function"]["arguments"])
             ["code"] for c in completed]
    assert codes == [SOURCE, "print('second')"]
    first_key = seen[0][0]
    growth = [text for key, text in seen if key == first_key]
    assert len(growth) > 10
    assert all(SOURCE.startswith(g) for g in growth)  # every partial is a prefix
    assert growth[-1] == SOURCE
    if api == "responses":
        assert completed[0]["call_id"] == "call_1_0" and completed[0]["type"] == "function_call"
        assert acc.response["status"] == "completed"
    else:
        assert completed[0]["id"] == "call_1_0" and completed[0]["type"] == "function"


@pytest.mark.parametrize("api", ["responses", "chat"])
def test_completed_calls_run_in_toolisCode(api):
    def double(x: int) -> int:
        """Twice x."""
        return 2 * x

    outputs = []
    with ScriptedServer([code("print(double(21))")]) as server, ToolIsCode([double]) as tic:
        acc = ToolCallAccumulator()
        for event in stream(server, api):
            outputs += [tic.tool_call(item) for item in acc.feed(event)]
    assert [o.text for o in outputs] == ["42"]
    assert ("call_id" if api == "responses" else "tool_call_id") in outputs[0]


def test_other_tools_stream_too_but_show_no_code():
    acc = ToolCallAccumulator()
    with ScriptedServer([call("lookup", {"q": "x"})]) as server:
        done = [c for e in stream(server, "chat") for c in acc.feed(e)]
    assert done[0]["function"] == {"name": "lookup", "arguments": '{"q": "x"}'}
    assert next(iter(acc.calls.values())).code == ""


def test_plain_dict_chunks_and_a_cut_stream():
    acc = ToolCallAccumulator()
    chunks = [
        {"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "c1", "function": {"name": "run_python", "arguments": ""}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": '{"code": "x = 1'}}]}}]},
    ]
    assert [acc.feed(c) for c in chunks] == [[], []]
    assert [p.code for p in acc.partials] == ["x = 1"]
    leftover = acc.finish()  # the stream ended without a finish_reason
    assert leftover == [{"id": "c1", "type": "function",
                         "function": {"name": "run_python", "arguments": '{"code": "x = 1'}}]
    assert acc.partials == []


@pytest.mark.parametrize("arguments, expected", [
    ('', ''),
    ('{"co', ''),
    ('{"code": "', ''),
    ('{"code": "print(1)', 'print(1)'),
    ('{"code": "a\\nb\\t\\"q\\"', 'a\nb\t"q"'),
    ('{"code": "x\\', 'x'),  # an escape cut in half waits for the rest
    ('{"code": "caf\\u00e9', 'caf\u00e9'),
    ('{"code": "caf\\u00', 'caf'),
    ('{"code": "\\ud83d\\ude00 ok', '\U0001F600 ok'),
    ('{"code": "a\\ud83d', 'a'),  # half a surrogate pair
    ('{"code": "done"}', 'done'),
    ('{"code" : "spaced', 'spaced'),
    ('{"other": 1}', ''),
])
def test_partial_code(arguments, expected):
    assert partial_code(arguments) == expected
