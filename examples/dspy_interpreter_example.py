"""DSPy's code-running modules on tooliscode's sandbox: `dspy.RLM` here (`dspy.CodeAct` and
`dspy.ProgramOfThought` take the same `interpreter_factory`).

    python examples/dspy_interpreter_example.py

DSPy runs such code in Deno with Pyodide by default: a separate binary, and Pyodide fetched on
first use. `SandboxInterpreter` runs it in CPython on WebAssembly inside this process, with the
module's tools (the store's, and RLM's `llm_query`) called on the host. Offline, DSPy's own
`DummyLM` plays the model; with OPENAI_API_KEY set, a real model does.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import dspy
from dspy.utils import DummyLM
from store_question import FIRST_CODE, QUESTION, TOOLS
from tooliscode.integrations.dspy import SandboxInterpreter

SUBMIT_CODE = """\
mine = sum(o["customer_id"] == top_id for o in q3)
SUBMIT(answer=f"{top['name']}: {mine} of {len(q3)} Q3 paid orders were theirs")
"""
"""The second step reads `q3`, `top` and `top_id`, which the first step's code left behind."""


def model() -> dspy.BaseLM:
    if os.environ.get("OPENAI_API_KEY"):
        return dspy.LM(f"openai/{os.environ.get('OPENAI_MODEL', 'gpt-4.1-mini')}")
    return DummyLM([{"reasoning": "Look the customer up in code.",
                     "code": f"```python\n{FIRST_CODE}```"},
                    {"reasoning": "Count their orders and submit.",
                     "code": f"```python\n{SUBMIT_CODE}```"}])


def main() -> None:
    # --8<-- [start:change]
    # every code-running module made from here on runs its code in the sandbox
    dspy.configure(lm=model(), interpreter_factory=SandboxInterpreter)
    rlm = dspy.RLM("question -> answer", tools=TOOLS, max_iters=4)
    # --8<-- [end:change]
    print(f"=== user: {QUESTION}")
    out = rlm(question=QUESTION)
    for i, step in enumerate(out.trajectory, 1):
        print(f"--- step {i}: the model's code ---\n{step['code']}")
        print(f"--- what it read back ---\n{step['output']}")
    print(f"=== answer: {out.answer}")


if __name__ == "__main__":
    main()
