"""One tool-using request: ask the upstream, read code out of its text, turn it into calls.

A reply with code becomes `tool_calls` (the code runs against recording stand-ins). Code that
fails (bad arguments, an unknown tool, a syntax error) and, when a call is required, a reply
without one earn the model another round with what went wrong, up to `repairs` extra rounds.
Otherwise a reply that calls no tool is the answer.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from ..codetool import CodeTool
from ..engine import Cancel, Limits
from ..openai import ParsedReply, parse_reply
from ._disconnect import gone_check
from ._prompt import NEED_CODE, failed_code, guide, history, text_of
from ._recorder import RECORDING_LIMITS, Recorded, record_calls, recording_tool
from ._request import ChatRequest
from ._shapes import Answer, add_usage
from ._upstream import Upstream, UpstreamError

__all__ = ["Completer", "Round"]


@dataclass
class Round:
    """One upstream call, for the request log."""

    reply: str
    calls: int = 0
    problem: str | None = None


@dataclass
class Completer:
    """Serves tool-using requests over one upstream."""

    upstream: Upstream
    limits: Limits = RECORDING_LIMITS
    repairs: int = 1
    sandboxes: threading.BoundedSemaphore = field(
        default_factory=lambda: threading.BoundedSemaphore(8))
    """How many requests may run code at once (each holds an interpreter meanwhile)."""
    code: CodeTool = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.code_tool = recording_tool(self.limits)

    def close(self) -> None:
        """Close the interpreter started for the next request."""
        self.code_tool.close()

    def complete(self, request: ChatRequest, rounds: list[Round],
                 cancel: Cancel | None = None) -> Answer:
        """The answer to a request with tools in play; `rounds` collects what happened.
        `cancel` fires when the client goes away: the cell stops, and `ClientGone` ends
        the request (no further round)."""
        offered = request.offered()
        messages = history(request.messages, request.registry,
                           guide(offered, request.parallel))
        usage: dict[str, int] | None = None
        for attempt in range(self.repairs + 1):
            gone_check(cancel)
            reply = self.upstream.chat({**request.upstream_fields(), "model": request.model,
                                        "messages": messages, "stream": False})
            usage = add_usage(usage, reply.get("usage"))
            said = _read(reply, request.model)
            recorded = Recorded()
            if said.parsed.cells:
                with self.sandboxes:
                    recorded = record_calls(self.code_tool, offered, said.parsed.cells,
                                            cancel)
            calls = recorded.calls if request.parallel else recorded.calls[:1]
            rounds.append(Round(said.parsed.text, len(calls), recorded.error))
            last = attempt == self.repairs
            if calls and (recorded.error is None or last):
                return Answer(said.model, said.parsed.prose or None, calls,
                              reasoning=said.reasoning, finish_reason="tool_calls", usage=usage)
            retry = failed_code(recorded.error) if recorded.error is not None else (
                NEED_CODE if request.choice == "required" else None)
            if retry is None or last:
                # No call: the reply is the answer (code that calls no tool is something the
                # model shows the user, not something it does).
                return Answer(said.model, said.parsed.text, reasoning=said.reasoning,
                              finish_reason=said.finish, usage=usage)
            messages += [{"role": "assistant", "content": said.parsed.text},
                         {"role": "user", "content": retry}]
        raise AssertionError("unreachable")


@dataclass
class _Said:
    """One upstream reply, read."""

    parsed: ParsedReply
    reasoning: str | None
    model: str
    finish: str


def _read(reply: dict[str, Any], model: str) -> _Said:
    choices = reply.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise UpstreamError(502, "the upstream's answer has no choices", kind="api_error")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise UpstreamError(502, "the upstream's answer has no message", kind="api_error")
    parsed = parse_reply(text_of(message.get("content")))
    # Reasoning APIs send it apart; chat templates leave it in the text, in <think> tags.
    apart = message.get("reasoning_content") or message.get("reasoning")
    reasoning = "\n\n".join(p for p in (apart, parsed.reasoning) if isinstance(p, str) and p)
    finish = choices[0].get("finish_reason")
    return _Said(parsed, reasoning or None, str(reply.get("model") or model),
                 finish if isinstance(finish, str) else "stop")
