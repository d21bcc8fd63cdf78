"""ToolIsCode: tool lists, both call shapes, bad input, callbacks, keyed sessions, llm_query."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest
from openai.types.chat import ChatCompletionMessageFunctionToolCall
from openai.types.responses import ResponseFunctionToolCall
from tooliscode import SessionClosed, ToolIsCode, ToolOutput
from tooliscode.engine._keyed import KeyedSessions

WEATHER = {"type": "function", "name": "get_weather", "description": "Weather of a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                          "required": ["city"]}}
CHAT_STOCK = {"type": "function", "function": {
    "name": "stock_level", "description": "Units in stock.",
    "parameters": {"type": "object", "properties": {"sku": {"type": "string"}},
                   "required": ["sku"]}}}


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def responses_call(code: str, call_id: str = "call_1", name: str = "run_python") -> dict:
    return {"type": "function_call", "call_id": call_id, "name": name,
            "arguments": json.dumps({"code": code})}


def chat_call(code: str, call_id: str = "call_1") -> dict:
    return {"id": call_id, "type": "function",
            "function": {"name": "run_python", "arguments": json.dumps({"code": code})}}


@pytest.fixture
def calls() -> list:
    return []


@pytest.fixture
def tic(calls):
    def callback(req_id, func_name, args):
        calls.append((req_id, func_name, args))
        if func_name == "get_weather":
            return json.dumps({"city": args["city"], "temp_c": 21})  # JSON text, as many do
        return {"sku": args["sku"], "units": 7}

    with ToolIsCode([add, WEATHER, CHAT_STOCK, {"type": "web_search"}], callback) as t:
        yield t


# -- what the model is given -------------------------------------------------------------------

def test_tools_in_responses_shape_with_passthrough(tic):
    tools = tic.tools
    assert [t["type"] for t in tools] == ["function", "web_search"]
    code_tool = tools[0]
    assert code_tool["name"] == "run_python" and code_tool["strict"] is True
    assert code_tool["parameters"]["required"] == ["code"]
    assert code_tool["description"] == \
        "Run Python in the persistent sandbox where the tools are functions."
    tools[0]["name"] = "changed"  # callers get copies
    assert tic.tools[0]["name"] == "run_python"


def test_tools_in_chat_shape_on_request(tic):
    chat = tic.tools_for("chat")
    assert chat[0]["type"] == "function" and chat[0]["function"]["name"] == "run_python"
    assert chat[1] == {"type": "web_search"}
    with ToolIsCode([add], api="chat") as t:
        assert t.tools[0]["function"]["parameters"]["properties"]["code"]["type"] == "string"
    with pytest.raises(ValueError, match="api must be"):
        ToolIsCode([add], api="completions")


def test_instructions_name_every_tool(tic):
    text = tic.instructions
    for name in ("run_python", "add", "get_weather", "stock_level", "final_answer"):
        assert name in text
    assert "search_tools" not in text  # every tool is shown in full: nothing to search for
    assert "llm_query" not in text


def test_a_key_is_given_per_call_and_the_constructor_says_so():
    with pytest.raises(TypeError, match=r"pass key=conversation_id to each tool_call"):
        ToolIsCode([add], key="chat-1")


def test_dict_tools_need_a_callback():
    with pytest.raises(ValueError, match="callback"):
        ToolIsCode([WEATHER])


# -- calls in both shapes ----------------------------------------------------------------------

def test_responses_call_returns_function_call_output(tic):
    out = tic.tool_call(responses_call("print(add(2, 3))", "call_a"))
    assert isinstance(out, ToolOutput)
    assert dict(out) == {"type": "function_call_output", "call_id": "call_a", "output": "5"}
    assert out.result is not None and out.result.ok


def test_chat_call_returns_tool_message(tic):
    out = tic.tool_call(chat_call("add(1, 1) * 10", "call_b"))
    assert dict(out) == {"role": "tool", "tool_call_id": "call_b", "content": "[value] 20"}


def test_sdk_objects_are_accepted(tic):
    item = ResponseFunctionToolCall(type="function_call", call_id="c9", name="run_python",
                                    arguments=json.dumps({"code": "print('sdk')"}))
    assert tic.tool_call(item)["output"] == "sdk"
    chat = ChatCompletionMessageFunctionToolCall(
        id="c10", type="function",
        function={"name": "run_python", "arguments": json.dumps({"code": "print('chat')"})})
    assert tic.tool_call(chat) == {"role": "tool", "tool_call_id": "c10", "content": "chat"}


def test_state_persists_between_calls(tic):
    tic.tool_call(responses_call("total = add(40, 2)"))
    assert tic.tool_call(responses_call("print(total)"))["output"] == "42"


@pytest.mark.parametrize("arguments, expected", [
    ("{not json", "not valid JSON"),
    ("", "no arguments"),
    ("[1, 2]", "must be a JSON object"),
    ('{"source": "print(1)"}', 'need a "code" string (got: source)'),
    ('{"code": "   "}', "empty"),
])
def test_bad_arguments_come_back_as_outputs(tic, arguments, expected):
    item = {"type": "function_call", "call_id": "bad", "name": "run_python",
            "arguments": arguments}
    out = tic.tool_call(item)
    assert out["call_id"] == "bad" and out["output"].startswith("[error]")
    assert expected in out["output"]
    assert out.result is None


def test_calling_an_inner_tool_directly_gets_a_hint(tic):
    out = tic.tool_call({"id": "x", "type": "function",
                         "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}})
    assert out["role"] == "tool" and "only tool is run_python" in out["content"]
    assert "get_weather is a Python function inside run_python" in out["content"]
    other = tic.tool_call(responses_call("print(1)", name="delete_everything"))
    assert "no tool 'delete_everything'" in other["output"]


def test_not_a_tool_call_is_a_programming_error(tic):
    with pytest.raises(TypeError, match="expected a Responses function_call item"):
        tic.tool_call({"role": "user", "content": "hi"})


def test_fenced_code_is_unwrapped(tic):
    out = tic.tool_call(responses_call("```python\nprint(add(1, 2))\n```"))
    assert out["output"] == "3"


def test_final_answer_surfaces_on_the_output(tic):
    out = tic.tool_call(responses_call("final_answer({'answer': add(20, 22)})"))
    assert out.has_final and out.final == {"answer": 42}
    assert "[final answer]" in out["output"]
    assert not tic.tool_call(responses_call("print(1)")).has_final


# -- callbacks ---------------------------------------------------------------------------------

def test_sync_callback_gets_request_ids_and_decoded_results(tic, calls):
    out = tic.tool_call(responses_call(
        "w = get_weather(city='Oslo')\ns = stock_level('SKU-1')\nprint(w['temp_c'], s['units'])",
        "call_7"))
    assert out["output"] == "21 7"
    assert calls == [("call_7:1", "get_weather", {"city": "Oslo"}),
                     ("call_7:2", "stock_level", {"sku": "SKU-1"})]


async def test_async_callback_runs_on_the_callers_loop():
    seen = []

    async def callback(req_id, func_name, args):
        seen.append((req_id, asyncio.get_running_loop()))
        await asyncio.sleep(0.01)
        return {"city": args["city"], "temp_c": 5}

    with ToolIsCode([WEATHER], callback) as tic:
        out = await tic.atool_call(responses_call(
            "import asyncio\n"
            "rs = await asyncio.gather(get_weather('A'), get_weather('B'))\n"
            "print([r['city'] for r in rs])", "call_z"))
    assert out["output"] == "['A', 'B']"
    assert sorted(r for r, _ in seen) == ["call_z:1", "call_z:2"]
    assert all(loop is asyncio.get_running_loop() for _, loop in seen)


def test_async_callback_from_sync_tool_call():
    async def callback(req_id, func_name, args):
        await asyncio.sleep(0)
        return f"sunny in {args['city']}"

    with ToolIsCode([WEATHER], callback) as tic:
        assert tic.tool_call(responses_call("print(get_weather('Rome'))"))["output"] == \
            "sunny in Rome"


def test_callback_errors_reach_the_code_as_tool_errors():
    def callback(req_id, func_name, args):
        raise RuntimeError("weather service down")

    with ToolIsCode([WEATHER], callback) as tic:
        out = tic.tool_call(responses_call(
            "try:\n    get_weather('X')\nexcept ToolError as e:\n    print('caught:', e)"))
    assert out["output"] == "caught: RuntimeError: weather service down"


# -- sessions ----------------------------------------------------------------------------------

def test_keyed_sessions_are_separate(tic):
    tic.tool_call(responses_call("who = 'alice'"), key="conv-a")
    tic.tool_call(responses_call("who = 'bob'"), key="conv-b")
    assert tic.tool_call(responses_call("print(who)"), key="conv-a")["output"] == "alice"
    assert tic.tool_call(responses_call("print(who)"), key="conv-b")["output"] == "bob"
    assert "NameError" in tic.tool_call(responses_call("print(who)"))["output"]
    assert set(tic.keys) == {"conv-a", "conv-b", None}
    assert tic.drop("conv-a") and not tic.drop("conv-a")
    assert "conv-a" not in tic.keys


def test_idle_keyed_sessions_are_evicted_and_say_so():
    with ToolIsCode([add], idle_timeout_s=0.3) as tic:
        tic.tool_call(responses_call("x = 1"), key="old")
        tic.tool_call(responses_call("y = 2"))  # the default session is never evicted
        time.sleep(0.6)
        tic.tool_call(responses_call("z = 3"), key="new")  # eviction happens on use
        assert "old" not in tic.keys and None in tic.keys
        out = tic.tool_call(responses_call("print(x)"), key="old")
        assert out["output"].startswith("[note] This conversation's earlier Python session "
                                        "was closed after")
        assert "NameError" in out["output"]
        assert tic.tool_call(responses_call("print(y)"))["output"] == "2"


def test_max_sessions_closes_the_least_recently_used():
    with ToolIsCode([add], max_sessions=2) as tic:
        for key in ("a", "b", "c"):
            tic.tool_call(responses_call(f"k = {key!r}"), key=key)
        assert sorted(tic.keys) == ["b", "c"]
        assert "too many open conversations" in tic.tool_call(
            responses_call("print(1)"), key="a")["output"]


class _Closable:
    def __init__(self, key):
        self.key, self.closed = key, False

    def close(self):
        self.closed = True


def test_busy_sessions_are_not_evicted():
    store = KeyedSessions(_Closable, idle_s=0.05)
    busy, _ = store.acquire("busy")
    time.sleep(0.1)
    assert store.evict_idle() == [] and not busy.closed
    store.release("busy")
    time.sleep(0.1)
    assert store.evict_idle() == ["busy"] and busy.closed
    store.close()
    with pytest.raises(SessionClosed):
        store.acquire("x")


def test_concurrent_calls_on_one_key_keep_their_request_ids():
    ids = []

    def callback(req_id, func_name, args):
        ids.append(req_id)
        time.sleep(0.05)
        return {"temp_c": 1}

    with ToolIsCode([WEATHER], callback) as tic:
        threads = [threading.Thread(target=tic.tool_call, args=(
            responses_call("get_weather('a'); get_weather('b')", f"call_{i}"),)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for i in range(3):  # each cell's two calls carry that cell's call id
        assert {f"call_{i}:1", f"call_{i}:2"} <= set(ids)


def test_closed_toolset_refuses_calls():
    tic = ToolIsCode([add])
    tic.tool_call(responses_call("x = 1"))
    session = tic.session()
    tic.close()
    with pytest.raises(SessionClosed):
        tic.tool_call(responses_call("print(1)"))
    with pytest.raises(SessionClosed):
        session.run("1")


# -- llm_query ---------------------------------------------------------------------------------

def test_llm_query_is_hidden_from_the_catalog_but_callable():
    prompts = []

    def llm(prompt: str) -> str:
        prompts.append(prompt)
        return prompt.upper()

    with ToolIsCode([add], llm=llm) as tic:
        assert tic.instructions.count("llm_query") == 1  # in the guide's note, not the catalog
        assert "llm_query(prompt: str) -> str" in tic.instructions
        out = tic.tool_call(responses_call("print(llm_query('summarise: ' + str(add(1, 1))))"))
    assert out["output"] == "SUMMARISE: 2"
    assert prompts == ["summarise: 2"]


async def test_async_llm_query_calls_run_concurrently():
    running, everyone = [], asyncio.Event()

    async def llm(prompt: str) -> str:
        running.append(prompt)
        if len(running) == 4:
            everyone.set()
        # returns only once all four are running: calls made one at a time never get there
        await asyncio.wait_for(everyone.wait(), 60)
        return f"<{prompt}>"

    with ToolIsCode([add], llm=llm) as tic:
        out = await tic.atool_call(responses_call(
            "import asyncio\nprint(await asyncio.gather(*(llm_query(str(i)) for i in range(4))))"))
    assert out["output"] == "['<0>', '<1>', '<2>', '<3>']"
    assert sorted(running) == ["0", "1", "2", "3"]


def test_llm_name_clash_is_refused():
    def llm_query(prompt: str) -> str:
        """Mine."""
        return prompt

    with pytest.raises(ValueError, match="already named 'llm_query'"):
        ToolIsCode([llm_query], llm=lambda p: p)


def test_custom_tool_calls_take_raw_code(tic):
    item = {"type": "custom_tool_call", "call_id": "cu1", "name": "run_python",
            "input": "print(add(2, 2))"}
    assert tic.tool_call(item) == {"type": "custom_tool_call_output", "call_id": "cu1",
                                   "output": "4"}


def test_session_folders_under_a_given_workdir(tmp_path):
    with ToolIsCode([add], workdir=tmp_path) as tic:
        tic.tool_call(responses_call("open('mine.txt', 'w').write('default')"))
        tic.tool_call(responses_call("open('mine.txt', 'w').write('keyed')"), key="user/42")
        assert (tmp_path / "mine.txt").read_text() == "default"
        keyed = [p for p in tmp_path.iterdir() if p.is_dir() and p.name.startswith("user_42-")]
        assert len(keyed) == 1 and (keyed[0] / "mine.txt").read_text() == "keyed"
        assert tic.session("user/42").read_file("mine.txt") == b"keyed"


# -- who calls each tool -----------------------------------------------------------------------

def test_callers_list_direct_tools_beside_the_code_tool_and_tool_call_runs_them(calls):
    def callback(req_id, func_name, args):
        calls.append((req_id, func_name, args))
        return {"city": args["city"], "temp_c": 21}

    with ToolIsCode([add, WEATHER, CHAT_STOCK], callback,
                    callers={"get_weather": "direct", "add": "both"}) as tic:
        assert [t["name"] for t in tic.tools] == ["run_python", "add", "get_weather"]
        assert [t["function"]["name"] for t in tic.tools_for("chat")] == [
            "run_python", "add", "get_weather"]
        assert "get_weather" not in tic.instructions and "def add(" in tic.instructions
        out = tic.tool_call({"type": "function_call", "call_id": "w1", "name": "get_weather",
                             "arguments": json.dumps({"city": "Oslo"})})
        assert dict(out) == {"type": "function_call_output", "call_id": "w1",
                             "output": '{"city": "Oslo", "temp_c": 21}'}
        assert calls == [("w1", "get_weather", {"city": "Oslo"})]
        code = tic.tool_call(responses_call("print(add(1, 2))\nget_weather(city='Rome')"))
        assert code["output"].startswith("3\n") and "NameError" in code["output"]
        bad = tic.tool_call({"id": "w2", "type": "function",
                             "function": {"name": "get_weather", "arguments": "{oops"}})
        assert bad["role"] == "tool" and "not valid JSON" in bad["content"]


async def test_callers_direct_tools_run_on_the_loop_and_report_failures():
    async def slow_add(a: int, b: int) -> int:
        """Add, slowly."""
        await asyncio.sleep(0.01)
        return a + b

    def fail(reason: str) -> str:
        """Always fails."""
        raise ValueError(reason)

    with ToolIsCode([slow_add, fail], callers={"slow_add": "direct", "fail": "both"}) as tic:
        out = await tic.atool_call({"type": "function_call", "call_id": "a1", "name": "slow_add",
                                    "arguments": '{"a": 2, "b": 3}'})
        assert out["output"] == "5"
        out = await tic.atool_call({"type": "function_call", "call_id": "a2", "name": "fail",
                                    "arguments": '{"reason": "no"}'})
        assert out["output"] == "[error] ValueError: no"
        assert tic.tool_call({"type": "function_call", "call_id": "a3", "name": "slow_add",
                              "arguments": '{"a": 1, "b": 1}'})["output"] == "2"
    with pytest.raises(ValueError, match="must be one of"):
        ToolIsCode([add], callers={"add": "model"})
    with pytest.raises(ValueError, match="callers names 'sub'"):
        ToolIsCode([add], callers={"sub": "direct"})
