"""Text mode: code mode for models that cannot call tools, by reading code out of their text.

    tm = TextMode([get_orders])
    messages = [{"role": "system", "content": tm.instructions}, {"role": "user", "content": q}]
    while True:
        reply = ask(messages)                       # any model, any client: text in, text out
        messages.append({"role": "assistant", "content": reply})
        turn = tm.step(reply)
        if turn.done:
            break
        messages.append({"role": "user", "content": turn.message})

The model writes ```python blocks; `step` runs them in the conversation's sandbox and says
what to send back. Reasoning sections (`<think>...</think>`) are never mined for code.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .._closing import Closing
from ..codetool import Reply
from ..engine import CellResult
from ..prompt import LLM_QUERY_NOTE, with_catalog
from ._callback import Callback
from ._toolset import ToolIsCode

__all__ = ["ParsedReply", "TextMode", "TextTurn", "extract_code", "parse_reply", "strip_think"]

_THINK_TAGS = "think|thinking|reasoning"
_THINK_BLOCK = re.compile(rf"<({_THINK_TAGS})>(.*?)</\1>\s*", re.DOTALL | re.IGNORECASE)
_THINK_OPEN = re.compile(rf"^\s*<({_THINK_TAGS})>", re.IGNORECASE)
_THINK_CLOSE = re.compile(rf"</({_THINK_TAGS})>\s*", re.IGNORECASE)
_FENCE_OPEN = re.compile(r"^([ \t]*)(`{3,}|~{3,})[ \t]*([^\s`]*)[^\n`]*$")
_TAGGED = re.compile(r"<(code|execute|python)>(.*?)</\1>", re.DOTALL | re.IGNORECASE)
_PYTHON_TAGS = frozenset({"python", "py", "python3", "py3", "ipython", "{.python}"})


@dataclass(frozen=True)
class ParsedReply:
    """A model's reply taken apart."""

    reasoning: str
    """The text of its reasoning sections (`<think>...</think>`), joined."""
    text: str
    """The reply without its reasoning sections."""
    cells: list[str]
    """The Python code blocks in `text`, in order."""
    prose: str
    """`text` without the Python code blocks: what the model said around them."""


def _split_think(text: str) -> tuple[str, str]:
    """(reasoning, the rest). An unclosed section at the start is all reasoning; a closing tag
    with no opening one (chat templates that open the section in the prompt) ends it."""
    reasoning: list[str] = []

    def keep(match: re.Match[str]) -> str:
        reasoning.append(match.group(2).strip())
        return ""

    rest = _THINK_BLOCK.sub(keep, text)
    opening = _THINK_OPEN.match(rest)
    if opening:
        reasoning.append(rest[opening.end():].strip())
        rest = ""
    else:
        closing = _THINK_CLOSE.search(rest)
        if closing:
            reasoning.insert(0, rest[:closing.start()].strip())
            rest = rest[closing.end():]
    return "\n\n".join(r for r in reasoning if r), rest.strip()


def strip_think(text: str) -> str:
    """`text` without its reasoning sections."""
    return _split_think(text.replace("\r\n", "\n"))[1]


def _is_python_tag(info: str) -> bool | None:
    """True for a Python block, None for a bare one (decided by its content), else False."""
    if not info:
        return None
    return info.lower() in _PYTHON_TAGS


def _runnable(source: str) -> bool:
    """Whether a bare block is code to run: it parses, and is not only literals (JSON, a
    list) that a model shows as data."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    data = (ast.Constant, ast.Dict, ast.List, ast.Tuple, ast.Set, ast.Name, ast.UnaryOp)
    return any(not (isinstance(node, ast.Expr) and isinstance(node.value, data))
               for node in tree.body)


def _dedent(lines: list[str], indent: str) -> str:
    """Remove the fence's own indentation (a block inside a list item) from each line."""
    return "\n".join(line[len(indent):] if line.startswith(indent) else line.lstrip()
                     for line in lines)


def _fenced(text: str) -> tuple[list[str], str]:
    """The Python blocks fenced with ``` or ~~~, and the text around them."""
    lines = text.split("\n")
    cells: list[str] = []
    prose: list[str] = []
    i = 0
    while i < len(lines):
        opening = _FENCE_OPEN.match(lines[i])
        if not opening:
            prose.append(lines[i])
            i += 1
            continue
        indent, fence, info = opening.groups()
        end = next((j for j in range(i + 1, len(lines))
                    if lines[j].strip().startswith(fence[0] * len(fence))
                    and not lines[j].strip().strip(fence[0])), len(lines))
        body = _dedent(lines[i + 1:end], indent)
        kind = _is_python_tag(info)
        if kind or (kind is None and _runnable(body)):
            if body.strip():
                cells.append(body)
        else:
            prose.extend(lines[i:end + 1])
        i = end + 1
    return cells, "\n".join(prose)


def parse_reply(text: str) -> ParsedReply:
    """Take a reply apart: reasoning, Python blocks, and the prose around them.

    Blocks are fenced (```python, ```py, ```python3, or bare ``` when the content is code
    rather than data) or, when there are none, tagged `<code>`, `<execute>` or `<python>`.
    """
    reasoning, rest = _split_think(text.replace("\r\n", "\n").replace("\r", "\n"))
    cells, prose = _fenced(rest)
    if not cells:
        tagged = [m.group(2).strip("\n") for m in _TAGGED.finditer(rest) if m.group(2).strip()]
        if tagged:
            cells, prose = tagged, _TAGGED.sub("", rest)
    return ParsedReply(reasoning, rest, cells, re.sub(r"\n{3,}", "\n\n", prose).strip())


def extract_code(text: str) -> list[str]:
    """The Python code blocks of a model's reply, outside its reasoning sections."""
    return parse_reply(text).cells


_TEXT_GUIDE = """\
You can run code in {python}. Write it in a fenced block that starts with ```python and ends
with ```; every such block in your reply runs, in order, in a sandboxed session that lasts
the whole conversation (variables, functions and imports stay defined), and what it prints
(and the value of a last expression) comes back to you in the next message. The tools below
are Python functions already defined there: call them directly, e.g. `rows = some_tool(x=1)`,
and loop, filter and aggregate in code, printing only what you need to read. A failed call
raises `ToolError`; `search_tools("words")` finds tools and `help(tool)` shows one in full.
/session is a writable folder; there is no network. When you have the answer, reply in plain
text with no code block: a reply without code ends your turn."""


@dataclass
class TextTurn:
    """What one reply of the model led to."""

    parsed: ParsedReply
    outputs: list[Reply] = field(default_factory=list)
    """One per block that ran; `.result` holds its `CellResult`, `.text` what the model reads."""
    message: str | None = None
    """What to send the model as the next user message; `None` when the turn is over."""

    @property
    def done(self) -> bool:
        """The reply had no code (it is the answer), or the code called `final_answer`."""
        return self.message is None

    @property
    def results(self) -> list[CellResult]:
        return [out.result for out in self.outputs if out.result is not None]

    @property
    def has_final(self) -> bool:
        return any(out.has_final for out in self.outputs)

    @property
    def answer(self) -> Any:
        """The `final_answer(...)` value when code gave one, else the reply's prose."""
        for out in self.outputs:
            if out.has_final:
                return out.final
        return self.parsed.prose


class TextMode(Closing):
    """Code mode over plain text, for custom loops with models that cannot call tools.

    Put `instructions` in the system prompt; hand each reply to `step` (or `astep`), which
    runs the code blocks in it and says what to send back. Takes `ToolIsCode`'s arguments
    (`tools`, `callback`, `limits`, `llm`, ...), or an existing `toolset=` to share its
    sessions; `key=` picks the conversation as in `ToolIsCode.tool_call`.
    """

    def __init__(self, tools: Iterable[Any] = (), callback: Callback | None = None, *,
                 toolset: ToolIsCode | None = None, catalog_chars: int = 6_000, **options: Any):
        if toolset is not None and (tools or callback is not None or options):
            raise ValueError("pass either toolset= or the tools and their options, not both")
        self._owns = toolset is None
        self.toolset = toolset or ToolIsCode(tools, callback, api="chat", **options)
        self._catalog_chars = catalog_chars
        self._ids = itertools.count(1)
        self._instructions: str | None = None

    @property
    def instructions(self) -> str:
        """The system prompt part: how to write code, then the tool catalog."""
        if self._instructions is None:
            notes = [LLM_QUERY_NOTE] if self.toolset.llm is not None else []
            guide = _TEXT_GUIDE.format(python=self.toolset.options.python)
            self._instructions = with_catalog("\n".join([guide, *notes]),
                                              self.toolset.registry, self._catalog_chars)
        return self._instructions

    def _call_id(self) -> str:
        return f"text_{next(self._ids)}"

    def step(self, reply: str, *, key: Hashable = None) -> TextTurn:
        """Run the code blocks in `reply` (stopping at the first that fails)."""
        turn = TextTurn(parse_reply(reply))
        for cell in _to_run(turn):
            turn.outputs.append(self.toolset.run_code(cell, key=key, call_id=self._call_id()))
        return _finish(turn)

    async def astep(self, reply: str, *, key: Hashable = None) -> TextTurn:
        """`step` for async code: async tools and callbacks run on the running loop."""
        turn = TextTurn(parse_reply(reply))
        for cell in _to_run(turn):
            turn.outputs.append(await self.toolset.arun_code(cell, key=key,
                                                             call_id=self._call_id()))
        return _finish(turn)

    def close(self) -> None:
        """Close the sessions (unless the toolset was passed in: its owner closes it)."""
        if self._owns:
            self.toolset.close()


def _to_run(turn: TextTurn) -> Iterator[str]:
    """The turn's blocks in order, until one (its output appended) fails or gives the final
    answer."""
    for cell in turn.parsed.cells:
        if turn.outputs and (turn.outputs[-1].has_final or not turn.outputs[-1].ok):
            return
        yield cell


def _finish(turn: TextTurn) -> TextTurn:
    """The message for the model: each block's output, and which blocks did not run."""
    if not turn.outputs or turn.has_final:
        return turn
    total = len(turn.parsed.cells)
    parts = []
    for n, out in enumerate(turn.outputs, 1):
        head = f"[output of block {n} of {total}]\n" if total > 1 else ""
        parts.append(head + out.text)
    ran = len(turn.outputs)
    if ran < total:
        skipped = f"block {total}" if ran + 1 == total else f"blocks {ran + 1} to {total}"
        parts.append(f"[{skipped} did not run: block {ran} failed]")
    turn.message = "\n\n".join(parts)
    return turn
