"""CrewAI with code mode: a crew agent's tools behind one `run_python` tool.

    .venv-crewai/bin/python examples/crewai_example.py

CrewAI needs its own environment (`make setup` makes .venv-crewai; see the README). Offline, a
scripted `BaseLLM` plays the agent's model; with OPENAI_API_KEY set, a real model does
(OPENAI_MODEL picks which). Either way the store's tools run for real, through CrewAI's own
tool-call path: a before-tool-call hook sees every call the code makes, and the follow-up task,
kicked off on the same crew, uses variables the first answer's code left behind.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

from crewai import LLM, Agent, Crew, Task
from crewai.hooks import register_before_tool_call_hook
from crewai.llms.base_llm import BaseLLM
from store_question import FIRST_CODE, FOLLOW_UP, QUESTION, SECOND_CODE, TOOLS
from tooliscode.integrations.crewai import code_mode


class ScriptedLLM(BaseLLM):
    """Calls run_python with the prepared code for each task, then answers with what it
    printed."""

    codes: list[str] = [FIRST_CODE, SECOND_CODE]

    def supports_function_calling(self) -> bool:
        return True

    def call(self, messages: Any, tools: Any = None, callbacks: Any = None,
             available_functions: Any = None, from_task: Any = None, from_agent: Any = None,
             response_model: Any = None) -> Any:
        if messages[-1].get("role") == "tool":
            return f"Here is what I found: {messages[-1]['content']}"
        return [{"id": f"call-{len(self.codes)}", "type": "function", "function": {
            "name": "run_python", "arguments": json.dumps({"code": self.codes.pop(0)})}}]


def model() -> Any:
    if os.environ.get("OPENAI_API_KEY"):
        return LLM(model=os.environ.get("OPENAI_MODEL", "gpt-4.1-mini"))
    return ScriptedLLM(model="scripted")


def show_call(context: Any) -> None:
    """A CrewAI hook: it sees the code tool's call and each call its code makes."""
    if context.tool_name != "run_python":  # gathered calls come from several threads at once:
        sys.stdout.write(f"  hook: {context.tool_name}({context.tool_input}) in the task "  # one
                         f"{context.task.description[:24]!r}...\n")  # write a line, not two
        sys.stdout.flush()


def main() -> None:
    register_before_tool_call_hook(show_call)
    # --8<-- [start:change]
    analyst = Agent(role="Store analyst", goal="Answer questions about the store",
                    backstory="You know the store's data.", llm=model())
    code = code_mode(analyst, TOOLS)  # the change: the store's tools, as one code tool
    # --8<-- [end:change]
    crew = Crew(agents=[analyst], tasks=[])
    try:
        for question in (QUESTION, FOLLOW_UP):
            print(f"\n=== user: {question}")
            crew.tasks = [Task(description=question, expected_output="A short answer.",
                               agent=analyst)]
            print(f"=== crew: {crew.kickoff().raw}")
    finally:
        code.close()


if __name__ == "__main__":
    main()
