"""LangChain with code mode: an agent's tools behind one `run_python` tool.

    python examples/langchain_example.py

Offline, LangChain's own fake chat model plays the assistant from a script; with
OPENAI_API_KEY set (and `pip install langchain-openai`), a real model does (OPENAI_MODEL picks
which). Either way the tools run for real: a callback handler prints each call the code made
as a child run of the code tool's run, and the second question, asked in the same thread,
uses a variable the first answer's code left behind.
"""

from __future__ import annotations

import asyncio
import os
import random
import threading
from typing import Any

from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from tooliscode.integrations.langchain import as_langchain_tool

_R = random.Random(7)
TICKETS = [{"id": f"t{i:04d}", "customer": f"c{_R.randrange(23)}",
            "status": _R.choice(("open", "open", "closed")),
            "priority": _R.choice(("low", "normal", "normal", "high")), "subject": f"Issue {i}"}
           for i in range(4_000)]


@tool
def list_tickets(status: str) -> list[dict]:
    """Every support ticket with the given status ("open" or "closed")."""
    return [t for t in TICKETS if t["status"] == status]


@tool
async def get_customer(customer_id: str) -> dict:
    """One customer's record: id, name and plan. A slow service: ask for several at once."""
    await asyncio.sleep(0.2)
    number = int(customer_id.removeprefix("c"))
    plan = ("enterprise", "team", "team")[number % 3]
    return {"id": customer_id, "name": f"Customer {number}", "plan": plan}


FIRST_QUESTION = "Which three customers have the most open high-priority tickets?"
FIRST_CODE = """\
import asyncio
from collections import Counter
urgent = Counter(t["customer"] for t in await list_tickets(status="open")
                 if t["priority"] == "high")
top = urgent.most_common(3)
people = await asyncio.gather(*[get_customer(customer_id=c) for c, _ in top])
for person, (_, count) in zip(people, top):
    print(f"{person['name']} ({person['plan']}): {count} tickets")
"""
SECOND_QUESTION = "Which of them are on the enterprise plan?"
SECOND_CODE = "print([p['name'] for p in people if p['plan'] == 'enterprise'])"


class ScriptedChatModel(GenericFakeChatModel):
    """LangChain's fake chat model with the `bind_tools` that `create_agent` needs; a callable
    in the script is called with the conversation so far to write the reply."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(self, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
        from langchain_core.outputs import ChatGeneration, ChatResult

        step = next(self.messages)
        message = step(messages) if callable(step) else step
        return ChatResult(generations=[ChatGeneration(message=message)])


def run_code(code: str, call_id: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "run_python", "args": {"code": code}, "id": call_id}])


def say_what_it_printed(messages: list[Any]) -> AIMessage:
    return AIMessage(f"Here is what I found:\n{messages[-1].content}")


class ChildRuns(BaseCallbackHandler):
    """Collects the tool runs LangChain's callbacks report (gathered calls report from
    several threads at once)."""

    def __init__(self) -> None:
        self.names: dict[Any, str] = {}
        self.lines: list[str] = []
        self._lock = threading.Lock()

    def on_tool_start(self, serialized: dict[str, Any], input_str: str, *, run_id: Any,
                      parent_run_id: Any = None, **kwargs: Any) -> None:
        with self._lock:
            self.names[run_id] = serialized["name"]
            if parent_run_id in self.names:
                self.lines.append(f"child run {serialized['name']}({input_str}) "
                                  f"of {self.names[parent_run_id]}")


def model() -> Any:
    if os.environ.get("OPENAI_API_KEY"):
        from langchain.chat_models import init_chat_model  # needs `pip install langchain-openai`

        return init_chat_model(f"openai:{os.environ.get('OPENAI_MODEL', 'gpt-4.1-mini')}")
    return ScriptedChatModel(messages=iter([
        run_code(FIRST_CODE, "call_1"), say_what_it_printed,
        run_code(SECOND_CODE, "call_2"), say_what_it_printed]))


def main() -> None:
    # --8<-- [start:change]
    code_tool = as_langchain_tool([list_tickets, get_customer])  # the one-line change
    agent = create_agent(model(), tools=[code_tool])
    # --8<-- [end:change]
    runs = ChildRuns()
    config = {"configurable": {"thread_id": "support-desk"}, "callbacks": [runs]}
    messages: list[Any] = []
    try:
        for question in (FIRST_QUESTION, SECOND_QUESTION):
            print(f"\n=== user: {question}")
            state = agent.invoke({"messages": [*messages, ("user", question)]}, config)
            new = state["messages"][len(messages) + 1:]
            for message in new:
                for call in getattr(message, "tool_calls", None) or ():
                    print(f"--- the model's code ---\n{call['args']['code']}")
                if isinstance(message, ToolMessage):
                    print(f"--- what it read back ({message.status}) ---\n{message.content}")
            if runs.lines:
                print("--- the callbacks saw ---", *runs.lines, sep="\n  ")
            runs.lines.clear()
            print(f"=== assistant: {new[-1].content}")
            messages = state["messages"]
    finally:
        code_tool.close()


if __name__ == "__main__":
    main()
