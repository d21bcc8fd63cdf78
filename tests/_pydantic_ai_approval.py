"""Tools that need a person's decision, counted where they run, for the approval tests of the
PydanticAI adapter; run as a script it is the process that continues a paused run:

    python tests/_pydantic_ai_approval.py REDIS_URL FOLDER RESUMES

It reads the message history and the pending requests from FOLDER (JSON), answers each
pending call as `answer` does and resumes the run on a conversation kept in Redis, up to
RESUMES times in this process (saving what pauses next back to FOLDER), and prints one JSON
line: the output, who each pause waited for, the calls that ran here and the emails sent.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter
from pydantic_ai import Agent, RunContext
from pydantic_ai.exceptions import ApprovalRequired, CallDeferred
from pydantic_ai.messages import ModelMessagesTypeAdapter
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.toolsets import FunctionToolset

sys.path.insert(0, str(Path(__file__).parent))
from _pydantic_ai_script import Script  # noqa: E402

RAN: Counter[str] = Counter()
"""Calls that ran, by tool (a call that only asked for a decision is not counted)."""
SENT: list[tuple[str, str, Any]] = []
"""Each email sent: to, body, and the metadata its approval carried."""
ORDERS = [{"id": 1, "customer": "ann@example.com", "late": True},
          {"id": 2, "customer": "bob@example.com", "late": True},
          {"id": 3, "customer": "cid@example.com", "late": True},
          {"id": 4, "customer": "dee@example.com", "late": False}]
REQUESTS = TypeAdapter(DeferredToolRequests)

tools: FunctionToolset[None] = FunctionToolset()


@tools.tool_plain
def find_late_orders() -> list[dict]:
    """Orders past their due date."""
    RAN["find_late_orders"] += 1
    return [o for o in ORDERS if o["late"]]


@tools.tool(requires_approval=True)
def send_email(ctx: RunContext[None], to: str, body: str) -> str:
    """Email a customer (a person approves each one)."""
    assert ctx.tool_call_approved, "a requires_approval tool runs only approved"
    RAN["send_email"] += 1
    SENT.append((to, body, ctx.tool_call_metadata))
    return f"sent to {to}"


@tools.tool_plain
def ping(n: int) -> int:
    """An ungated call."""
    RAN["ping"] += 1
    return n


@tools.tool
def refund(ctx: RunContext[None], order_id: int, amount: float) -> str:
    """Refund an order; over 100 a person approves it."""
    if amount > 100 and not ctx.tool_call_approved:
        raise ApprovalRequired(metadata={"reason": f"{amount:g} is over the limit of 100"})
    RAN["refund"] += 1
    return f"refunded {amount:g} on order {order_id}"


@tools.tool_plain
def ask_manager(question: str) -> str:
    """A manager answers, outside the agent."""
    raise CallDeferred(metadata={"queue": "managers"})


EMAILS = """\
sent = []
for order in find_late_orders():
    try:
        sent.append(send_email(to=order['customer'], body=f"order {order['id']} is late"))
    except ToolError as error:
        sent.append(f"not sent: {error}")
print(sent)
"""
EMAILS_DONE = ("answer: ['sent to ann@example.com', 'not sent: do not email Bob', "
               "'sent to cid@example.com']")
"""What the run answers once each email is decided as `answer` decides."""


def answer(part: Any) -> bool | ToolApproved | ToolDenied:
    """A person's decision on one email: Ann's approved, Bob's denied, Cid's edited."""
    to = part.args_as_dict()["to"]
    if to.startswith("bob"):
        return ToolDenied("do not email Bob")
    if to.startswith("cid"):
        return ToolApproved(override_args={**part.args_as_dict(), "body": "edited"})
    return True


def results(requests: DeferredToolRequests) -> DeferredToolResults:
    return requests.build_results(
        approvals={p.tool_call_id: answer(p) for p in requests.approvals},
        metadata={p.tool_call_id: {"by": "alice"} for p in requests.approvals})


def save(folder: Path, result: Any) -> None:
    (folder / "history.json").write_bytes(ModelMessagesTypeAdapter.dump_json(
        result.all_messages()))
    if isinstance(result.output, DeferredToolRequests):
        (folder / "requests.json").write_bytes(REQUESTS.dump_json(result.output))


async def main(redis_url: str, folder: Path, resumes: int) -> None:
    from tooliscode.durable import RedisStore
    from tooliscode.integrations.pydantic_ai import CodeMode

    code_mode = CodeMode(scope="conversation", store=RedisStore(redis_url))
    agent = Agent(Script().model, toolsets=[tools], capabilities=[code_mode],
                  output_type=[str, DeferredToolRequests])
    history = ModelMessagesTypeAdapter.validate_json((folder / "history.json").read_bytes())
    output: Any = REQUESTS.validate_json((folder / "requests.json").read_bytes())
    paused = []
    try:
        for _ in range(resumes):
            result = await agent.run(message_history=history,
                                     deferred_tool_results=results(output))
            history, output = result.all_messages(), result.output
            save(folder, result)
            if not isinstance(output, DeferredToolRequests):
                break
            paused.append([p.args_as_dict()["to"] for p in output.approvals])
    finally:
        code_mode.close()
    print(json.dumps({"output": output if isinstance(output, str) else None, "paused": paused,
                      "ran": RAN, "sent": [list(s) for s in SENT]}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])))
