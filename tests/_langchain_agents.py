"""What the LangChain approval tests share with the processes they start: real tools that
count their runs, LangChain's fake chat model scripted from the conversation, an agent with
code mode and human-in-the-loop, and a checkpointer saved to a file and read back.

Run as a script, it is one step of a conversation in a process of its own:

    python _langchain_agents.py MODE REDIS_URL SAVED_CHECKPOINTS start CODE [CODE ...]
    python _langchain_agents.py MODE REDIS_URL SAVED_CHECKPOINTS resume

`start` asks the agent to run each CODE in turn; `resume` answers the pending interrupts with
`decide`.
Either way the checkpointer's state is written back to SAVED_CHECKPOINTS, and one JSON line
says what happened: the interrupts now pending, the tools' runs in this process, and the
code tool's last message.
"""

from __future__ import annotations

import collections
import json
import pickle
import sys
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, HumanInTheLoopMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from pydantic import Field

RAN: collections.Counter[str] = collections.Counter()
SENT: list[tuple[str, str]] = []
ORDERS = [{"id": 1, "customer": "ann", "late": True}, {"id": 2, "customer": "bob", "late": True},
          {"id": 3, "customer": "cy", "late": False}]


@tool
def find_late_orders() -> list[dict]:
    """The orders past their due date."""
    RAN["find_late_orders"] += 1
    return [o for o in ORDERS if o["late"]]


@tool
def send_email(to: str, body: str) -> str:
    """Send one email (a person approves each)."""
    RAN["send_email"] += 1
    SENT.append((to, body))
    return f"sent to {to}"


@tool
def ping(n: int) -> int:
    """An ungated call."""
    RAN["ping"] += 1
    return n


@tool
async def customer(name: str) -> dict:
    """One customer's record (an async-only tool)."""
    RAN["customer"] += 1
    return {"name": name, "vip": name == "ann"}


TOOLS = [find_late_orders, send_email, ping, customer]


class CodeModel(GenericFakeChatModel):
    """LangChain's fake chat model, with the `bind_tools` `create_agent` needs, replying from
    the conversation: a user message is code to run (or `CALL name {json}`, a direct call),
    and a tool's answer is repeated as the final reply."""

    messages: Any = Field(default_factory=lambda: iter(()))
    bound: list[str] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> CodeModel:
        self.bound = [t.name if hasattr(t, "name") else t["name"] for t in tools]
        return self

    def _generate(self, messages: list[Any], *args: Any, **kwargs: Any) -> ChatResult:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            reply = AIMessage(f"done: {last.content}")
        elif str(last.content).startswith("CALL "):
            _, name, args = str(last.content).split(" ", 2)
            reply = AIMessage("", tool_calls=[{"name": name, "args": json.loads(args),
                                               "id": "call_1", "type": "tool_call"}])
        else:
            reply = AIMessage("", tool_calls=[{"name": "run_python",
                                               "args": {"code": str(last.content)},
                                               "id": "call_1", "type": "tool_call"}])
        return ChatResult(generations=[ChatGeneration(message=reply)])


class Recorder(AgentMiddleware):
    """Another middleware: the tool calls its `wrap_tool_call` saw."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        self.seen.append(f"{request.tool_call['name']}:{request.tool_call['id']}")
        return handler(request)

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        self.seen.append(f"{request.tool_call['name']}:{request.tool_call['id']}")
        return await handler(request)


def make_agent(mode: str, checkpointer: Any, recorder: Recorder | None = None,
               **options: Any) -> tuple[Any, Any]:
    """An agent whose code calls TOOLS, `send_email` reviewed by a person: the agent and its
    code-mode middleware (`options` go to it)."""
    from tooliscode.integrations.langchain import CodeModeMiddleware

    hitl = HumanInTheLoopMiddleware(interrupt_on={"send_email": True}, interrupt_mode=mode)
    code = CodeModeMiddleware(TOOLS, hitl=hitl, **options)
    middleware = [code, *([recorder] if recorder else []), hitl]
    return create_agent(CodeModel(), middleware=middleware, checkpointer=checkpointer), code


def decide(action: dict[str, Any]) -> dict[str, Any]:
    """The person: approves email to ann, refuses bob, rewrites the boss's, answers for cy."""
    to = action["args"].get("to")
    if to == "bob":
        return {"type": "reject", "message": "not to bob"}
    if to == "boss":
        return {"type": "edit", "edited_action": {"name": action["name"],
                                                  "args": {**action["args"], "body": "edited"}}}
    if to == "cy":
        return {"type": "respond", "message": "cy was phoned instead"}
    return {"type": "approve"}


def answer(interrupts: list[Any], policy: Any = decide) -> Command:
    """The resume for the pending interrupts, in the shape their mode asks for: one
    `{"decisions": [...]}` for a batched request, `{interrupt id: decision}` per call."""
    if not interrupts:
        raise AssertionError("nothing to answer")
    first = interrupts[0].value
    if "action_requests" in first:
        return Command(resume={"decisions": [policy(a) for a in first["action_requests"]]})
    return Command(resume={i.id: policy(i.value) for i in interrupts})


def save_checkpoints(saver: InMemorySaver, path: Path) -> None:
    """The checkpointer's state as a file (a persistent checkpointer would keep it)."""
    path.write_bytes(pickle.dumps({name: dict(getattr(saver, name))
                                   for name in ("storage", "writes", "blobs")}))


def load_checkpoints(path: Path) -> InMemorySaver:
    saver = InMemorySaver()
    for name, data in pickle.loads(path.read_bytes()).items():
        getattr(saver, name).update(data)
    return saver


def tool_messages(state: Any) -> list[str]:
    return [str(m.content) for m in state["messages"] if isinstance(m, ToolMessage)]


def step(mode: str, url: str, saved: Path, which: str, codes: list[str]) -> dict[str, Any]:
    """One step of the conversation (`start` running `codes`, or `resume`), the checkpointer
    read from and written back to `saved`: the interrupts now pending, the tools' runs in
    this step, and the code tool's messages."""
    from tooliscode import Limits
    from tooliscode.durable import RedisStore

    before = RAN.copy()
    saver = load_checkpoints(saved) if saved.exists() else InMemorySaver()
    agent, code = make_agent(mode, saver, store=RedisStore(url), limits=Limits(timeout_s=60))
    config = {"configurable": {"thread_id": "orders"}}
    try:
        if which == "start":
            for code_text in codes:
                result = agent.invoke({"messages": [("user", code_text)]}, config, version="v2")
        else:
            pending = [i for task in agent.get_state(config).tasks for i in task.interrupts]
            result = agent.invoke(answer(pending), config, version="v2")
        save_checkpoints(saver, saved)
    finally:
        code.close()
    return {"interrupts": [i.value for i in result.interrupts], "ran": dict(RAN - before),
            "messages": tool_messages(result.value)}


def main() -> None:
    mode, url, saved, which = sys.argv[1:5]
    print(json.dumps(step(mode, url, Path(saved), which, sys.argv[5:])))


if __name__ == "__main__":
    main()
