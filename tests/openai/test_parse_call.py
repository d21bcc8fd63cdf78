"""Reading the model's call of the code tool, in both APIs' shapes, with no guest."""

from __future__ import annotations

import json

import pytest
from openai.types.chat import ChatCompletionMessageToolCall
from openai.types.responses import ResponseFunctionToolCall
from tooliscode.openai._tool_call import CodeCall, field, parse_call, to_plain

TOOL = "run_python"


def responses(arguments, name=TOOL, call_id="c1") -> dict:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}


def chat(arguments, name=TOOL, call_id="t1") -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_a_responses_call_and_its_answer():
    call = parse_call(responses(json.dumps({"code": "print(1)"})), TOOL)
    assert call == CodeCall("responses", "c1", TOOL, "print(1)")
    assert call.output("1") == {"type": "function_call_output", "call_id": "c1", "output": "1"}


def test_a_chat_call_and_its_answer():
    call = parse_call(chat(json.dumps({"code": "x = 2"})), TOOL)
    assert call == CodeCall("chat", "t1", TOOL, "x = 2")
    assert call.output("ok") == {"role": "tool", "tool_call_id": "t1", "content": "ok"}


def test_sdk_objects_read_like_dicts():
    item = ResponseFunctionToolCall(type="function_call", call_id="c9", name=TOOL,
                                    arguments='{"code": "1"}')
    assert parse_call(item, TOOL) == CodeCall("responses", "c9", TOOL, "1")
    tool_call = ChatCompletionMessageToolCall.model_validate(chat('{"code": "2"}', call_id="t9"))
    assert parse_call(tool_call, TOOL) == CodeCall("chat", "t9", TOOL, "2")
    assert to_plain(item)["arguments"] == '{"code": "1"}' and to_plain({"a": 1}) == {"a": 1}
    assert field(item, "name") == TOOL and field({"name": "x"}, "name") == "x"
    assert field(item, "missing", 5) == 5


def test_a_custom_tool_call_carries_raw_code():
    item = {"type": "custom_tool_call", "call_id": "k", "name": TOOL,
            "input": "```python\nprint(3)\n```"}
    call = parse_call(item, TOOL)
    assert call.custom and call.code == "print(3)" and call.problem is None
    assert call.output("3") == {"type": "custom_tool_call_output", "call_id": "k", "output": "3"}
    empty = parse_call({**item, "input": "  "}, TOOL)
    assert empty.code is None and empty.problem == "The code was empty."


def test_arguments_already_decoded_are_accepted():
    assert parse_call(responses({"code": "1 + 1"}), TOOL).code == "1 + 1"


@pytest.mark.parametrize("fenced, code", [
    ("```python\nprint(1)\n```", "print(1)"),
    ("```\nx = 1\ny = 2\n```", "x = 1\ny = 2"),
    ("  ```py3\nprint(2)```  ", "print(2)"),
    ("print('```')", "print('```')"),  # a fence inside the code is left alone
])
def test_a_fence_around_the_code_is_removed(fenced, code):
    assert parse_call(responses(json.dumps({"code": fenced})), TOOL).code == code


@pytest.mark.parametrize("arguments, says", [
    ("", "The call had no arguments"),
    ("   ", "The call had no arguments"),
    ("{not json", "were not valid JSON"),
    ("[1, 2]", "must be a JSON object"),
    ('{"source": "print(1)"}', 'need a "code" string (got: source)'),
    ("{}", "(got: nothing)"),
    ('{"code": 5}', 'need a "code" string (got: code)'),
    ('{"code": "  \\n "}', "The code was empty"),
])
def test_bad_arguments_become_a_problem_for_the_model(arguments, says):
    call = parse_call(responses(arguments), TOOL)
    assert call.code is None and says in call.problem
    assert 'Call run_python with a JSON object like {"code": "print(1)"}' in call.problem


def test_a_call_of_another_tool_names_the_only_one():
    call = parse_call(chat('{"code": "1"}', name="get_weather"), TOOL)
    assert call.code is None and call.name == "get_weather"
    assert call.problem == "There is no tool 'get_weather' here; the only tool is run_python."
    inner = parse_call(chat("{}", name="get_weather"), TOOL, frozenset({"get_weather"}))
    assert "get_weather is a Python function inside run_python: call it from code there" \
        in inner.problem


def test_a_missing_call_id_becomes_empty_text():
    item = {"type": "function_call", "name": TOOL, "arguments": '{"code": "1"}'}
    assert parse_call(item, TOOL).call_id == ""


def test_something_that_is_not_a_call_is_a_type_error():
    with pytest.raises(TypeError, match="expected a Responses function_call item"):
        parse_call({"type": "message", "content": "hi"}, TOOL)
