"""What the upstream model reads: the tools as Python functions, and the conversation as text.

The model has no tool calling, so everything tool-shaped in the client's history becomes
text: its earlier calls as the Python block it could have written, their results as a user
message. The model sees one consistent story: it writes code, and results come back.
"""

from __future__ import annotations

import json
import keyword
from collections.abc import Mapping
from typing import Any

from ..prompt import with_catalog
from ..tools import ToolRegistry, guest_spec, python_name

__all__ = ["NEED_CODE", "calls_as_code", "failed_code", "guide", "history", "text_of"]

_GUIDE = """\
You can use tools, and you call them by writing Python. Each tool listed below is a Python
function. To call tools, reply with a fenced code block that starts with ```python and ends
with ```, for example:

```python
{example}
```

The calls in your block are made for you and their results come back to you in the next
message. A block cannot use the results of its own calls (inside it every call returns None):
make the calls you need now and read the results when they arrive.
{parallel}
Pass arguments by keyword, as the signatures below show. When you can answer without calling
a tool, reply in plain text with no code block."""

_PARALLEL = ("Several calls in one block, or a loop calling a tool once per item, are fine:\n"
             "they all run.")
_ONE_CALL = "Make one call per reply: only the first call of a block runs."

NEED_CODE = ("You must call a tool now: reply with a ```python block that calls one of the "
             "tools.")
_RESULTS_HEAD = "Results of your tool calls:"
_RESULTS_TAIL = ("Answer in plain text if you can now; otherwise call more tools in a "
                 "```python block.")


def guide(registry: ToolRegistry, parallel: bool = True, budget_chars: int = 24_000) -> str:
    """The system prompt part: how to call tools with code, then their signatures."""
    first = next(iter(registry), None)
    example = f"{first.python_name}(...)" if first is not None else "tool_name(...)"
    text = _GUIDE.format(example=example, parallel=_PARALLEL if parallel else _ONE_CALL)
    return with_catalog(text, registry, budget_chars)


def text_of(content: Any) -> str:
    """A message's text: a string, or the text of its content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text") or p.get("refusal") or "") for p in content
                       if isinstance(p, Mapping))
    return "" if content is None else str(content)


def _call_line(call: Any, registry: ToolRegistry | None) -> str:
    """One call as the line of Python that makes it, with the parameter names the model's
    stubs use (`class_=` for the key "class")."""
    function = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(function, Mapping):
        return "# (a tool call without a function)"
    name = str(function.get("name") or "")
    tool = registry.get(name) if registry is not None else None
    shown = tool.qualified_name if tool is not None else python_name(name)
    raw = function.get("arguments")
    try:
        arguments = json.loads(raw) if isinstance(raw, str) and raw.strip() else (raw or {})
    except ValueError:
        return f"{shown}(**{raw!r})  # arguments that were not valid JSON"
    if not isinstance(arguments, Mapping):
        return f"{shown}(**{arguments!r})"
    names = {key: param for param, key in guest_spec(tool)["keys"].items()} if tool else {}
    named = {names.get(k, k): v for k, v in arguments.items()}
    if all(isinstance(k, str) and k.isidentifier() and not keyword.iskeyword(k) for k in named):
        return f"{shown}({', '.join(f'{k}={v!r}' for k, v in named.items())})"
    return f"{shown}(**{dict(arguments)!r})"


def calls_as_code(calls: list[Any], registry: ToolRegistry | None) -> str:
    """Tool calls as the Python lines that make them."""
    return "\n".join(_call_line(call, registry) for call in calls)


def _assistant(message: Mapping[str, Any], registry: ToolRegistry | None,
               lines: dict[str, str]) -> dict[str, Any]:
    text = text_of(message.get("content")).strip()
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls:
        for call in calls:
            if isinstance(call, Mapping) and call.get("id"):
                lines[str(call["id"])] = _call_line(call, registry)
        code = f"```python\n{calls_as_code(calls, registry)}\n```"
        text = f"{text}\n\n{code}" if text else code
    return {"role": "assistant", "content": text}


def _results(results: list[Mapping[str, Any]], lines: dict[str, str]) -> dict[str, Any]:
    parts = [_RESULTS_HEAD]
    for result in results:
        line = lines.get(str(result.get("tool_call_id")))
        head = f"{line} returned:" if line else f"A call ({result.get('name') or 'tool'}) " \
            "returned:"
        parts.append(f"{head}\n{text_of(result.get('content'))}")
    parts.append(_RESULTS_TAIL)
    return {"role": "user", "content": "\n\n".join(parts)}


def _merged(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Adjacent plain-text user messages as one (many chat templates insist on alternation)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        last = out[-1] if out else None
        if last is not None and last["role"] == message["role"] == "user" \
                and isinstance(last.get("content"), str) and isinstance(message["content"], str):
            out[-1] = {"role": "user", "content": f"{last['content']}\n\n{message['content']}"}
        else:
            out.append(message)
    return out


def history(messages: list[dict[str, Any]], registry: ToolRegistry | None,
            instructions: str | None) -> list[dict[str, Any]]:
    """The client's messages as a text-only conversation, with `instructions` joined to the
    leading system messages (developer messages count as system ones)."""
    system: list[str] = []
    out: list[dict[str, Any]] = []
    results: list[Mapping[str, Any]] = []
    lines: dict[str, str] = {}
    for message in messages:
        role = message["role"]
        if role in ("tool", "function"):
            results.append(message)
            continue
        if results:
            out.append(_results(results, lines))
            results = []
        if role in ("system", "developer"):
            if out:  # a later system message stays where it was
                out.append({"role": "system", "content": text_of(message.get("content"))})
            else:
                system.append(text_of(message.get("content")))
        elif role == "assistant":
            out.append(_assistant(message, registry, lines))
        else:
            out.append({"role": role, "content": message.get("content")})
    if results:
        out.append(_results(results, lines))
    head = "\n\n".join(p for p in (*system, instructions) if p)
    return _merged(([{"role": "system", "content": head}] if head else []) + out)


def failed_code(error: str) -> str:
    """The repair request: the code did not run, none of its calls were made."""
    return (f"Your code could not run, so none of its tool calls were made:\n\n{error.rstrip()}"
            "\n\nReply with a corrected ```python block that makes all the calls you need.")

