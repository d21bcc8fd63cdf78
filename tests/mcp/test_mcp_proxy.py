"""`tooliscode mcp`: the real MCP client against the proxy, which fronts real MCP servers
(mcp-server-time and mcp-server-git from PyPI, and our inventory server), over stdio and
streamable HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from tooliscode import MCPServer
from tooliscode.prompt._guide import CODE_TOOL_SCHEMA

pytest.importorskip("mcp")

from mcp import Client, StdioServerParameters
from mcp_servers import INVENTORY, free_port, git_repo, installed, inventory_over_http
from tooliscode.mcp._config import ConfigError, load_config, parse_config
from tooliscode.mcp._proxy import CodeModeProxy

ROOT = Path(__file__).resolve().parents[2]
TOOLISCODE = [sys.executable, "-m", "tooliscode.cli", "mcp"]
API_KEY = "proxy-k3y"


def _write(path: Path, servers: dict) -> str:
    path.write_text(json.dumps({"mcpServers": servers}))
    return str(path)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return git_repo(tmp_path_factory.mktemp("repo"))


@pytest.fixture(scope="module")
def servers_json(tmp_path_factory, repo):
    """What a user would copy from their MCP client's configuration."""
    return _write(tmp_path_factory.mktemp("config") / "servers.json", {
        "time": {"command": installed("mcp-server-time"), "args": ["--local-timezone", "UTC"]},
        "git": {"command": installed("mcp-server-git"), "args": ["--repository", str(repo)]},
        "inventory": {"command": sys.executable, "args": [INVENTORY], "timeout_s": 5,
                      "autoApprove": []},
        "off": {"command": "not-started", "disabled": True},
    })


def _stdio(config: str, *options: str) -> Client:
    return Client(StdioServerParameters(command=sys.executable,
                                        args=[*TOOLISCODE[1:], "--config", config, *options],
                                        cwd=str(ROOT)))


async def _run(client: Client, code: str) -> tuple[str, bool]:
    result = await client.call_tool("run_python", {"code": code})
    [block] = result.content
    return block.text, bool(result.is_error)


async def test_stdio_lists_the_catalog_and_runs_cells_over_two_servers(servers_json, repo):
    """One proxy process (each costs its upstream servers' starts): the two tools and their
    catalog, search, then cells that use two servers, keep state and report errors."""
    async with _stdio(servers_json, "--memory", "96") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert sorted(tools) == ["run_python", "search_tools"]
        code_tool = tools["run_python"]
        assert code_tool.input_schema == CODE_TOOL_SCHEMA
        assert client.instructions == code_tool.description  # for clients that ignore either
        catalog = code_tool.description
        for line in ("# time_mcp: call as time_mcp.<name>(...)", "# git: call as git.<name>(...)",
                     "- get_current_time(timezone: str) -> TimeResult: Get current time in",
                     "- list_items(category=None) -> list[Item]: Every item in stock",
                     "help(name) prints a tool's types and full documentation.",
                     "Notes from the `inventory` server: A toy shop's stock, for tests."):
            assert line in catalog
        assert "not_started" not in catalog

        found = await client.call_tool("search_tools", {"query": "commit history log", "limit": 2})
        text = found.content[0].text
        assert not found.is_error
        assert text.startswith("2 tools matching 'commit history log'")
        assert "# git.git_log\ndef git_log(\n    repo_path: str," in text
        nothing = await client.call_tool("search_tools", {"query": "zzqx"})
        assert not nothing.is_error and nothing.content[0].text.startswith("No tool matched")

        text, failed = await _run(client, (
            "import asyncio\n"
            f"log, items, now = await asyncio.gather(git.git_log(repo_path={str(repo)!r}),"
            " inventory.list_items(), time_mcp.get_current_time(timezone='Asia/Tokyo'))\n"
            "authors = sorted({l.split(': ', 1)[1] for l in log.splitlines()"
            " if l.startswith('Author:')})\n"
            "in_stock = [i['sku'] for i in items if i['qty'] > 0]\n"
            "print(authors, in_stock, now['timezone'])\n"
            "pid = inventory.process_id()"))
        assert (text, failed) == ("['Ada', 'Bob'] ['A1', 'B2', 'D4'] Asia/Tokyo", False)
        assert await _run(client, "print(len(in_stock), authors[-1])") == ("3 Bob", False)

        text, failed = await _run(client, "in_stock[10]")
        assert failed and "IndexError: list index out of range" in text and '"<cell-' in text
        text, failed = await _run(client, "try:\n    inventory.get_item(sku='ZZ')\n"
                                          "except ToolError as e:\n    print('caught:', e)")
        assert not failed and text.startswith("caught:") and "no item with SKU 'ZZ'" in text
        text, failed = await _run(client, "time_mcp.get_current_time(timezone='Mars/Olympus')")
        assert failed and "ToolError" in text and "Mars/Olympus" in text
        text, failed = await _run(client, "big = bytearray(200 * 1024 * 1024)")  # --memory 96
        assert failed and "MemoryError" in text
        assert await _run(client, "len(authors)") == ("[value] 2", False)  # still alive

        empty = await client.call_tool("run_python", {})
        assert empty.is_error and "needs `code`" in empty.content[0].text
        pid = int((await _run(client, "print(pid)"))[0])
    _wait_gone(pid)  # the client left: the proxy stopped, and stopped its upstream servers


async def test_callers_serve_upstream_tools_beside_the_code_tool(tmp_path):
    config = _write(tmp_path / "servers.json", {"time": {
        "command": installed("mcp-server-time"), "args": ["--local-timezone", "UTC"],
        "callers": {"get_current_time": "direct", "convert_time": "both"}}})
    async with _stdio(config) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert sorted(tools) == ["run_python", "search_tools", "time_mcp.convert_time",
                                 "time_mcp.get_current_time"]
        assert tools["time_mcp.get_current_time"].input_schema["required"] == ["timezone"]
        catalog = tools["run_python"].description
        assert "def convert_time(" in catalog and "def get_current_time(" not in catalog
        direct = await client.call_tool("time_mcp.get_current_time", {"timezone": "Asia/Tokyo"})
        assert not direct.is_error and direct.structured_content["timezone"] == "Asia/Tokyo"
        wrong = await client.call_tool("time_mcp.get_current_time", {"timezone": "Mars/Olympus"})
        assert wrong.is_error and "Mars/Olympus" in wrong.content[0].text
        text, failed = await _run(client, "print(time_mcp.convert_time(source_timezone='UTC', "
                                          "time='12:00', target_timezone='Asia/Tokyo')"
                                          "['target']['timezone'])\n"
                                          "time_mcp.get_current_time(timezone='UTC')")
        assert failed and text.startswith("Asia/Tokyo") and "get_current_time" in text
    unknown = _write(tmp_path / "unknown.json", {"time": {
        "command": installed("mcp-server-time"), "callers": {"get_the_time": "direct"}}})
    done = subprocess.run([*TOOLISCODE, "--config", unknown], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, check=False, stdin=subprocess.DEVNULL)
    assert done.returncode == 1 and "callers names 'time_mcp.get_the_time'" in done.stderr


PRINTING = "for i in range(300):\n    print(f'row {i}')"
PRINTED = "".join(f"row {i}\n" for i in range(300))


async def _progress_of(client: Client) -> tuple[list[tuple[float, str | None]], str]:
    """What the client hears as the cell's progress, and the cell's reply."""
    heard: list[tuple[float, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        heard.append((done, message))

    result = await client.call_tool("run_python", {"code": PRINTING}, progress_callback=progress)
    return heard, result.content[0].text


async def test_stdio_progress_notifications_carry_what_the_code_prints(servers_json):
    async with _stdio(servers_json) as client:
        heard, text = await _progress_of(client)
        assert "".join(m or "" for _, m in heard) == PRINTED
        done = [d for d, _ in heard]
        assert done == sorted(done) and done[-1] == len(PRINTED)  # progress only grows
        assert text.endswith("row 299")
        # a call that asks for no progress hears none (nothing streams)
        assert await _run(client, "print('quiet')") == ("quiet", False)


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads children from /proc")
def test_sigterm_stops_a_stdio_proxy_and_its_servers_at_once(tmp_path):
    config = _write(tmp_path / "servers.json", {"inventory": {"command": sys.executable,
                                                              "args": [INVENTORY]}})
    proc = subprocess.Popen([*TOOLISCODE, "--config", config], cwd=ROOT, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert "7 tools from inventory" in proc.stderr.readline()  # started; stdin stays open
        children = [int(pid) for task in Path(f"/proc/{proc.pid}/task").iterdir()
                    for pid in (task / "children").read_text().split()]
        assert children
        started = time.monotonic()
        proc.terminate()
        assert proc.wait(20) == 0 and time.monotonic() - started < 10
        for pid in children:
            _wait_gone(pid)
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def http_proxy(tmp_path_factory):
    """The proxy over streamable HTTP, fronting an HTTP upstream (with a header from the
    environment) and a stdio one; yields its URL."""
    with inventory_over_http() as upstream:
        config = _write(tmp_path_factory.mktemp("http") / "servers.json", {
            "shop": {"url": upstream, "headers": {"X-Token": "${SHOP_TOKEN}"}},
            "clock": {"type": "stdio", "command": installed("mcp-server-time")},
        })
        port = free_port()
        proc = subprocess.Popen([*TOOLISCODE, "--config", config, "--transport", "http",
                                 "--port", str(port)], cwd=ROOT, stderr=subprocess.PIPE,
                                text=True, env={**os.environ, "SHOP_TOKEN": "t0ken",
                                                "TOOLISCODE_API_KEY": API_KEY})
        try:
            lines = []
            for line in proc.stderr:
                lines.append(line)
                if "serving http://" in line:
                    break
            else:
                pytest.fail(f"the proxy did not start: {''.join(lines)}")
            assert any("9 tools from shop, clock" in line for line in lines)  # 7 + 2
            threading.Thread(target=proc.stderr.read, daemon=True).start()  # keep it draining
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            proc.terminate()
            assert proc.wait(20) == 0


@contextlib.asynccontextmanager
async def _with_key(url: str, key: str):
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}) as http, \
            streamable_http_client(url, http_client=http) as streams:
        yield streams


def _keyed(url: str, key: str = API_KEY, **options) -> Client:
    """The real client, sending the proxy's API key."""
    return Client(_with_key(url, key), **options)


async def test_http_clients_must_present_the_api_key(http_proxy):
    import httpx2

    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    async with httpx2.AsyncClient() as http:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"x-api-key": "wrong"}):
            answer = await http.post(http_proxy, json=hello, headers=headers)
            assert answer.status_code == 401, headers
            assert "Authorization: Bearer" in answer.json()["error"]["message"]
    with pytest.raises(Exception):  # noqa: B017 - the client's own error for a 401
        async with _keyed(http_proxy, "wrong") as client:
            await client.list_tools()
    async with _keyed(http_proxy) as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["run_python",
                                                                      "search_tools"]


async def test_http_sessions_each_get_their_own_interpreter(http_proxy):
    async with _keyed(http_proxy) as first, _keyed(http_proxy) as second:
        assert [t.name for t in (await first.list_tools()).tools] == ["run_python", "search_tools"]
        text, failed = await _run(first, (
            "import asyncio\n"
            "skus = [i['sku'] for i in shop.list_items(category='garden')]\n"
            "rows = await asyncio.gather(*[shop.get_item(sku=s) for s in skus],"
            " clock.get_current_time(timezone='UTC'))\n"
            "print(sum(r['qty'] for r in rows[:-1]), rows[-1]['timezone'])"))
        assert (text, failed) == ("160 UTC", False)
        text, failed = await _run(second, "skus")
        assert failed and "NameError: name 'skus' is not defined" in text
        text, failed = await _run(second, "skus = ['mine']")
        assert not failed and text.endswith("it defined: skus = list of 1 item, the first a str)")
        assert await _run(first, "skus") == ("[value] ['B2', 'D4']", False)


async def test_http_progress_notifications_carry_what_the_code_prints(http_proxy):
    async with _keyed(http_proxy) as client:
        heard, text = await _progress_of(client)
        assert "".join(m or "" for _, m in heard) == PRINTED
        assert [d for d, _ in heard] == sorted(d for d, _ in heard)


async def test_http_client_without_sessions_gets_a_fresh_interpreter_per_call(http_proxy):
    async with _keyed(http_proxy, mode="2026-07-28") as client:  # this protocol has no sessions
        text, failed = await _run(client, "x = shop.add(a=2, b=3)\nprint(x)")
        assert not failed and text.endswith("\n5") and "nothing is kept" in text
        text, failed = await _run(client, "x")
        assert failed and "NameError" in text


def test_http_interpreters_close_with_their_client_sessions():
    proxy = CodeModeProxy({"inventory": MCPServer.stdio(sys.executable, [INVENTORY])})
    port, ready, running = free_port(), threading.Event(), {}

    async def serve():
        running["loop"], running["task"] = asyncio.get_running_loop(), asyncio.current_task()
        async with proxy:
            with contextlib.suppress(asyncio.CancelledError):  # how the test stops it
                await proxy.serve_http("127.0.0.1", port, ready=ready.set)

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    try:
        assert ready.wait(60), "the proxy did not start"

        async def visit() -> int:
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                await _run(client, "x = 1")
                return len(proxy.code_tool.keys)

        assert asyncio.run(visit()) == 1
        _until(lambda: proxy.code_tool.keys == [], "the interpreter of the ended session closes")
    finally:
        running["loop"].call_soon_threadsafe(running["task"].cancel)
        thread.join(30)
    assert not thread.is_alive() and not proxy.servers["inventory"].started


@pytest.mark.parametrize(("content", "message"), [
    (None, "cannot read the servers file"),
    ("{not json", "not valid JSON"),
    ('{"servers_typo": {}}', 'no "mcpServers" object'),
    ('{"mcpServers": {"broken": {"args": ["x"]}}}',
     'mcpServers.broken: give either "command"'),
    ('{"mcpServers": {"remote": {"type": "sse", "url": "http://localhost:1/sse"}}}',
     "SSE is not supported"),
])
def test_a_bad_config_file_is_a_clear_error(tmp_path, capsys, content, message):
    """The command's own entry point, in this process (the console script runs it in
    test_upstream_servers_that_fail_to_start_are_named)."""
    from tooliscode.cli import main

    path = tmp_path / "servers.json"
    if content is not None:
        path.write_text(content)
    code = main(["mcp", "--config", str(path)])
    out, err = capsys.readouterr()
    assert code == 2 and message in err, err
    assert str(path) in err and out == ""


def test_upstream_servers_that_fail_to_start_are_named(tmp_path):
    config = _write(tmp_path / "servers.json", {
        "time": {"command": installed("mcp-server-time")},
        "missing": {"command": "no-such-mcp-server-here", "args": ["--flag"]},
        "crashing": {"command": sys.executable,
                     "args": ["-c", "import sys; sys.exit('bad token for the crashing server')"]},
    })
    done = subprocess.run([*TOOLISCODE, "--config", config], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, check=False, stdin=subprocess.DEVNULL)
    assert done.returncode == 1, done.stderr
    err = done.stderr
    assert ("the server 'missing' (no-such-mcp-server-here --flag) failed to start: "
            "FileNotFoundError: No such file or directory") in err
    assert "the server 'crashing' (" in err and "Connection closed" in err
    assert "bad token for the crashing server" in err  # its own error output
    assert "'time'" not in err


def test_config_parsing(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("TOKEN_FOR_TEST", "s3cret")
    monkeypatch.delenv("UNSET_FOR_TEST", raising=False)
    [remote, local] = parse_config({"servers": {  # VS Code's key
        "remote": {"type": "http", "url": "https://example.org/${UNSET_FOR_TEST:-mcp}",
                   "headers": {"Authorization": "Bearer ${TOKEN_FOR_TEST}"}, "include": ["a"]},
        "local": {"command": "srv", "args": ["--n", "${UNSET_FOR_TEST:-3}"], "env": {"N": 4},
                  "timeout_s": 2.5, "colour": "blue"},
        "off": {"url": "http://x", "disabled": True}}})
    assert (remote.url, remote.headers, remote.include) == (
        "https://example.org/mcp", {"Authorization": "Bearer s3cret"}, ("a",))
    assert (local.command, local.args, local.env, local.timeout_s) == (
        "srv", ("--n", "3"), {"N": "4"}, 2.5)
    assert local.target == "srv --n 3" and local.server().namespace == "local"
    assert "ignoring unknown keys colour" in caplog.text
    assert parse_config({"mcpServers": {"time": {"command": "t"}}})[0].server().namespace == \
        "time_mcp"  # `import time` must not hide it
    [timer] = parse_config({"mcpServers": {"time": {"command": "t", "callers": {"now": "both"}}}})
    assert timer.qualified_callers == {"time_mcp.now": "both"}
    for bad, message in [({"mcpServers": {"a": {"command": "x", "url": "http://y"}}}, "not both"),
                         ({"mcpServers": {"a": {"command": "${UNSET_FOR_TEST}"}}},
                          "UNSET_FOR_TEST is not set"),
                         ({"mcpServers": {"a": {"command": "x", "timeout_s": 0}}}, "timeout_s"),
                         ({"mcpServers": {"a": {"command": "x", "args": "-v"}}}, "list of strings"),
                         ({"mcpServers": {"a": {"url": "x", "disabled": True}}}, "every server"),
                         ({"mcpServers": {"a": {"command": "x", "callers": {"t": "model"}}}},
                          "a.callers.t: expected one of code, direct, both"),
                         ({"mcpServers": {"a": {"command": "x", "callers": ["t"]}}},
                          "expected an object of tool names")]:
        with pytest.raises(ConfigError, match=message):
            parse_config(bad)
    if sys.version_info >= (3, 11):
        toml = tmp_path / "servers.toml"
        toml.write_text('[mcpServers.git]\ncommand = "uvx"\nargs = ["mcp-server-git"]\n')
        assert load_config(toml)[0].args == ("mcp-server-git",)


def _until(condition, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.05)


def _wait_gone(pid: int) -> None:
    def gone() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    _until(gone, f"process {pid} exits")
