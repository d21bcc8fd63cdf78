"""Running a task both ways through the real loop, and counting what each model call was sent.

Both sides go through `tooliscode.openai._loop.run_conversation` with the real `openai` client
against `ScriptedServer`: the tools really run, the loop builds the history as it would for a real
model, and the tokens are counted from the request bodies the server received.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import openai
from tooliscode import ToolIsCode, ToolOutput, ToolRegistry
from tooliscode.openai._loop import LoopResult, run_conversation
from tooliscode.openai.testing import ScriptedReply, ScriptedRequest, ScriptedServer, code, say
from tooliscode.prompt._tokens import ContextCounter

from .base import Task, answer, decode, received

MAX_ROUND_TRIPS = 60
"""Room for the paginated task's plain side: a model turn per page."""


@dataclass
class PlainTools:
    """Standard tool calling, shaped like `ToolIsCode` so the same loop drives it: every
    tool's schema goes into each request and every result, whole, into the history."""

    tools: Sequence[Any]
    callback: Callable[[str, str, dict[str, Any]], Any] | None = None
    api: str = "responses"
    instructions: str = ""

    def __post_init__(self) -> None:
        self.registry = ToolRegistry(self.tools)

    def tools_for(self, api: str) -> list[dict[str, Any]]:
        return [{"type": "function", "name": t.name, "description": t.description,
                 "parameters": t.parameters} for t in self.registry]

    def tool_call(self, item: dict[str, Any], key: object = None) -> ToolOutput:
        tool, call_id = self.registry.get(item["name"]), item["call_id"]
        try:
            arguments = json.loads(item["arguments"])
            if tool is None:
                raise LookupError(f"no tool {item['name']!r}")
            value = (tool.invoke(arguments) if tool.function is not None
                     else self.callback(call_id, tool.name, arguments))
            output = value if isinstance(value, str) else json.dumps(value)
        except Exception as exc:  # noqa: BLE001 - a failed call is a result the model reads
            output = f"[error] {type(exc).__name__}: {exc}"
        return ToolOutput({"type": "function_call_output", "call_id": call_id, "output": output})


@dataclass
class Transcript:
    """One side's run: the input tokens of each model call, and its checked answer."""

    inputs: list[int]
    answer: Any
    correct: bool
    problems: list[str] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return sum(self.inputs)

    @property
    def round_trips(self) -> int:
        return len(self.inputs)

    @property
    def final_context(self) -> int:
        return self.inputs[-1]


@dataclass
class Outcome:
    """A task's two runs, side by side."""

    task: Task
    plain: Transcript
    code: Transcript

    @property
    def tokens_saved(self) -> float:
        return _fewer(self.plain.tokens, self.code.tokens)

    @property
    def trips_saved(self) -> float:
        return _fewer(self.plain.round_trips, self.code.round_trips)


def _fewer(plain: float, ours: float) -> float:
    return 1 - ours / plain if plain else 0.0


def run_task(task: Task) -> Outcome:
    plain_result, plain_requests = _converse(PlainTools(task.tools, task.callback), task,
                                             lambda r: task.plain(received(r.body["input"])))
    with ToolIsCode(task.tools, task.callback) as tic:
        code_result, code_requests = _converse(tic, task, _code_model(task))
    expected = json.loads(json.dumps(task.expected))  # tuples as lists, as JSON gives back
    counter = ContextCounter()
    plain_answer = decode(plain_result.text)
    code_answer = code_result.output if code_result.has_final else decode(code_result.text)
    failed = [o.text[:300] for o in code_result.outputs
              if o.result is not None and not o.result.ok]
    plain = Transcript([counter.request(b) for b in plain_requests], plain_answer,
                       plain_answer == expected)
    ours = Transcript([counter.request(b) for b in code_requests], code_answer,
                      code_answer == expected and not failed, failed)
    return Outcome(task, plain, ours)


def _converse(toolset: Any, task: Task,
              script: Callable[[ScriptedRequest], ScriptedReply]) -> tuple[LoopResult, list[dict]]:
    with ScriptedServer(script) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="offline", max_retries=0)
        result = run_conversation(client, task.prompt, toolset=toolset, model="scripted",
                                  max_iterations=MAX_ROUND_TRIPS)
    return result, [r.body for r in server.requests]


def _code_model(task: Task) -> Callable[[ScriptedRequest], ScriptedReply]:
    """The code-mode model: one prepared cell per turn, then (without final_answer) a text
    answer made from what the last cell printed."""
    def reply(request: ScriptedRequest) -> ScriptedReply:
        if request.index == 1:
            read = "\n".join(request.tool_outputs())
            missing = [name for name in task.code_must_read if name not in read]
            if missing:  # it could not have known these names: no honest next cell
                return say(f"I could not find {', '.join(missing)}.")
        if request.index < len(task.cells):
            return code(task.cells[request.index])
        if task.code_reply is not None:
            return answer(task.code_reply(request.tool_outputs()[-1]))
        return say("null")
    return reply
