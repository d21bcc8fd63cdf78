"""Running the model's code where every tool only records that it was called.

The real tools live with the client, so the sandbox runs the code against stand-ins: the
guest checks each call's arguments against the tool's schema, as it always does, and the
host notes the call and returns None. The notes become the response's `tool_calls`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..codetool import CodeTool, Toolbox
from ..engine import Cancel, Limits
from ..errors import ToolIsCodeError
from ..tools import ToolRegistry
from ._disconnect import gone_check
from ._shapes import call_id

__all__ = ["RECORDING_LIMITS", "Recorded", "record_calls", "recording_tool", "stand_in"]

RECORDING_LIMITS = Limits(timeout_s=10.0, tool_calls=64)
"""The recording sandbox only makes calls, so it needs little time; the call limit bounds
how many tool calls one reply may produce."""

_MISTAKES = frozenset({"ToolArgumentError", "ToolError", "NameError", "SyntaxError",
                       "IndentationError", "TabError"})
"""Errors that mean a call was wrong or never happened (bad arguments, no such tool, code that
does not parse, the call limit). Others, after calls were made, come from code that used a
call's result, which is None here: the calls themselves stand."""


@dataclass
class Recorded:
    """What the code did."""

    calls: list[dict[str, Any]] = field(default_factory=list)
    """Chat Completions tool calls, in the order the code made them."""
    error: str | None = None
    """Why the code has to be fixed: set when a call was wrong or the code could not run.
    Code that calls no tool and fails otherwise is not an attempt at calling tools (a snippet
    the model shows the user, say), so it has no error here."""


def recording_tool(limits: Limits = RECORDING_LIMITS) -> CodeTool:
    """Where requests run their code: one sandbox per request, the next one started ahead."""
    return CodeTool(limits=limits, keep_spare=True)


def stand_in(**_: Any) -> None:
    """The function of every tool here: the call is recorded by the session; the result,
    which only the client can produce, comes later."""


def _as_tool_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id(), "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}}


def record_calls(code: CodeTool, registry: ToolRegistry, cells: list[str],
                 cancel: Cancel | None = None) -> Recorded:
    """Run `cells` in a sandbox of their own over `registry`, whose tools are `stand_in`s.

    The sandbox is `code`'s next run sandbox: usually started already, with these tools,
    when the previous request ended (a client sends the same tools every time). `cancel`
    stops the cell running when the client goes away (`ClientGone` is raised then).
    """
    recorded = Recorded()
    tools = Toolbox.of(registry)
    sandbox = code.take()
    try:
        for cell in cells:
            reply = code.run_code(cell, sandbox=sandbox, tools=tools, cancel=cancel)
            gone_check(cancel)
            result = reply.result
            if result is None:  # the sandbox failed, not the code: a server error
                raise ToolIsCodeError(reply.text)
            recorded.calls += [_as_tool_call(c.name, c.arguments) for c in result.tool_calls
                               if c.ok]
            if not result.ok:
                if result.error_type in _MISTAKES or result.restarted or result.rolled_back:
                    recorded.error = result.error or "the code failed"
                break
    finally:
        # An interpreter takes about 0.1 s to wind down: the answer need not wait for it.
        code.finish(sandbox, tools)
    return recorded
