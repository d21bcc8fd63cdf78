"""MCP servers as a tool source: our own server over stdio and streamable HTTP."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest
from tooliscode import Limits, MCPServer, Session, ToolError
from tooliscode.mcp._tools import mcp_namespace, mcp_result_value

pytest.importorskip("mcp")

from mcp_servers import INVENTORY, inventory_over_http


@pytest.fixture(scope="module")
def inventory():
    with MCPServer.stdio(sys.executable, [INVENTORY], timeout_s=5) as server:
        yield server


@pytest.fixture(scope="module")
def http_url():
    with inventory_over_http() as url:
        yield url


@pytest.fixture
def session(inventory):
    with Session(inventory.tools(), limits=Limits(timeout_s=20)) as s:
        yield s


def test_tools_are_grouped_under_the_server_name(inventory):
    tools = {t.qualified_name: t for t in inventory.tools()}
    assert inventory.namespace == "inventory"
    assert inventory.instructions == "A toy shop's stock, for tests."
    assert "inventory.word_count" in tools  # "word-count" made an identifier
    assert tools["inventory.word_count"].name == "inventory.word-count"
    assert tools["inventory.add"].parameters["required"] == ["a", "b"]
    # the {"result"} wrapper is gone
    assert tools["inventory.add"].output_schema["type"] == "integer"
    assert tools["inventory.get_item"].output_schema["title"] == "Item"
    assert tools["inventory.add"].metadata["mcp_tool"] == "add"


def test_structured_content_comes_back_as_python_values(session):
    r = session.run("items = inventory.list_items(category='tools')\n"
                    "print(type(items).__name__, [i['sku'] for i in items],\n"
                    "      items[0]['price'] + 1)\n"
                    "one = inventory.get_item(sku='B2')\n"
                    "print(type(one).__name__, one['qty'] * 2, inventory.add(a=2, b=3) * 10)")
    assert r.ok, r.error
    assert r.stdout.splitlines() == ["list ['A1', 'C3'] 121.0", "dict 80 50"]


def test_text_content_comes_back_as_str(session):
    r = session.run("d = inventory.describe(sku='A1')\n"
                    "w = inventory.word_count(text='a bb ccc')\n"
                    "print(type(d).__name__, d.upper())\nprint(w)")
    assert r.ok, r.error
    assert r.stdout.splitlines() == ["str ANVIL COSTS 120.00 AND 3 ARE LEFT",
                                     "['words: 3', 'longest: ccc']"]


def test_errors_are_tool_errors_the_code_can_catch(session):
    r = session.run("try:\n    inventory.get_item(sku='ZZ')\n"
                    "except ToolError as e:\n    print('caught', e)\n"
                    "try:\n    inventory.slow(seconds='soon')\n"
                    "except ToolError as e:\n    print('bad', e)")
    assert r.ok, r.error
    caught, bad = r.stdout.splitlines()
    # the server's text
    assert caught.startswith("caught") and caught.endswith("no item with SKU 'ZZ'")
    assert bad.startswith("bad") and "seconds" in bad  # checked against the input schema
    assert r.tool_calls[0].name == "inventory.get_item" and not r.tool_calls[0].ok


def test_result_rules_without_a_server():
    class Text:
        type = "text"

        def __init__(self, text):
            self.text = text

    class Result:
        def __init__(self, content=(), structured=None, error=False):
            self.content, self.structured_content, self.is_error = list(content), structured, error

    wrapped = {"type": "object", "properties": {"result": {"type": "array"}},
               "required": ["result"]}
    assert mcp_result_value(Result(structured={"result": [1]}), wrapped) == [1]
    assert mcp_result_value(Result(structured={"result": [1]})) == {"result": [1]}
    assert mcp_result_value(Result([Text("hi")])) == "hi"
    assert mcp_result_value(Result()) is None
    with pytest.raises(ToolError, match="boom"):
        mcp_result_value(Result([Text("boom")], error=True))
    assert mcp_namespace("mcp-time") == "mcp_time"
    assert mcp_namespace("time") == "time_mcp"  # `import time` would replace it
    assert mcp_namespace("json") == "json_mcp"


def test_calls_work_under_arun_and_gather_runs_them_concurrently(session):
    async def main():
        return await session.arun(
            "import asyncio, time\nt = time.monotonic()\n"
            "out = await asyncio.gather(*[inventory.slow(seconds=2) for _ in range(4)],"
            " inventory.add(a=1, b=1))\nprint(out[-1], len(out), time.monotonic() - t < 6)")
    # one after another the four calls take 8 s at least; at once, 2 s and the calls' own
    # cost, which stays far below the 4 s of margin even on a loaded machine

    r = asyncio.run(main())
    assert r.ok, r.error
    assert r.stdout.strip() == "2 5 True"


def test_a_call_past_the_servers_timeout_fails_and_the_server_lives_on(inventory, session):
    r = session.run("try:\n    inventory.slow(seconds=30)\n"
                    "except ToolError as e:\n    print('late', e)\n"
                    "print(inventory.add(a=1, b=2))")
    assert r.ok, r.error
    assert "late" in r.stdout and "timed out" in r.stdout
    assert r.stdout.splitlines()[-1] == "3"


def test_start_and_stop_own_the_process():
    server = MCPServer.stdio(sys.executable, [INVENTORY], name="shop",
                             include=["process_id", "add"])
    with pytest.raises(RuntimeError, match="not started"):
        server.tools()
    with server:
        assert sorted(t.qualified_name for t in server.tools()) == ["shop.add", "shop.process_id"]
        with Session(server.tools()) as s:
            pid = int(s.run("shop.process_id()").value)
        os.kill(pid, 0)  # alive
    assert not server.started
    _wait_gone(pid)
    with server, Session(server.tools()) as s:  # a closed server starts again, as a new process
        assert int(s.run("shop.process_id()").value) != pid


async def test_async_with_and_a_dead_server_gives_tool_errors():
    async with MCPServer.stdio(sys.executable, [INVENTORY]) as server:
        tools = server.tools()
        async with Session(tools) as s:
            pid = int((await s.arun("inventory.process_id()")).value)
            os.kill(pid, 9)
            _wait_gone(pid)
            r = await s.arun("try:\n    inventory.add(a=1, b=1)\n"
                             "except ToolError as e:\n    print('error:', e)")
    assert r.ok, r.error
    assert r.stdout.startswith("error:")


def test_streamable_http(http_url):
    with MCPServer.http(http_url) as server, MCPServer.http(
            http_url, headers={"X-Test": "1"}, name="shop") as other:
        assert server.namespace == "inventory"
        with Session(server.tools() + other.tools()) as s:
            r = s.run("print(inventory.add(a=20, b=22), shop.get_item(sku='D4')['name'],"
                      " shop.describe(sku='B2'))")
            assert r.ok, r.error
            assert r.stdout.strip() == "42 dahlia seeds bucket costs 8.50 and 40 are left"

            async def main():
                return await s.arun("import asyncio\n"
                                    "await asyncio.gather(inventory.add(a=1, b=2),\n"
                                    "                     shop.add(a=3, b=4))")

            assert asyncio.run(main()).value == "[3, 7]"


def test_the_core_imports_without_mcp():
    code = ("import sys; sys.modules['mcp'] = None\nimport tooliscode\n"
            "try:\n    tooliscode.MCPServer.stdio('x').start()\n"
            "except ImportError as e:\n    print(e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         check=False)
    assert "pip install 'tooliscode[mcp]'" in out.stdout, out.stderr


def _wait_gone(pid: int, timeout: float = 10.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        try:  # reap it if it is our child
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"process {pid} is still running")
