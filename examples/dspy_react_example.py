"""DSPy with code mode: `dspy.ReAct`'s tools behind one `run_python` tool.

    python examples/dspy_react_example.py

Offline, DSPy's own `DummyLM` plays the model, writing the prepared code for each question;
with OPENAI_API_KEY set, a real model does (OPENAI_MODEL picks which). Either way the store's
tools run for real, called by the code, and the follow-up's code uses the variables the first
answer's code left behind (the code tool keeps one interpreter).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import dspy
from dspy.utils import DummyLM
from store_question import FIRST_CODE, FOLLOW_UP, QUESTION, SECOND_CODE, TOOLS
from tooliscode.integrations.dspy import as_dspy_tool


def model() -> dspy.BaseLM:
    if os.environ.get("OPENAI_API_KEY"):
        return dspy.LM(f"openai/{os.environ.get('OPENAI_MODEL', 'gpt-4.1-mini')}")
    steps = []
    for code in (FIRST_CODE, SECOND_CODE):  # per question: run code, finish, answer
        steps += [{"next_thought": "I'll compute it in code.", "next_tool_name": "run_python",
                   "next_tool_args": {"code": code}},
                  {"next_thought": "The code printed the answer.", "next_tool_name": "finish",
                   "next_tool_args": {}},
                  {"reasoning": "It is what the code printed.",
                   "answer": "See what the code printed."}]
    return DummyLM(steps)


def main() -> None:
    # --8<-- [start:change]
    code = as_dspy_tool(TOOLS)  # the one change: tools=[code] instead of tools=TOOLS
    react = dspy.ReAct("question -> answer", tools=[code])
    # --8<-- [end:change]
    try:
        with dspy.context(lm=model()):
            for question in (QUESTION, FOLLOW_UP):
                print(f"\n=== user: {question}")
                out = react(question=question)
                steps = len([k for k in out.trajectory if k.startswith("tool_name_")])
                for i in range(steps):
                    if out.trajectory[f"tool_name_{i}"] == "run_python":
                        code_run = out.trajectory[f"tool_args_{i}"]["code"]
                        print(f"--- the model's code ---\n{code_run}")
                        print(f"--- what it read back ---\n{out.trajectory[f'observation_{i}']}")
                print(f"=== assistant: {out.answer}")
    finally:
        code.close()


if __name__ == "__main__":
    main()
