"""A person approves the emails an agent's code sends, through the Agents SDK's own approvals.

    python examples/openai_agents_approval_example.py

The agent finds the late orders in code and emails each customer. `send_email` needs
approval (`needs_approval=True`), so each call the code makes pauses the cell, and the run
ends with a `ToolApprovalItem` naming that call, as a direct call would. The person decides
with `state.approve(item)` / `state.reject(item, rejection_message=...)`, and
`Runner.run(agent, state)` continues the cell where it stopped.

The first decision is made here, in this process. The run then pauses again; its state goes
to a file as JSON (`state.to_json()`), and a new process takes it from there
(`RunState.from_json`), the conversation's interpreter coming from a session store on disk.

Offline, the SDK's scripted model plays the assistant; with OPENAI_API_KEY set, a real model
does. Either way the tools and the approvals are real.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from agents import Agent, Runner, RunState, function_tool, set_tracing_disabled
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from tooliscode.durable import FolderStore
from tooliscode.integrations.openai_agents import CodeModeToolset

ORDERS = [
    {"id": 101, "customer": "ann@example.com", "due": "2026-11-02", "shipped": False},
    {"id": 102, "customer": "bob@example.com", "due": "2026-11-03", "shipped": False},
    {"id": 103, "customer": "cy@example.com", "due": "2026-11-20", "shipped": False},
    {"id": 104, "customer": "dee@example.com", "due": "2026-11-01", "shipped": True},
    {"id": 105, "customer": "eve@example.com", "due": "2026-11-05", "shipped": False},
]
TODAY = "2026-11-10"
SENT: list[str] = []
"""The emails this process really sent."""


@function_tool
def find_late_orders() -> list[dict]:
    """The orders past their due date that have not shipped."""
    return [o for o in ORDERS if not o["shipped"] and o["due"] < TODAY]


@function_tool(needs_approval=True)
def send_email(to: str, subject: str, body: str) -> str:
    """Email a customer. A person approves every email before it goes."""
    SENT.append(to)
    return f"sent to {to}"


MODEL_CODE = """\
results = []
for order in find_late_orders():
    try:
        send_email(to=order["customer"], subject=f"Order {order['id']} is late",
                   body=f"Sorry: order {order['id']} was due {order['due']}. It ships this week.")
        results.append(f"emailed {order['customer']}")
    except ToolError as e:
        results.append(f"did not email {order['customer']}: {e}")
print("\\n".join(results))
"""


def scripted_model(resumed: bool = False) -> ScriptedModel:
    """Writes the code above, then answers with what it printed (only answers, for a run
    resumed from its state in another process)."""

    def answer(call):
        printed = [i["output"] for i in call.input if i.get("type") == "function_call_output"]
        return [assistant_message(f"Done:\n{printed[-1]}")]

    steps = [[function_call("run_python", {"code": MODEL_CODE}, call_id="call_1")],
             ModelStep.respond(answer)]
    return ScriptedModel(steps[1:] if resumed else steps)


def support_agent(store: str, resumed: bool = False) -> tuple[Agent, CodeModeToolset]:
    real = bool(os.environ.get("OPENAI_API_KEY"))
    set_tracing_disabled(not real)  # offline, no traces to export
    # --8<-- [start:agent]
    code = CodeModeToolset([find_late_orders, send_email], conversation="ticket-7",
                           store=FolderStore(store))
    agent = Agent(name="Support", tools=code.tools,
                  instructions=code.instructions("Email every customer whose order is late."),
                  **({} if real else {"model": scripted_model(resumed)}))
    # --8<-- [end:agent]
    return agent, code


# --8<-- [start:decide]
def decide(state: RunState, who: str) -> None:
    """The person: approves each email, except to Bob, who asked not to be emailed."""
    for item in state.get_interruptions():
        to = json.loads(item.arguments)["to"]
        if to.startswith("bob"):
            state.reject(item, rejection_message="Bob asked us not to email him")
            print(f"  {who} rejects {item.tool_name} to {to} ({item.call_id})")
        else:
            state.approve(item)
            print(f"  {who} approves {item.tool_name} to {to} ({item.call_id})")
# --8<-- [end:decide]


def show(result) -> None:
    for item in result.interruptions:
        print(f"  paused: {item.tool_name}({item.arguments}) waits for approval, "
              f"call {item.call_id}")


async def first_process(store: str, state_file: Path) -> None:
    agent, code = support_agent(store)
    async with code:
        print("=== this process: the run pauses at the code's first email")
        # --8<-- [start:resume]
        result = await Runner.run(agent, "Email the customers whose orders are late.")
        show(result)
        state = result.to_state()
        decide(state, "the person")
        print("=== this process: resumed, the cell goes on to the next email")
        result = await Runner.run(agent, state)
        # --8<-- [end:resume]
        show(result)
        state_file.write_text(json.dumps(result.to_state().to_json()))
        print(f"  emails sent by this process: {SENT}")
        print("=== the paused run, as JSON, goes to a new process")


async def second_process(store: str, state_file: Path) -> None:
    agent, code = support_agent(store, resumed=True)
    async with code:
        # --8<-- [start:restore]
        state = await RunState.from_json(agent, json.loads(state_file.read_text()))
        # --8<-- [end:restore]
        print(f"  restored {len(state.get_interruptions())} pending approval(s)")
        while True:
            decide(state, "the person")
            result = await Runner.run(agent, state)
            if not result.interruptions:
                break
            show(result)
            state = result.to_state()
        print(f"  emails sent by this process: {SENT}")
        print(f"--- final answer ---\n{result.final_output}")


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--resume":
        asyncio.run(second_process(sys.argv[2], Path(sys.argv[3])))
        return
    with tempfile.TemporaryDirectory() as folder:
        store, state_file = os.path.join(folder, "store"), Path(folder) / "run_state.json"
        asyncio.run(first_process(store, state_file))
        sys.stdout.flush()
        subprocess.run([sys.executable, __file__, "--resume", store, str(state_file)],
                       check=True)


if __name__ == "__main__":
    main()
