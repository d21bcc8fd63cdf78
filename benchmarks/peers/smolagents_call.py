"""One small tool call in smolagents' `LocalPythonExecutor`, set up as its `CodeAgent` sets it
up (the agent's own executor, given the agent's tools as a run gives them). Run in the
smolagents environment by bench_core.py; prints {"per_call_s": ...} as JSON.

Run: .bench-envs/smolagents/bin/python benchmarks/peers/smolagents_call.py [calls] [rounds]
"""

from __future__ import annotations

import json
import sys
import time

from smolagents import CodeAgent, Model, tool


@tool
def echo(x: int) -> int:
    """Returns its argument.

    Args:
        x: any integer.
    """
    return x


class _NoModel(Model):
    """The agent is never run: only its executor is used, so no model is called."""

    def generate(self, *args: object, **kwargs: object) -> object:
        raise RuntimeError("not used")


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    agent = CodeAgent(tools=[echo], model=_NoModel(model_id="none"))
    executor = agent.python_executor
    executor.send_variables(variables=agent.state)  # what a run does before its first step
    executor.send_tools({**agent.tools, **agent.managed_agents})
    code = f"for i in range({calls}):\n    echo(i)\n"
    assert executor("echo(2)").output == 2
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        executor(code)
        best = min(best, (time.perf_counter() - start) / calls)
    from importlib.metadata import version

    print(json.dumps({"per_call_s": best, "version": version("smolagents")}))


if __name__ == "__main__":
    main()
