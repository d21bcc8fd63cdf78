"""Multi-turn conversations over a stateful backend: several user turns, each answered and
checked, with the backend's state carried from turn to turn.

Both sides run through the real loop as the single-question tasks do, each against a backend
of its own, continuing from the history the loop returned with the next user message. The
plain model's script reads what its transcript holds: this turn's results and, from earlier
turns, results and its own answers. The code model writes one cell per model call; a cell
that ends in `final_answer(...)` ends the turn, otherwise the model answers from what the last
cell printed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import openai
from tooliscode import ToolIsCode
from tooliscode.openai import run_conversation
from tooliscode.openai.testing import ScriptedReply, ScriptedRequest, ScriptedServer, code
from tooliscode.prompt import ContextCounter

from .base import Result, answer, decode, parallel
from .transcript import MAX_ROUND_TRIPS, PlainTools, Transcript

CONVERSATION = "multi-turn"
"""Several user turns over a stateful backend with small results: the target is >= 75% fewer
input tokens than plain tool calling, and fewer model calls."""

__all__ = ["CONVERSATION", "Conversation", "Seen", "Turn", "answer", "parallel", "prop", "run"]


def prop(kind: str, description: str, **more: Any) -> dict[str, Any]:
    """One property of a tool's arguments schema."""
    return {"type": kind, "description": description, **more}


@dataclass
class Seen:
    """What the plain model has read when it is asked: per user turn, its model turns'
    results; and its own earlier answers."""

    turns: list[list[list[Result]]]
    answers: list[str]

    @property
    def step(self) -> int:
        """How many model turns of the current user turn called tools so far."""
        return len(self.turns[-1])

    def now(self, name: str) -> list[Result]:
        """This user turn's results of tool `name`, in order."""
        return [r for turn in self.turns[-1] for r in turn if r.name == name]

    def last(self, name: str) -> Any:
        """The value of the last call of `name` in this user turn."""
        return self.now(name)[-1].value

    def before(self, name: str) -> list[Any]:
        """Values of `name` from earlier user turns, in order."""
        return [r.value for turns in self.turns[:-1] for turn in turns for r in turn
                if r.name == name]


@dataclass(frozen=True)
class Turn:
    """One user message, and how each side answers it."""

    prompt: str
    plain: Callable[[Seen], ScriptedReply]
    cells: Sequence[str]
    expected: Any
    code_reply: Callable[[str], Any] | None = None
    """Turns the last cell's output into the answer, when no cell called `final_answer`: the
    output of this turn's last cell, or with no cells, of the last cell of an earlier turn."""


@dataclass(frozen=True)
class Conversation:
    name: str
    backend: Callable[[], Any]
    tools: Callable[[Any], list[Any]]
    turns: Sequence[Turn]
    kinds: frozenset[str] = field(default_factory=lambda: frozenset({CONVERSATION}))


def transcript_seen(items: list[dict[str, Any]]) -> Seen:
    """What the plain model has read, from the input of a request it received."""
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    turns: list[list[list[Result]]] = []
    answers: list[str] = []
    previous = None
    for item in items:
        kind, role = item.get("type"), item.get("role")
        if role == "user":
            turns.append([])
        elif role == "assistant":
            answers.append(_text(item.get("content")))
        elif kind == "function_call":
            if previous != "function_call":
                turns[-1].append([])
            calls[item["call_id"]] = (item["name"], json.loads(item["arguments"]))
        elif kind == "function_call_output":
            name, arguments = calls[item["call_id"]]
            turns[-1][-1].append(Result(name, arguments, decode(item["output"])))
        previous = kind
    return Seen(turns, answers)


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def _position(items: list[dict[str, Any]]) -> tuple[int, int]:
    """(user turn, cells already run in it) of a code-mode request."""
    user = [i for i, item in enumerate(items) if item.get("role") == "user"]
    cells = sum(1 for item in items[user[-1]:] if item.get("type") == "function_call")
    return len(user) - 1, cells


def _code_model(conversation: Conversation) -> Callable[[ScriptedRequest], ScriptedReply]:
    def reply(request: ScriptedRequest) -> ScriptedReply:
        turn_index, ran = _position(request.body["input"])
        turn = conversation.turns[turn_index]
        if ran < len(turn.cells):
            return code(turn.cells[ran])
        outputs = [i["output"] for i in request.body["input"]
                   if i.get("type") == "function_call_output"]
        output = outputs[-1] if outputs else ""
        return answer(turn.code_reply(output) if turn.code_reply else decode(output))
    return reply


def _plain_model(conversation: Conversation) -> Callable[[ScriptedRequest], ScriptedReply]:
    def reply(request: ScriptedRequest) -> ScriptedReply:
        seen = transcript_seen(request.body["input"])
        return conversation.turns[len(seen.turns) - 1].plain(seen)
    return reply


def _converse(toolset: Any, conversation: Conversation,
              script: Callable[[ScriptedRequest], ScriptedReply]) -> tuple[list[Any], list[dict]]:
    """Every user turn in order; each turn's answer, and every request the model received."""
    answers: list[Any] = []
    history: list[Any] = []
    with ScriptedServer(script) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="offline", max_retries=0)
        for turn in conversation.turns:
            history = [*history, {"role": "user", "content": turn.prompt}]
            result = run_conversation(client, history, toolset=toolset, model="scripted",
                                      max_iterations=MAX_ROUND_TRIPS)
            answers.append(result.output if result.has_final else decode(result.text))
            history = result.history
    return answers, [r.body for r in server.requests]


@dataclass
class Outcome:
    """A conversation's two runs, side by side (the shape of a task's `Outcome`)."""

    task: Conversation
    plain: Transcript
    code: Transcript

    @property
    def tokens_saved(self) -> float:
        return 1 - self.code.tokens / self.plain.tokens

    @property
    def trips_saved(self) -> float:
        return 1 - self.code.round_trips / self.plain.round_trips


def run(conversation: Conversation) -> Outcome:
    plain_backend = conversation.backend()
    plain_answers, plain_requests = _converse(
        PlainTools(conversation.tools(plain_backend)), conversation, _plain_model(conversation))
    code_backend = conversation.backend()
    with ToolIsCode(conversation.tools(code_backend)) as tic:
        code_answers, code_requests = _converse(tic, conversation, _code_model(conversation))
        failed = [o for o in _failed_cells(code_requests)]
    expected = json.loads(json.dumps([t.expected for t in conversation.turns]))
    counter = ContextCounter()
    plain = Transcript([counter.request(b) for b in plain_requests], plain_answers,
                       plain_answers == expected, _wrong(plain_answers, expected))
    ours = Transcript([counter.request(b) for b in code_requests], code_answers,
                      code_answers == expected and not failed,
                      failed + _wrong(code_answers, expected))
    return Outcome(conversation, plain, ours)


def _wrong(answers: list[Any], expected: list[Any]) -> list[str]:
    return [f"turn {i + 1}: expected {e!r}, got {a!r}"
            for i, (a, e) in enumerate(zip(answers, expected)) if a != e]


def _failed_cells(requests: list[dict]) -> list[str]:
    """Outputs of cells that failed, from the last request (it holds the whole history)."""
    items = requests[-1]["input"] if requests else []
    return [str(i.get("output"))[:300] for i in items
            if i.get("type") == "function_call_output" and "[error]" in str(i.get("output"))]
