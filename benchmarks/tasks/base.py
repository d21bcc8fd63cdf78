"""What a token-economy task is: a question, a tool collection, and a script for each way of
calling tools, checked against an answer computed directly on the host."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from tooliscode.openai.testing import ScriptedReply, call, say

LARGE = "large-result"
"""Tool results far bigger than the answer: the target is >= 90% fewer context tokens."""
MULTI = "multi-step"
"""Dependent calls: the target is >= 30% fewer model round trips."""
MANY = "many-tools"
SMALL = "small"


class Result(NamedTuple):
    """One tool call the plain model made and the result it read back."""

    name: str
    arguments: dict[str, Any]
    value: Any


Seen = list[list[Result]]
"""The results the plain model has read, one list per earlier turn of its own."""


@dataclass(frozen=True)
class Task:
    """One question over one tool collection, scripted for plain tool calling and code mode.

    The plain script is a function of the results in the request it receives, so its answer
    comes from what its transcript really holds. The code cells run in the sandbox; the last
    one calls `final_answer(...)`, unless `code_reply` turns the last printed output into
    the model's text answer (as a model does when it wants to phrase the answer itself).
    """

    name: str
    prompt: str
    tools: Sequence[Any]
    plain: Callable[[Seen], ScriptedReply]
    cells: Sequence[str]
    expected: Any
    kinds: frozenset[str]
    callback: Callable[[str, str, dict[str, Any]], Any] | None = None
    code_reply: Callable[[str], Any] | None = None
    code_must_read: Sequence[str] = ()
    """Names the code model must have read (say, from `search_tools`) before it uses them."""


def answer(value: Any) -> ScriptedReply:
    """The model's final text: the answer as JSON, so it can be checked."""
    return say(json.dumps(value))


def parallel(calls: list[tuple[str, dict[str, Any]]]) -> ScriptedReply:
    """One turn making all these independent calls at once, plain tool calling's best case."""
    return call(*calls[0], *calls[1:])


def decode(text: str) -> Any:
    """A tool output as the plain model reads it: JSON data, else the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def received(items: list[dict[str, Any]]) -> Seen:
    """Group the calls and results of a Responses input by the model turn that made them."""
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    turns: Seen = []
    previous = None
    for item in items:
        kind = item.get("type")
        if kind == "function_call":
            if previous != "function_call":
                turns.append([])
            calls[item["call_id"]] = (item["name"], json.loads(item["arguments"]))
        elif kind == "function_call_output":
            name, arguments = calls[item["call_id"]]
            turns[-1].append(Result(name, arguments, decode(item["output"])))
        previous = kind
    return turns


def values(seen: Seen, name: str) -> list[Any]:
    """Every result of tool `name` read so far, in order."""
    return [r.value for turn in seen for r in turn if r.name == name]
