"""One tool call from sandboxed code through the CrewAI adapter, split as bench_peers.py splits
the other adapters' calls; run in CrewAI's own environment (.venv-crewai, see the Makefile).

Prints one JSON line: best-of-rounds seconds per call for "sandbox" (the function registered
straight in a Session, sync route), "crewai" (through `as_crewai_tool`), "dispatch" (CrewAI's
own `execute_single_native_tool_call` with the tool's `run`, no sandbox) and "direct" (the
sandbox calling that dispatch straight, as the adapter does but without it).

Run: .venv-crewai/bin/python benchmarks/peers/crewai_calls.py [calls] [rounds]
"""

from __future__ import annotations

import json
import os
import sys
import time

os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

from crewai.events.event_listener import event_listener  # noqa: E402
from crewai.tools import tool  # noqa: E402
from crewai.utilities.agent_utils import execute_single_native_tool_call  # noqa: E402
from tooliscode import Session, Tool, as_tool  # noqa: E402
from tooliscode.integrations.crewai import as_crewai_tool  # noqa: E402

LOOP = ("import time\nt = time.perf_counter()\nfor i in range({n}):\n"
        "    get_order(order_id=i)\nprint((time.perf_counter() - t) / {n})")


def get_order(order_id: int) -> dict:
    """One small order."""
    return {"id": order_id, "status": "paid"}


def main(n: int, rounds: int) -> None:
    # Outside a crew, CrewAI's console listener draws a panel per tool event; a crew that is
    # not verbose draws none, so neither does this.
    event_listener.formatter.verbose = False
    code = LOOP.format(n=n)
    crew_tool = tool(get_order)
    code_tool = as_crewai_tool([crew_tool], conversation="bench")

    def one_call(order_id: int, call_id: str = "c") -> object:
        """CrewAI's path for one native call; the tool's own value, as the adapter returns."""
        ran: dict[str, object] = {}

        def run(**kwargs: object) -> object:
            ran["value"] = crew_tool.run(**kwargs)
            return ran["value"]

        execute_single_native_tool_call(
            {"id": call_id, "function": {"name": "get_order", "arguments": {"order_id": order_id}}},
            available_functions={"get_order": run}, original_tools=[crew_tool],
            structured_tools=None, tools_handler=None, agent=None, task=None, crew=None,
            event_source=code_tool)
        return ran.get("value")

    def dispatch() -> float:
        start = time.perf_counter()
        for i in range(n):
            one_call(i, f"c{i}")
        return (time.perf_counter() - start) / n

    direct = Tool(name="get_order", parameters=as_tool(get_order).parameters,
                  function=one_call, validate=None)
    with Session([get_order]) as session, Session([direct]) as straight:
        probes = {"sandbox": lambda: float(session.run(code).stdout.split()[-1]),
                  "crewai": lambda: float(code_tool.run(code=code).split()[-1]),
                  "dispatch": dispatch,
                  "direct": lambda: float(straight.run(code).stdout.split()[-1])}
        best = {name: float("inf") for name in probes}
        for round_ in range(rounds + 1):
            for name, probe in probes.items():
                seconds = probe()
                if round_:  # the first round warms up
                    best[name] = min(best[name], seconds)
    code_tool.close()
    print(json.dumps(best))


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]) if len(sys.argv) > 2 else (200, 9))
