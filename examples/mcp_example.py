"""MCP servers as tool sources: two real servers from PyPI, called from sandboxed code.

    pip install mcp-server-time mcp-server-git     # both work offline
    python examples/mcp_example.py

First a `Session` uses the servers directly; then an Agents SDK agent does, through
`CodeModeToolset`. Offline, the SDK's scripted model plays the assistant; with OPENAI_API_KEY
set, a real model does.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from agents import Agent, Runner
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from agents.tracing import set_trace_processors
from tooliscode import MCPServer, Session
from tooliscode.integrations.openai_agents import CodeModeToolset

QUESTION = ("Who wrote most of the commits in {repo}, and what time is it now in Tokyo "
            "and in New York?")

MODEL_CODE = """\
import asyncio
from collections import Counter
log = await mcp_git.git_log(repo_path={repo!r}, max_count=100)
authors = Counter(line.split(": ", 1)[1] for line in log.splitlines() if line.startswith("Author:"))
tokyo, new_york = await asyncio.gather(
    mcp_time.get_current_time(timezone="Asia/Tokyo"),
    mcp_time.get_current_time(timezone="America/New_York"))
print("commits by author:", dict(authors.most_common()))
print("Tokyo:", tokyo["datetime"][11:16], tokyo["day_of_week"],
      "| New York:", new_york["datetime"][11:16])
"""


def server_command(name: str) -> str:
    found = Path(sys.executable).with_name(name)
    command = str(found) if found.exists() else shutil.which(name)
    if command is None:
        sys.exit(f"{name} is not installed: pip install {name}")
    return command


def make_repo() -> str:
    """A small git repository with a few authors, so the example needs no network."""
    path = tempfile.mkdtemp(prefix="tooliscode-mcp-example-")
    subprocess.run(["git", "init", "-q", path], check=True)
    for i, author in enumerate(["Ada", "Grace", "Ada", "Linus", "Ada", "Grace"]):
        Path(path, f"note{i}.txt").write_text(f"note {i}\n")
        subprocess.run(["git", "-C", path, "add", "."], check=True)
        subprocess.run(["git", "-C", path, "-c", f"user.name={author}", "-c",
                        f"user.email={author.lower()}@example.org", "commit", "-q", "-m",
                        f"note {i}"], check=True)
    return path


def scripted_model(repo: str) -> ScriptedModel:
    def answer(call):
        printed = [i["output"] for i in call.input if i.get("type") == "function_call_output"]
        return [assistant_message(f"Here is what I found:\n{printed[-1]}")]

    code = MODEL_CODE.format(repo=repo)
    return ScriptedModel([[function_call("run_python", {"code": code}, call_id="call_1")],
                          ModelStep.respond(answer)])


def direct(time_server: MCPServer, git_server: MCPServer, repo: str) -> None:
    print("=== a Session calling the servers' tools ===")
    with Session(time_server.tools() + git_server.tools()) as session:
        result = session.run(f"status = mcp_git.git_status(repo_path={repo!r})\n"
                             "print(status.strip())\n"
                             "mcp_time.get_current_time(timezone='Europe/Paris')")
        print(result.stdout, result.value, sep="")


async def with_agent(time_server: MCPServer, git_server: MCPServer, repo: str) -> None:
    print("\n=== an Agents SDK agent whose code calls them ===")
    real = bool(os.environ.get("OPENAI_API_KEY"))
    if not real:
        set_trace_processors([])  # offline: export no traces
    # --8<-- [start:agent]
    code = CodeModeToolset(mcp_servers=[time_server, git_server])
    agent = Agent(name="Assistant", instructions=code.instructions("Be precise."),
                  tools=[code.tool], **({} if real else {"model": scripted_model(repo)}))
    # --8<-- [end:agent]
    async with code:
        result = await Runner.run(agent, QUESTION.format(repo=repo))
    print(result.final_output)


def main() -> None:
    repo = make_repo()
    time_server = MCPServer.stdio(server_command("mcp-server-time"))
    git_server = MCPServer.stdio(server_command("mcp-server-git"), ["--repository", repo])
    try:
        with time_server, git_server:  # started here, stopped when the block ends
            direct(time_server, git_server, repo)
            asyncio.run(with_agent(time_server, git_server, repo))
    finally:
        shutil.rmtree(repo, ignore_errors=True)


if __name__ == "__main__":
    main()
