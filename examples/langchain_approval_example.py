"""LangChain with code mode, and a person who approves each email the code sends.

    python examples/langchain_approval_example.py

The agent's code finds the late orders and emails each customer. `send_email` is reviewed by
LangChain's `HumanInTheLoopMiddleware`, so the cell pauses at those calls and the graph
interrupts with the middleware's own request, as for an email the model sent itself. The
person approves one email and rejects the other, and `Command(resume=...)` continues the
same cell: the orders are not looked up again, the approved email goes out once, and the
code gets the reviewer's reason for the other as a `ToolError`.

It runs twice: in this process, then with the pause taken up by a new graph and a new code
tool, from the checkpointer's saved state (written to a file here, where a persistent
checkpointer such as a SQLite or Postgres one would keep it) and the sandbox's store.
Offline, LangChain's fake chat model plays the assistant; with OPENAI_API_KEY set (and
`pip install langchain-openai`), a real model does (OPENAI_MODEL picks which).
"""

from __future__ import annotations

import collections
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from tooliscode.durable import FolderStore
from tooliscode.integrations.langchain import CodeModeMiddleware

ORDERS = [
    {"id": 1041, "customer": "Ann Lee", "email": "ann@example.com", "due": "2026-11-02",
     "shipped": None},
    {"id": 1042, "customer": "Bob Roy", "email": "bob@example.com", "due": "2026-11-03",
     "shipped": None},
    {"id": 1043, "customer": "Cy Hart", "email": "cy@example.com", "due": "2026-11-04",
     "shipped": "2026-11-01"},
    {"id": 1044, "customer": "Di Park", "email": "di@example.com", "due": "2026-12-01",
     "shipped": None},
]
TODAY = "2026-11-20"
RAN: collections.Counter[str] = collections.Counter()
OUTBOX: list[str] = []


@tool
def find_late_orders() -> list[dict]:
    """The orders past their due date that have not shipped."""
    RAN["find_late_orders"] += 1
    return [o for o in ORDERS if o["shipped"] is None and o["due"] < TODAY]


@tool
def send_email(to: str, subject: str, body: str) -> str:
    """Send an email to a customer. A person approves each one."""
    RAN["send_email"] += 1
    OUTBOX.append(to)
    return f"sent to {to}"


CODE = """\
import asyncio
late = find_late_orders()
print(len(late), "late orders")
sent = await asyncio.gather(
    *(send_email(to=o["email"], subject=f"Order {o['id']} is late",
                 body=f"Dear {o['customer']}, your order {o['id']} is late; we are on it.")
      for o in late),
    return_exceptions=True)
for order, result in zip(late, sent):
    print(order["customer"], "->", result if isinstance(result, str) else f"not sent: {result}")
"""


class ScriptedChatModel(GenericFakeChatModel):
    """LangChain's fake chat model with the `bind_tools` that `create_agent` needs: it runs
    CODE, then reports what the code printed."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(self, messages: list[Any], *args: Any, **kwargs: Any) -> ChatResult:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            reply = AIMessage(f"Done. The code printed:\n{last.content}")
        else:
            reply = AIMessage("", tool_calls=[{"name": "run_python", "args": {"code": CODE},
                                               "id": "call_1", "type": "tool_call"}])
        return ChatResult(generations=[ChatGeneration(message=reply)])


def model() -> Any:
    if os.environ.get("OPENAI_API_KEY"):
        from langchain.chat_models import init_chat_model  # needs `pip install langchain-openai`

        return init_chat_model(f"openai:{os.environ.get('OPENAI_MODEL', 'gpt-4.1-mini')}")
    return ScriptedChatModel(messages=iter(()))


def agent(checkpointer: Any, store: FolderStore) -> tuple[Any, CodeModeMiddleware]:
    # --8<-- [start:agent]
    hitl = HumanInTheLoopMiddleware(interrupt_on={"send_email": True})  # as for direct calls
    code = CodeModeMiddleware([find_late_orders, send_email], store=store)  # finds the review
    graph = create_agent(model(), middleware=[code, hitl], checkpointer=checkpointer,
                         system_prompt="Email every customer whose order is late.")
    # --8<-- [end:agent]
    return graph, code


def show_pause(result: Any) -> list[dict]:
    """What the person sees: the middleware's request, one action per email."""
    [pause] = result.interrupts
    actions = pause.value["action_requests"]
    print(f"--- paused: the code waits for {len(actions)} emails to be reviewed ---")
    for action, review in zip(actions, pause.value["review_configs"]):
        print(f"  {action['name']}(to={action['args']['to']!r}, "
              f"subject={action['args']['subject']!r})  may: {review['allowed_decisions']}")
    return actions


# --8<-- [start:decide]
def decide(actions: list[dict]) -> Command:
    """The person approves the first email and rejects the others."""
    decisions = [{"type": "approve"}] + [
        {"type": "reject", "message": "they phoned support this morning; no email"}
        for a in actions[1:]]
    print("--- the person decides ---")
    for action, decision in zip(actions, decisions):
        print(f"  {decision['type']} {action['args']['to']}" +
              (f": {decision['message']}" if "message" in decision else ""))
    return Command(resume={"decisions": decisions})
# --8<-- [end:decide]


def show_end(result: Any) -> None:
    messages = result.value["messages"]
    tool_message = next(m for m in reversed(messages) if isinstance(m, ToolMessage))
    print(f"--- the cell went on; the code printed ---\n{tool_message.content}")
    print(f"=== assistant: {messages[-1].content}")
    print(f"tool runs: {dict(RAN)}; outbox: {OUTBOX}")


def in_this_process(folder: Path) -> None:
    print("\n=== 1. pause and resume in this process")
    graph, code = agent(InMemorySaver(), FolderStore(folder / "sandboxes"))
    config = {"configurable": {"thread_id": "late-orders-1"}}
    try:
        # --8<-- [start:resume]
        result = graph.invoke({"messages": [("user", "Email the customers with late orders.")]},
                              config, version="v2")
        result = graph.invoke(decide(show_pause(result)), config, version="v2")
        # --8<-- [end:resume]
        show_end(result)
    finally:
        code.close()


def from_saved_state(folder: Path) -> None:
    print("\n=== 2. the pause taken up by a new graph, from saved state")
    saved, store = folder / "checkpoints.pickle", FolderStore(folder / "sandboxes")
    config = {"configurable": {"thread_id": "late-orders-2"}}
    saver = InMemorySaver()
    graph, code = agent(saver, store)
    try:
        result = graph.invoke({"messages": [("user", "Email the customers with late orders.")]},
                              config, version="v2")
    finally:
        code.close()  # the paused cell stays in the store
    saved.write_bytes(pickle.dumps({name: dict(getattr(saver, name))
                                    for name in ("storage", "writes", "blobs")}))
    actions = show_pause(result)
    print(f"(state saved: {saved.name}, {saved.stat().st_size:,} bytes; the graph and its "
          "code tool are gone)")

    again = InMemorySaver()  # a new graph, with the checkpointer's state read back
    for name, data in pickle.loads(saved.read_bytes()).items():
        getattr(again, name).update(data)
    graph, code = agent(again, store)
    try:
        pending = [i for task in graph.get_state(config).tasks for i in task.interrupts]
        print(f"the new graph finds {len(pending)} pending interrupt with "
              f"{len(pending[0].value['action_requests'])} emails")
        show_end(graph.invoke(decide(actions), config, version="v2"))
    finally:
        code.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        in_this_process(Path(folder))
        RAN.clear()
        OUTBOX.clear()
        from_saved_state(Path(folder))


if __name__ == "__main__":
    main()
