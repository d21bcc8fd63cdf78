"""smolagents with tooliscode's sandbox as the `CodeAgent`'s executor.

    python examples/smolagents_example.py

The agent, its prompts, its memory and its loop are smolagents' own; `executor=WasmExecutor()`
runs the code each step writes in CPython compiled to WebAssembly instead of smolagents' local
AST interpreter: isolated, bounded in time and memory, with variables kept between steps. The
store's 45 tools stay on the host and run for real when the code calls them. Offline, a
scripted `Model` writes the same code as `make demo`'s scripted model; with OPENAI_API_KEY
set, a real model does (OPENAI_MODEL picks which).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import store_tools as store
from demo import CELLS, PROMPT, expected_answer
from smolagents import ChatMessage, CodeAgent, MessageRole, Model, Tool
from tooliscode import Limits, as_tool
from tooliscode import Tool as Declared
from tooliscode.integrations.smolagents import WasmExecutor

_JSON = {"string", "boolean", "integer", "number", "array", "object"}


def _input(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """One JSON Schema property as a smolagents input."""
    kinds = [schema] + list(schema.get("anyOf", ()))
    found = [k.get("type") for k in kinds if k.get("type") in _JSON]
    spec = {"type": found[0] if found else "any",
            "description": schema.get("description") or name.replace("_", " ")}
    if any(k.get("type") == "null" for k in kinds):
        spec["nullable"] = True
    return spec


class StoreTool(Tool):
    """A store tool (a function, or a dict run by the store's callback) as a smolagents tool."""

    skip_forward_signature_validation = True
    output_type = "any"

    def __init__(self, declared: Declared):
        self.name, self.description = declared.name, declared.description
        properties = declared.parameters.get("properties", {})
        self.inputs = {k: _input(k, v) for k, v in properties.items()}
        self.run = declared.function or (
            lambda **args: store.callback("smolagents", declared.name, args))
        super().__init__()

    def forward(self, **arguments: Any) -> Any:
        return self.run(**arguments)


TOOLS = [StoreTool(as_tool(t)) for t in store.TOOLS]


class ScriptedModel(Model):
    """The offline model: one prepared cell per step, in smolagents' code-block format."""

    def __init__(self) -> None:
        super().__init__(model_id="scripted")
        self.step = 0

    def generate(self, messages: list[Any], stop_sequences: Any = None,
                 **kwargs: Any) -> ChatMessage:
        cell = CELLS[min(self.step, len(CELLS) - 1)]
        self.step += 1
        return ChatMessage(role=MessageRole.ASSISTANT,
                           content=f"Thought: step {self.step}.\n<code>\n{cell}\n</code>")


def model() -> Model:
    if os.environ.get("OPENAI_API_KEY"):
        from smolagents import OpenAIModel
        return OpenAIModel(model_id=os.environ.get("OPENAI_MODEL", "gpt-4.1-mini"))
    return ScriptedModel()


def main() -> int:
    # --8<-- [start:change]
    executor = WasmExecutor(limits=Limits(timeout_s=60))
    with CodeAgent(tools=TOOLS, model=model(), executor=executor,  # the one-line change
                   verbosity_level=0) as agent:
        # --8<-- [end:change]
        answer = agent.run(PROMPT)
        for step in agent.memory.steps:
            if getattr(step, "code_action", None):
                print(f"--- step {step.step_number}: the model's code ---\n{step.code_action}")
                print(f"--- what it read back ---\n{step.observations or step.error}")
        print(f"=== final answer ===\n{json.dumps(answer)}")
    if isinstance(agent.model, ScriptedModel):
        ok = answer == expected_answer()
        print(f"answer check against a direct computation: {'correct' if ok else 'WRONG'}")
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
