"""`tooliscode serve`: the real openai client against the server, over a scripted upstream
model that can only write text."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from _cancels import running, until
from tooliscode import Limits
from tooliscode.openai.testing import ScriptedReply, ScriptedServer, say
from tooliscode.serve import ServeConfig, Server


def _tool(name: str, description: str, properties: dict[str, Any],
          required: list[str]) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties, "required": required}}}


WEATHER = _tool("get_weather", "Current weather in a city.",
                {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
                ["city"])
TIME = _tool("local-time", "The time in a city.", {"city": {"type": "string"}}, ["city"])
TOOLS = [WEATHER, TIME]
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


@contextlib.contextmanager
def serving(script: list[ScriptedReply] | Any,
            **options: Any) -> Iterator[tuple[Server, ScriptedServer]]:
    with ScriptedServer(script) as upstream, \
            Server(ServeConfig(upstream=upstream.base_url, port=0, **options)) as server:
        yield server, upstream


def client(server: Server, key: str = "unused") -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key=key, max_retries=0)


def calls_of(message: Any) -> list[tuple[str, dict[str, Any]]]:
    return [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls]


def post(server: Server, body: bytes, path: str = "/chat/completions",
         headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(server.base_url + path, data=body, method="POST",
                                     headers={"content-type": "application/json",
                                              **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


# -- code becomes tool calls -----------------------------------------------------------------

def test_a_call_in_a_block_after_a_think_section_becomes_a_tool_call():
    reply = say("<think>The user wants Paris.\n```python\nget_weather(city='London')\n```\n"
                "</think>\nI'll look it up.\n```python\nget_weather(city='Paris')\n```")
    with serving([reply]) as (server, upstream):
        response = client(server).chat.completions.create(model="r1", messages=ASK,
                                                          tools=TOOLS)
    choice = response.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert calls_of(choice.message) == [("get_weather", {"city": "Paris"})]
    assert choice.message.tool_calls[0].id.startswith("call_")
    assert choice.message.content == "I'll look it up."
    assert choice.message.model_extra["reasoning_content"].startswith("The user wants Paris.")
    # the upstream was told about the tools as Python functions, not as tools
    sent = upstream.requests[0].body
    assert "tools" not in sent and sent["stream"] is False and sent["model"] == "r1"
    system = sent["messages"][0]
    assert system["role"] == "system" and "```python" in system["content"]
    assert "def get_weather(city: str, unit: Literal['c', 'f'] | None = None)" in system["content"]
    assert "def local_time(city: str)" in system["content"]
    assert sent["messages"][1:] == ASK


def test_several_calls_and_a_loop_become_several_tool_calls_in_order():
    code = ("```python\nlocal_time(city='Oslo')\nfor city in ['Paris', 'Rome']:\n"
            "    get_weather(city=city, unit='c')\n```")
    with serving([say(code)]) as (server, _):
        message = client(server).chat.completions.create(
            model="m", messages=ASK, tools=TOOLS).choices[0].message
    assert calls_of(message) == [("local-time", {"city": "Oslo"}),
                                 ("get_weather", {"city": "Paris", "unit": "c"}),
                                 ("get_weather", {"city": "Rome", "unit": "c"})]
    assert len({c.id for c in message.tool_calls}) == 3
    assert message.content is None


def test_code_using_a_result_keeps_the_calls_made_before():
    code = "```python\nw = get_weather(city='Paris')\nprint(w['temp'])\n```"
    with serving([say(code)]) as (server, upstream):
        message = client(server).chat.completions.create(
            model="m", messages=ASK, tools=TOOLS).choices[0].message
    assert calls_of(message) == [("get_weather", {"city": "Paris"})]
    assert len(upstream.requests) == 1


@pytest.mark.parametrize("bad, says", [
    ("get_weather(city=3)", "get_weather(): city must be str, not int (3)"),
    ("get_weather(city='Paris', unit='kelvin')", "unit must be one of 'c', 'f'"),
    ("get_wether(city='Paris')", "Did you mean: 'get_weather'?"),
    ("get_weather(city='Paris'", "SyntaxError"),
])
def test_an_invalid_call_gets_one_repair_round_with_the_error(bad, says):
    script = [say(f"```python\nget_weather(city='Oslo')\n{bad}\n```"),
              say("```python\nget_weather(city='Oslo')\nget_weather(city='Paris')\n```")]
    with serving(script) as (server, upstream):
        message = client(server).chat.completions.create(
            model="m", messages=ASK, tools=TOOLS).choices[0].message
    assert calls_of(message) == [("get_weather", {"city": "Oslo"}),
                                 ("get_weather", {"city": "Paris"})]
    repair = upstream.requests[1].body["messages"]
    assert repair[-2] == {"role": "assistant", "content": script[0].text}
    assert repair[-1]["role"] == "user" and says in repair[-1]["content"]
    assert "none of its tool calls were made" in repair[-1]["content"]


def test_after_the_repair_round_it_returns_what_it_has():
    script = [say("```python\nget_weather(city=1)\n```"),
              say("```python\nget_weather(city='Oslo')\nget_weather(city=2)\n```")]
    with serving(script) as (server, upstream):
        message = client(server).chat.completions.create(
            model="m", messages=ASK, tools=TOOLS).choices[0].message
    assert calls_of(message) == [("get_weather", {"city": "Oslo"})]
    assert len(upstream.requests) == 2

    with serving([say("```python\nget_weather(city=1)\n```")] * 3, repairs=2) as (server, up):
        choice = client(server).chat.completions.create(
            model="m", messages=ASK, tools=TOOLS).choices[0]
    assert len(up.requests) == 3
    assert choice.finish_reason == "stop" and not choice.message.tool_calls
    assert choice.message.content == "```python\nget_weather(city=1)\n```"


def test_runaway_code_and_too_many_calls_are_repaired_too():
    script = [say("```python\nwhile True:\n    pass\n```"),
              say("```python\nfor i in range(5):\n    get_weather(city=str(i))\n```"),
              say("```python\nget_weather(city='Paris')\n```")]
    # 4 s, not 1: the cells after the runaway one must end inside the limit on a loaded machine
    with serving(script, repairs=2, limits=Limits(timeout_s=4.0, tool_calls=3)) as (server, up):
        message = client(server).chat.completions.create(
            model="m", messages=ASK, tools=TOOLS).choices[0].message
    assert calls_of(message) == [("get_weather", {"city": "Paris"})]
    assert "still running after 4 s" in up.requests[1].body["messages"][-1]["content"]
    assert "limit of 3 tool calls" in up.requests[2].body["messages"][-1]["content"]


def test_a_reply_without_code_is_the_final_answer():
    script = [say("<think>Paris is sunny, I know that.</think>\n\nIt is sunny in Paris."),
              say("It is 21 °C.", reasoning="The tool said 21."),
              say("Here is how:\n```python\nprint('hello')\n```")]
    with serving(script) as (server, upstream):
        ai = client(server)
        first = ai.chat.completions.create(model="m", messages=ASK, tools=TOOLS).choices[0]
        second = ai.chat.completions.create(model="m", messages=ASK, tools=TOOLS).choices[0]
        # code that calls no tool is something the model shows the user
        third = ai.chat.completions.create(model="m", messages=ASK, tools=TOOLS).choices[0]
    assert first.finish_reason == "stop" and first.message.tool_calls is None
    assert first.message.content == "It is sunny in Paris."
    assert first.message.model_extra["reasoning_content"] == "Paris is sunny, I know that."
    assert second.message.content == "It is 21 °C."
    assert second.message.model_extra["reasoning_content"] == "The tool said 21."
    assert third.message.content == script[2].text and third.message.tool_calls is None
    assert len(upstream.requests) == 3


def test_a_two_turn_conversation_shows_the_upstream_its_calls_and_their_results():
    script = [say("Checking.\n```python\nfor c in ['Paris', 'Rome']:\n"
                  "    get_weather(city=c)\n```"),
              say("Paris 21 °C, Rome 25 °C.")]
    results = {"Paris": {"temp": 21}, "Rome": {"temp": 25}}
    messages: list[Any] = [{"role": "system", "content": "Be brief."}, *ASK]
    with serving(script) as (server, upstream):
        ai = client(server)
        first = ai.chat.completions.create(model="m", messages=messages, tools=TOOLS)
        message = first.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            city = json.loads(call.function.arguments)["city"]
            messages.append({"role": "tool", "tool_call_id": call.id,
                             "content": json.dumps(results[city])})
        final = ai.chat.completions.create(model="m", messages=messages, tools=TOOLS)
    assert final.choices[0].message.content == "Paris 21 °C, Rome 25 °C."
    seen = upstream.requests[1].body["messages"]
    assert [m["role"] for m in seen] == ["system", "user", "assistant", "user"]
    assert seen[0]["content"].startswith("Be brief.\n\nYou can use tools")
    assert seen[2]["content"] == ("Checking.\n\n```python\nget_weather(city='Paris')\n"
                                  "get_weather(city='Rome')\n```")
    assert seen[3]["content"].startswith(
        "Results of your tool calls:\n\nget_weather(city='Paris') returned:\n{\"temp\": 21}\n\n"
        "get_weather(city='Rome') returned:\n{\"temp\": 25}")


def test_earlier_calls_read_back_with_the_names_the_model_knows():
    odd = _tool("filter", "Filter rows.", {"class": {"type": "string"},
                                           "max-rows": {"type": "integer"}}, ["class"])
    history = [*ASK, {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function",
         "function": {"name": "filter", "arguments": "{\"class\": \"a\", \"max-rows\": 2}"}}]},
               {"role": "tool", "tool_call_id": "c1",
                "content": [{"type": "text", "text": "two rows"}]}]
    with serving([say("Done.")]) as (server, upstream):
        client(server).chat.completions.create(model="m", messages=history, tools=[odd])
    seen = upstream.requests[0].body["messages"]
    assert "def filter_(class_: str, max_rows: int | None = None)" in seen[0]["content"]
    assert seen[2]["content"] == "```python\nfilter_(class_='a', max_rows=2)\n```"
    assert "filter_(class_='a', max_rows=2) returned:\ntwo rows" in seen[3]["content"]


# -- streaming -------------------------------------------------------------------------------

def test_streamed_tool_calls_and_text_parse_in_the_openai_client():
    script = [say("```python\nget_weather(city='Paris')\nlocal_time(city='Paris')\n```"),
              say("<think>" + "hmm " * 100 + "</think>It is " + "very " * 100 + "sunny.")]
    with serving(script) as (server, _):
        ai = client(server)
        stream = ai.chat.completions.create(model="m", messages=ASK, tools=TOOLS, stream=True,
                                            stream_options={"include_usage": True})
        calls: dict[int, dict[str, str]] = {}
        finish, usage = None, None
        for chunk in stream:
            usage = chunk.usage or usage
            for choice in chunk.choices:
                finish = choice.finish_reason or finish
                for delta in choice.delta.tool_calls or ():
                    call = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
                    call["id"] += delta.id or ""
                    call["name"] += delta.function.name or ""
                    call["arguments"] += delta.function.arguments or ""
        assert finish == "tool_calls" and usage is not None
        assert [(c["name"], json.loads(c["arguments"])) for c in calls.values()] == [
            ("get_weather", {"city": "Paris"}), ("local-time", {"city": "Paris"})]
        assert all(c["id"].startswith("call_") for c in calls.values())

        text, reasoning, finish = "", "", None
        for chunk in ai.chat.completions.create(model="m", messages=ASK, tools=TOOLS,
                                                stream=True):
            delta = chunk.choices[0].delta
            text += delta.content or ""
            reasoning += (delta.model_extra or {}).get("reasoning_content") or ""
            finish = chunk.choices[0].finish_reason or finish
    assert text == "It is " + "very " * 100 + "sunny." and finish == "stop"
    assert reasoning == ("hmm " * 100).strip()


# -- what passes through ---------------------------------------------------------------------

def test_requests_without_tools_pass_straight_through():
    text = "<think>left as the upstream sent it</think>Hello."
    with serving([say(text), say(text)]) as (server, upstream):
        ai = client(server)
        plain = ai.chat.completions.create(model="m", messages=ASK, temperature=0.2,
                                           extra_body={"top_k": 5})
        streamed = "".join(chunk.choices[0].delta.content or "" for chunk in
                           ai.chat.completions.create(model="m", messages=ASK, stream=True))
    assert plain.choices[0].message.content == text and plain.id == "chatcmpl-1"
    assert streamed == text
    assert upstream.requests[0].body == {"model": "m", "messages": ASK, "temperature": 0.2,
                                         "top_k": 5}
    assert upstream.requests[1].body == {"model": "m", "messages": ASK, "stream": True}


def test_tool_choice_none_required_named_and_one_call_at_a_time():
    history = [*ASK, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
               {"role": "tool", "tool_call_id": "c1", "content": "sunny"}]
    script = [say("Sunny."),
              say("I think it is sunny."),
              say("```python\nget_weather(city='Paris')\n```"),
              say("```python\nget_weather(city='Paris')\n```"),
              say("```python\nlocal_time(city='Paris')\n```"),
              say("```python\nget_weather(city='Paris')\nget_weather(city='Rome')\n```")]
    with serving(script) as (server, upstream):
        ai = client(server)
        none = ai.chat.completions.create(model="m", messages=history, tools=TOOLS,
                                          tool_choice="none").choices[0].message
        required = ai.chat.completions.create(model="m", messages=ASK, tools=TOOLS,
                                              tool_choice="required").choices[0].message
        named = ai.chat.completions.create(
            model="m", messages=ASK, tools=TOOLS,
            tool_choice={"type": "function", "function": {"name": "local-time"}}
        ).choices[0].message
        single = ai.chat.completions.create(model="m", messages=ASK, tools=TOOLS,
                                            parallel_tool_calls=False).choices[0].message
    # "none": no tools, but the history is still turned into text the upstream understands
    assert none.content == "Sunny."
    first = upstream.requests[0].body
    assert "tools" not in first and "tool_choice" not in first
    assert "You can use tools" not in json.dumps(first)
    assert first["messages"][1]["content"] == "```python\nget_weather(city='Paris')\n```"
    assert "get_weather(city='Paris') returned:\nsunny" in first["messages"][2]["content"]
    # "required": a reply without code is asked again
    assert calls_of(required) == [("get_weather", {"city": "Paris"})]
    assert "You must call a tool" in upstream.requests[2].body["messages"][-1]["content"]
    # a named function is the only one the code can call
    assert calls_of(named) == [("local-time", {"city": "Paris"})]
    assert "NameError" in upstream.requests[4].body["messages"][-1]["content"]
    assert "def get_weather" not in upstream.requests[3].body["messages"][0]["content"]
    # parallel_tool_calls=False: the first call only
    assert calls_of(single) == [("get_weather", {"city": "Paris"})]
    assert "one call per reply" in upstream.requests[5].body["messages"][0]["content"]


def test_models_are_the_upstreams_or_the_configured_one():
    with serving([]) as (server, _):
        assert [m.id for m in client(server).models.list()] == ["scripted"]
        # only model routes reach the upstream
        for path in ("/models/../chat", "/models/%2e%2e/x", "/embeddings"):
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(server.base_url + path, timeout=30)
            assert refused.value.code == 404
    dead = _free_port()
    with Server(ServeConfig(upstream=f"http://127.0.0.1:{dead}/v1", port=0,
                            model="qwq")) as server:
        ai = client(server)
        assert [m.id for m in ai.models.list()] == ["qwq"]
        with pytest.raises(openai.InternalServerError, match="cannot reach the upstream"):
            ai.chat.completions.create(model="qwq", messages=ASK, tools=TOOLS)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- keys, the log, bad input ----------------------------------------------------------------

def test_clients_must_present_the_api_key():
    with serving([say("Hello.")], api_key="client-secret") as (server, _):
        for key in ("wrong", "client-secre", "client-secret2"):
            with pytest.raises(openai.AuthenticationError, match="API key"):
                client(server, key).chat.completions.create(model="m", messages=ASK)
        with pytest.raises(openai.AuthenticationError):
            client(server, "wrong").models.list()
        status, body = post(server, b"{}")
        assert status == 401 and body["error"]["code"] == "invalid_api_key"
        answer = client(server, "client-secret").chat.completions.create(model="m",
                                                                         messages=ASK)
        assert answer.choices[0].message.content == "Hello."


def test_closing_lets_an_answered_request_write_its_log_line(tmp_path, monkeypatch):
    """The answer reaches the client before its line is logged: a close right then (an
    interrupt just after a reply) waits for that line instead of closing the log under it."""
    from tooliscode.serve import _request_log as requestlog

    log, logging = tmp_path / "requests.jsonl", threading.Event()
    write = requestlog.RequestLog.write

    def late_write(self: Any, entry: Any) -> None:
        logging.set()
        time.sleep(0.5)
        write(self, entry)

    monkeypatch.setattr(requestlog.RequestLog, "write", late_write)
    with serving([say("Hi.")], log=log) as (server, _):
        client(server).chat.completions.create(model="m", messages=ASK)
        assert logging.wait(10)
    assert [json.loads(line)["status"] for line in log.read_text().splitlines()] == [200]


def test_the_request_log_holds_no_secrets(tmp_path):
    log = tmp_path / "requests.jsonl"
    leaky = [{"role": "user", "content": "my keys are client-secret and upstream-secret"}]
    script = [say("```python\nget_weather(city='Paris')\n```"), say("Hi.")]
    with serving(script, api_key="client-secret", upstream_key="upstream-secret",
                 log=log) as (server, upstream):
        ai = client(server, "client-secret")
        ai.chat.completions.create(model="m", messages=leaky, tools=TOOLS,
                                   extra_body={"api_key": "abc-in-the-body"})
        ai.chat.completions.create(model="m", messages=ASK, stream=True).close()
        with pytest.raises(openai.AuthenticationError):
            client(server, "upstream-secret").models.list()
    assert upstream.requests[0].headers["authorization"] == "Bearer upstream-secret"
    text = log.read_text()
    for secret in ("client-secret", "upstream-secret", "abc-in-the-body"):
        assert secret not in text
    entries = [json.loads(line) for line in text.splitlines()]
    assert [e["status"] for e in entries] == [200, 200, 401]
    assert entries[0]["headers"]["authorization"] == "[redacted]"
    assert entries[0]["request"]["messages"][0]["content"] == (
        "my keys are [redacted] and [redacted]")
    assert entries[0]["rounds"] == [{"reply": script[0].text, "calls": 1, "problem": None}]
    assert entries[0]["response"]["choices"][0]["finish_reason"] == "tool_calls"
    assert entries[1]["forwarded"] is True and entries[1]["stream"] is True
    assert oct(log.stat().st_mode & 0o777) == "0o600"


@pytest.mark.parametrize("body, status, says", [
    (b"{not json", 400, "not valid JSON"),
    (b"[1, 2]", 400, "must be a JSON object"),
    (b'{"model": "m"}', 400, "messages must be a non-empty list"),
    (b'{"model": "m", "messages": ["hi"]}', 400, "messages[0] must be an object"),
    (b'{"messages": [{"role": "user", "content": "hi"}]}', 400, "model is required"),
    (json.dumps({"model": "m", "messages": ASK, "tools": "all"}).encode(), 400,
     "tools must be a list"),
    (json.dumps({"model": "m", "messages": ASK, "tools": [{"type": "web_search"}]}).encode(),
     400, "only function tools"),
    (json.dumps({"model": "m", "messages": ASK, "tools": [WEATHER, WEATHER]}).encode(), 400,
     "two tools are named 'get_weather'"),
    (json.dumps({"model": "m", "messages": ASK, "tools": TOOLS, "tool_choice": "sometimes"}
                ).encode(), 400, "tool_choice must be"),
    (json.dumps({"model": "m", "messages": ASK, "tools": TOOLS, "tool_choice": {
        "type": "function", "function": {"name": "nope"}}}).encode(), 400, "not among"),
    (json.dumps({"model": "m", "messages": ASK, "tools": TOOLS, "tool_choice": {
        "type": "function", "function": "get_weather"}}).encode(), 400, "tool_choice must be"),
    (json.dumps({"model": "m", "messages": ASK, "tools": TOOLS, "n": 2}).encode(), 400,
     "n > 1"),
    (b"[" * 1000 + b"]" * 20, 400, "not valid JSON: maximum recursion depth"),
    (b"\xff\xfe{}", 400, "not valid JSON"),
    (json.dumps({"model": "m", "messages": ASK, "tools": [_tool("t", "", [1, 2], [])]}).encode(),
     400, "tools[0]: TypeError"),
    (b"x" * 2048, 413, "the limit is 1,024"),
])
def test_malformed_requests_get_a_clear_4xx_and_the_server_lives_on(body, status, says):
    with serving([say("Fine.")], max_body_bytes=1024) as (server, upstream):
        code, error = post(server, body)
        assert code == status and says in error["error"]["message"]
        assert post(server, b"{}", path="/embeddings")[0] == 404
        answer = client(server).chat.completions.create(model="m", messages=ASK, tools=TOOLS)
        assert answer.choices[0].message.content == "Fine."
        assert len(upstream.requests) == 1


def test_upstream_errors_become_openai_errors():
    def script(request: Any) -> ScriptedReply:
        raise RuntimeError("the model crashed")

    with serving([]) as (server, _):
        with pytest.raises(openai.BadRequestError, match="upstream answered 400: the scripted "
                                                         "model has no reply left"):
            client(server).chat.completions.create(model="m", messages=ASK, tools=TOOLS)
        # without tools the upstream's own error passes through as it is
        with pytest.raises(openai.BadRequestError, match="no reply left") as passed:
            client(server).chat.completions.create(model="m", messages=ASK)
        assert "upstream" not in str(passed.value)
    with serving(script) as (server, _):
        with pytest.raises(openai.InternalServerError, match="the model crashed") as failed:
            client(server).chat.completions.create(model="m", messages=ASK, tools=TOOLS)
        assert failed.value.status_code == 502


# -- the command -----------------------------------------------------------------------------

def test_the_command_has_help():
    done = subprocess.run([sys.executable, "-m", "tooliscode.cli", "serve", "--help"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and "--upstream URL" in done.stdout and "--api-key" in done.stdout


# A shell starts a background job (`make test &` in a script, a CI step sent to the background)
# with SIGINT ignored, and the job's children inherit that; CPython then leaves SIGINT alone.
_SIGINT_IGNORED = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
                   "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])")


@pytest.mark.parametrize("stop, launch", [
    (signal.SIGINT, [sys.executable, "-c", _SIGINT_IGNORED]),
    (signal.SIGTERM, [sys.executable]),
], ids=["SIGINT, inherited as ignored", "SIGTERM"])
def test_the_command_serves_until_interrupted(tmp_path, stop, launch):
    with ScriptedServer([say("```python\nget_weather(city='Oslo')\n```")]) as upstream:
        port = _free_port()
        process = subprocess.Popen(
            [*launch, "-X", "faulthandler", "-m", "tooliscode.cli", "serve",
             "--upstream", upstream.base_url, "--port", str(port), "--model", "qwq",
             "--log", str(tmp_path / "log.jsonl")],
            stderr=subprocess.PIPE, text=True, env={**os.environ, "TOOLISCODE_API_KEY": "k"})
        try:
            banner = process.stderr.readline()
            assert f"http://127.0.0.1:{port}/v1 -> {upstream.base_url}" in banner
            ai = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k",
                               max_retries=0)
            message = ai.chat.completions.create(model="qwq", messages=ASK,
                                                 tools=TOOLS).choices[0].message
            assert calls_of(message) == [("get_weather", {"city": "Oslo"})]
        finally:
            process.send_signal(stop)
            try:
                code = process.wait(timeout=30)
            except subprocess.TimeoutExpired:  # show where it hangs: faulthandler's dump
                process.send_signal(signal.SIGABRT)
                process.wait(timeout=30)
                pytest.fail(f"serve did not stop on {stop.name}:\n"
                            f"{process.stderr.read()[-8000:]}")
            process.stderr.close()
            assert code == 0
    assert json.loads((tmp_path / "log.jsonl").read_text())["status"] == 200


def test_a_server_interrupted_before_its_loop_began_still_closes(monkeypatch):
    """Ctrl-C can land before `serve_forever` reaches its loop (here: in the warm-up, which
    starts a thread); closing must not then wait for that loop to end."""
    from threading import Thread

    import tooliscode.serve._server as served

    def interrupted() -> None:
        raise KeyboardInterrupt

    def serve_until_interrupted() -> None:  # what the command does
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            stopped.append(True)
        finally:
            server.close()

    monkeypatch.setattr(served, "_warm_up", interrupted)
    server = Server(ServeConfig(upstream="http://127.0.0.1:9/v1", port=0))
    stopped: list[bool] = []
    serving = Thread(target=serve_until_interrupted, daemon=True)
    serving.start()
    serving.join(30)  # a hang guard, not a timing
    assert not serving.is_alive(), "close() waited for a loop that never ran"
    assert stopped == [True]


def test_an_upstream_stream_that_stalls_ends_in_an_error_event():
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from threading import Event, Thread

    release = Event()

    class Stalling(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["content-length"]))
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
                     "choices": [{"index": 0, "delta": {"content": "Hel"},
                                  "finish_reason": None}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
            release.wait(10)

    upstream = ThreadingHTTPServer(("127.0.0.1", 0), Stalling)
    upstream.daemon_threads = True
    Thread(target=upstream.serve_forever, args=(0.05,), daemon=True).start()
    config = ServeConfig(upstream=f"http://127.0.0.1:{upstream.server_address[1]}/v1", port=0,
                         timeout_s=0.5)
    try:
        with Server(config) as server:
            stream = client(server).chat.completions.create(model="m", messages=ASK,
                                                            stream=True)
            seen = []
            with pytest.raises(openai.APIError, match="the upstream's stream broke off"):
                for chunk in stream:
                    seen.append(chunk.choices[0].delta.content)
            assert seen == ["Hel"]
    finally:
        release.set()
        upstream.shutdown()
        upstream.server_close()


def test_a_client_that_disconnects_mid_request_stops_the_cell():
    """The model's code loops; the client closes its connection: the cell stops (long before
    its time limit), no repair round is asked for, and the server serves the next client."""
    script = [say("```python\nget_weather(city='Paris')\nwhile True:\n    pass\n```"),
              say("```python\nget_weather(city='Rome')\n```")]
    with serving(script, limits=Limits(timeout_s=60)) as (server, upstream):
        host, port = server._httpd.server_address[:2]
        gone = http.client.HTTPConnection(host, port, timeout=30)
        gone.request("POST", "/v1/chat/completions", headers={"content-type": "application/json"},
                     body=json.dumps({"model": "m", "messages": ASK, "tools": TOOLS}))
        until(lambda: running() is not None, "the model's code runs")
        session = running()
        gone.close()  # without reading the answer
        until(lambda: session._running is None, "the cell stops")
        message = client(server).chat.completions.create(
            model="m", messages=ASK, tools=TOOLS).choices[0].message
    assert calls_of(message) == [("get_weather", {"city": "Rome"})]
    assert len(upstream.requests) == 2  # the first client's request got no repair round
