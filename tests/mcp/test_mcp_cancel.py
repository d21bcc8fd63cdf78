"""The MCP proxy's cancels, with the real `mcp` client: `notifications/cancelled` for a
`tools/call` stops the cell and the state comes back (over stdio and streamable HTTP); a
session's `DELETE` stops the cell and closes its interpreter; a dropped connection is not a
cancellation (the MCP spec), so the cell runs to its end."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

import httpx2
from _cancels import CAME_BACK, READ, SET, leftovers, nothing_left, running
from mcp import Client, StdioServerParameters
from mcp_servers import INVENTORY, free_port
from tooliscode import Limits, MCPServer
from tooliscode.mcp._proxy import CodeModeProxy

ROOT = Path(__file__).resolve().parents[2]
PRINTS_THEN_LOOPS = "x = 42\nprint('started', flush=True)\nwhile True:\n    pass"
_PROTOCOL = "2025-06-18"


async def _text(client: Client, code: str) -> str:
    result = await client.call_tool("run_python", {"code": code})
    return result.content[0].text


async def _cancel_once_started(client: Client) -> None:
    """Call the looping cell, and cancel the call once its first output arrives (as progress):
    the client sends `notifications/cancelled`."""
    started = asyncio.Event()

    async def progress(done: float, total: float | None, message: str | None) -> None:
        started.set()

    call = asyncio.ensure_future(client.call_tool("run_python", {"code": PRINTS_THEN_LOOPS},
                                                  progress_callback=progress))
    await asyncio.wait_for(started.wait(), 60)
    call.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await call


async def test_stdio_notifications_cancelled_stops_the_cell_and_the_state_comes_back(tmp_path):
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"inventory": {"command": sys.executable,
                                                               "args": [INVENTORY]}}}))
    server = StdioServerParameters(command=sys.executable, cwd=str(ROOT), args=[
        "-m", "tooliscode.cli", "mcp", "--config", str(config), "--timeout", "60"])
    async with Client(server) as client:
        await _text(client, SET)
        await _cancel_once_started(client)
        # a cell still running would hold the interpreter for a minute: this one answers now
        read = await _text(client, READ)
    assert CAME_BACK in read and read.endswith("\n41"), read


@pytest.fixture(scope="module")
def proxy():
    """The proxy over streamable HTTP in this process (its interpreters can be looked at)."""
    served = CodeModeProxy({"inventory": MCPServer.stdio(sys.executable, [INVENTORY])},
                           limits=Limits(timeout_s=60))
    port, ready, running_loop = free_port(), threading.Event(), {}

    async def serve() -> None:
        running_loop["loop"], running_loop["task"] = (asyncio.get_running_loop(),
                                                      asyncio.current_task())
        async with served:
            with contextlib.suppress(asyncio.CancelledError):
                await served.serve_http("127.0.0.1", port, ready=ready.set)

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    assert ready.wait(60), "the proxy did not start"
    yield served, f"http://127.0.0.1:{port}/mcp"
    running_loop["loop"].call_soon_threadsafe(running_loop["task"].cancel)
    thread.join(30)


async def test_http_notifications_cancelled_stops_the_cell_and_the_state_comes_back(proxy):
    served, url = proxy
    async with Client(url) as client:
        await _text(client, SET)
        before = leftovers()
        await _cancel_once_started(client)
        read = await _text(client, READ)
        assert CAME_BACK in read and read.endswith("\n41"), read
        await asyncio.to_thread(nothing_left, before)


class _Raw:
    """One MCP session over plain HTTP requests, to drop a connection or end the session
    while a call runs (what the client library does not do on its own)."""

    def __init__(self, http: httpx2.AsyncClient, url: str):
        self.http, self.url = http, url
        self.headers = {"accept": "application/json, text/event-stream",
                        "content-type": "application/json"}
        self.ids = iter(range(1, 1000))

    async def open(self) -> None:
        answer = await self.post("initialize", {"protocolVersion": _PROTOCOL, "capabilities": {},
                                                "clientInfo": {"name": "raw", "version": "1"}})
        self.headers.update({"mcp-session-id": answer.headers["mcp-session-id"],
                             "mcp-protocol-version": _PROTOCOL})
        await self.http.post(self.url, headers=self.headers,
                             json={"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def post(self, method: str, params: dict[str, Any]) -> Any:
        return await self.http.post(self.url, headers=self.headers, json={
            "jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": params})

    @property
    def key(self) -> tuple[str, str]:
        """The proxy's key of this session's interpreter."""
        return ("mcp-session", self.headers["mcp-session-id"])

    async def close(self) -> int:
        """End the session (`DELETE`); the status."""
        return (await self.http.delete(self.url, headers=self.headers)).status_code

    async def run(self, code: str) -> str:
        answer = await self.post("tools/call", {"name": "run_python",
                                                "arguments": {"code": code}})
        data = next(line for line in answer.text.splitlines() if line.startswith("data:"))
        return json.loads(data[5:])["result"]["content"][0]["text"]


async def _started(served: CodeModeProxy, call: asyncio.Future) -> Any:
    while (session := running(served.code_tool)) is None:
        assert not call.done(), call
        await asyncio.sleep(0.005)
    return session


async def test_a_dropped_connection_is_not_a_cancellation(proxy):
    """The spec: a client that loses its connection has not cancelled; the cell runs on, and
    the session keeps what it did."""
    served, url = proxy
    async with httpx2.AsyncClient(timeout=60) as http:
        raw = _Raw(http, url)
        await raw.open()
        await raw.run(SET)
        call = asyncio.ensure_future(raw.run("x = 42\nimport time\ntime.sleep(0.5)\ny = 1"))
        await _started(served, call)
        call.cancel()  # the request's connection closes under it
        with contextlib.suppress(asyncio.CancelledError):
            await call
        # cancelled, it would have come back to x = 41 and no y
        assert await raw.run("print(x, y)") == "42 1"  # waited for it: it ended, and kept
        await raw.close()


async def test_an_http_sessions_delete_stops_its_cell_and_closes_its_interpreter(proxy):
    served, url = proxy
    async with httpx2.AsyncClient(timeout=60) as http:
        raw = _Raw(http, url)
        await raw.open()
        await raw.run(SET)
        before = leftovers()
        call = asyncio.ensure_future(raw.run(PRINTS_THEN_LOOPS))
        session = await _started(served, call)
        assert await raw.close() == 200
        with contextlib.suppress(Exception):
            await call  # its stream ends with the session
    deadline = asyncio.get_running_loop().time() + 20
    while session._running is not None or raw.key in served.code_tool.keys:
        assert asyncio.get_running_loop().time() < deadline, "the cell runs on"
        await asyncio.sleep(0.02)
    await asyncio.to_thread(nothing_left, (before[0] - 1, before[1]))  # its guest is gone too
