"""PydanticAI with code mode: a tool that needs a person's approval, called from code.

    python examples/pydantic_ai_approval_example.py

The agent finds the late orders in code and emails each customer; `send_email` needs
approval (`requires_approval=True`). The code runs until it calls `send_email`, then the run
ends with PydanticAI's own `DeferredToolRequests`, one item per email waiting, exactly as if
the model had called `send_email` itself. A person approves one and rejects the other, and
`agent.run(..., deferred_tool_results=...)` continues the code where it stopped: the approved
email is sent, the rejected one raises `ToolError` in the code, and the orders are not looked
up again.

This happens twice: in this process, then from serialized state, as a web app would do it:
the message history goes through JSON, and a fresh agent with a fresh code tool continues the
paused code from the conversation's store (a folder here; Redis across machines).

Offline, PydanticAI's `FunctionModel` plays the assistant from a script; with OPENAI_API_KEY
set, a real model does (OPENAI_MODEL picks which).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections import Counter
from typing import Any

from pydantic import TypeAdapter
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolDenied
from pydantic_ai.toolsets import FunctionToolset
from tooliscode.durable import FolderStore
from tooliscode.integrations.pydantic_ai import CodeMode

ORDERS = [{"id": 101, "customer": "ann@example.com", "due": "2024-05-01", "shipped": None},
          {"id": 102, "customer": "bob@example.com", "due": "2024-05-03", "shipped": None},
          {"id": 103, "customer": "cyd@example.com", "due": "2024-05-04", "shipped": "2024-05-02"}]
DONE: Counter[str] = Counter()
"""What the tools did, counted where they run."""

shop: FunctionToolset[None] = FunctionToolset()


@shop.tool_plain
def find_late_orders(today: str) -> list[dict]:
    """Orders past their due date and not shipped (dates as YYYY-MM-DD)."""
    DONE["orders looked up"] += 1
    return [o for o in ORDERS if o["shipped"] is None and o["due"] < today]


@shop.tool_plain(requires_approval=True)
def send_email(to: str, subject: str, body: str) -> str:
    """Email a customer. A person approves each email before it goes."""
    DONE["emails sent"] += 1
    return f"sent to {to}"


QUESTION = "Today is 2024-05-10. Email every customer whose order is late."
MODEL_CODE = """\
import asyncio
late = find_late_orders(today="2024-05-10")
sent = await asyncio.gather(*[
    send_email(to=o["customer"], subject=f"Order {o['id']} is late",
               body=f"Sorry: order {o['id']} is late. It ships this week.")
    for o in late], return_exceptions=True)
for order, outcome in zip(late, sent):
    print(order["id"], outcome if isinstance(outcome, str) else f"not sent: {outcome}")
"""


def scripted(messages: list[Any], info: Any) -> ModelResponse:
    """Writes the code above, then answers with what it printed."""
    last = messages[-1].parts[-1]
    if last.part_kind == "tool-return":
        return ModelResponse(parts=[TextPart(f"Done:\n{last.content}")])
    return ModelResponse(parts=[ToolCallPart("run_python", {"code": MODEL_CODE})])


def model() -> object:
    if os.environ.get("OPENAI_API_KEY"):
        return f"openai:{os.environ.get('OPENAI_MODEL', 'gpt-4.1-mini')}"
    return FunctionModel(scripted)


# --8<-- [start:agent]
def make_agent(code_mode: CodeMode) -> Agent:
    return Agent(model(), toolsets=[shop], capabilities=[code_mode],
                 output_type=[str, DeferredToolRequests])
# --8<-- [end:agent]


# --8<-- [start:decide]
def decide(requests: DeferredToolRequests) -> DeferredToolResults:
    """The person: Bob's email is rejected (he was called instead), the others approved."""
    answers: dict[str, Any] = {}
    for call in requests.approvals:
        to = call.args_as_dict()["to"]
        rejected = to.startswith("bob")
        answers[call.tool_call_id] = ToolDenied("Bob was called instead") if rejected else True
        print(f"    {call.tool_name}(to={to!r}) id={call.tool_call_id}: "
              f"{'rejected' if rejected else 'approved'}")
    return requests.build_results(approvals=answers)
# --8<-- [end:decide]


async def in_this_process() -> None:
    print("=== in this process")
    code_mode = CodeMode()
    agent = make_agent(code_mode)
    try:
        # --8<-- [start:resume]
        result = await agent.run(QUESTION)
        while isinstance(result.output, DeferredToolRequests):
            print(f"--- the run paused ({DONE['orders looked up']} lookup, "
                  f"{DONE['emails sent']} emails so far)")
            result = await agent.run(message_history=result.all_messages(),
                                     deferred_tool_results=decide(result.output))
        # --8<-- [end:resume]
        print(f"=== assistant: {result.output}")
    finally:
        code_mode.close()


async def from_serialized_state(folder: str) -> None:
    print("=== from serialized state")
    requests_json = TypeAdapter(DeferredToolRequests)
    first = CodeMode(scope="conversation", store=FolderStore(folder))
    try:
        result = await make_agent(first).run(QUESTION)
    finally:
        first.close()  # the process that paused is gone
    history = ModelMessagesTypeAdapter.dump_json(result.all_messages())
    pending = requests_json.dump_json(result.output)
    print(f"--- the run paused; saved {len(history)} bytes of history and "
          f"{len(pending)} bytes of requests")

    later = CodeMode(scope="conversation", store=FolderStore(folder))  # a fresh worker
    agent = make_agent(later)
    try:
        messages = ModelMessagesTypeAdapter.validate_json(history)
        output: Any = requests_json.validate_json(pending)
        while isinstance(output, DeferredToolRequests):
            result = await agent.run(message_history=messages,
                                     deferred_tool_results=decide(output))
            messages, output = result.all_messages(), result.output
        print(f"=== assistant: {output}")
    finally:
        later.close()


async def main() -> None:
    await in_this_process()
    print(f"tools: {dict(DONE)}")
    DONE.clear()
    with tempfile.TemporaryDirectory() as folder:
        await from_serialized_state(folder)
    print(f"tools: {dict(DONE)}")


if __name__ == "__main__":
    asyncio.run(main())
