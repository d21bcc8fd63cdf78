"""Real third-party MCP servers from PyPI, over stdio: mcp-server-time and mcp-server-git."""

from __future__ import annotations

import asyncio

import pytest
from tooliscode import Limits, MCPServer, Session

pytest.importorskip("mcp")

from mcp_servers import git_repo, installed


@pytest.fixture(scope="module")
def time_server():
    with MCPServer.stdio(installed("mcp-server-time"), ["--local-timezone", "UTC"]) as server:
        yield server


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return git_repo(tmp_path_factory.mktemp("repo"))


@pytest.fixture(scope="module")
def git_server(repo):
    with MCPServer.stdio(installed("mcp-server-git"), ["--repository", str(repo)]) as server:
        yield server


def test_time_gives_structured_values(time_server):
    assert time_server.namespace == "mcp_time"
    with Session(time_server.tools()) as s:
        r = s.run("now = mcp_time.get_current_time(timezone='Asia/Tokyo')\n"
                  "conv = mcp_time.convert_time(source_timezone='Europe/Paris', time='12:00',"
                  " target_timezone='America/New_York')\n"
                  "print(sorted(now), now['timezone'], type(now['is_dst']).__name__)\n"
                  "print(conv['source']['timezone'], conv['target']['datetime'][11:16])")
    assert r.ok, r.error
    first, second = r.stdout.splitlines()
    assert first == "['datetime', 'day_of_week', 'is_dst', 'timezone'] Asia/Tokyo bool"
    assert second.startswith("Europe/Paris ") and second.endswith(":00")


def test_time_errors_are_tool_errors(time_server):
    with Session(time_server.tools()) as s:
        r = s.run("try:\n    mcp_time.get_current_time(timezone='Mars/Olympus')\n"
                  "except ToolError as e:\n    print('error:', e)")
    assert r.ok, r.error
    assert r.stdout.startswith("error:") and "Mars/Olympus" in r.stdout


def test_git_text_content_and_two_servers_in_one_session(git_server, time_server, repo):
    assert git_server.namespace == "mcp_git"
    tools = git_server.tools() + time_server.tools()
    code = (f"repo = {str(repo)!r}\n"
            "log = mcp_git.git_log(repo_path=repo)\n"
            "authors = [l.split(': ', 1)[1] for l in log.splitlines() if l.startswith('Author:')]\n"
            "status = mcp_git.git_status(repo_path=repo)\n"
            "print(type(log).__name__, sorted(set(authors)), authors.count('Ada'))\n"
            "print('modified:' in status and 'a.txt' in status)")
    with Session(tools, limits=Limits(timeout_s=30)) as s:
        r = s.run(code)
        assert r.ok, r.error
        assert r.stdout.splitlines() == ["str ['Ada', 'Bob'] 2", "True"]

        async def both():
            return await s.arun(
                "import asyncio\n"
                "diff, now = await asyncio.gather(mcp_git.git_diff_unstaged(repo_path=repo),"
                " mcp_time.get_current_time(timezone='UTC'))\n"
                "print('+changed' in diff, now['timezone'])")

        r = asyncio.run(both())
    assert r.ok, r.error
    assert r.stdout.strip() == "True UTC"
