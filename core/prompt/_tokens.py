"""Counting tokens offline, to show what code mode saves.

With the optional `bpe-openai` package (it ships OpenAI's o200k_base vocabulary, so it works
without network) counts are real BPE tokens; without it they are characters / 4, and
`TOKENIZER` says which, so every printed figure can be labelled honestly.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from typing import Any

__all__ = ["TOKENIZER", "ContextCounter", "count_tokens", "item_text"]

_PIECE = 50_000
"""Characters encoded per call: bpe-openai refuses very long inputs."""


@functools.lru_cache(maxsize=1)
def _encoding() -> Any:
    try:
        import bpe_openai

        return bpe_openai.get_encoding("o200k_base")
    except Exception:  # noqa: BLE001 - not installed, or its data is missing: estimate
        return None


def _pieces(text: str) -> list[str]:
    pieces, start = [], 0
    while start < len(text):
        end = min(len(text), start + _PIECE)
        if end < len(text):  # cut at a space or newline so few tokens straddle the cut
            cut = max(text.rfind(" ", start, end), text.rfind("\n", start, end))
            end = cut + 1 if cut > start else end
        pieces.append(text[start:end])
        start = end
    return pieces


def count_tokens(text: str) -> int:
    """Tokens in `text`: o200k_base when available, else `len(text) / 4` rounded up."""
    encoding = _encoding()
    if encoding is None:
        return -(-len(text) // 4)
    return sum(len(encoding.encode_ordinary(p)) for p in _pieces(text))


def _label() -> str:
    return "o200k_base, via bpe-openai" if _encoding() is not None \
        else "estimated as characters / 4 (bpe-openai is not installed)"


class _Label:
    """`str(TOKENIZER)` says how tokens are counted; lazily, so importing loads nothing."""

    def __str__(self) -> str:
        return _label()

    __repr__ = __str__


TOKENIZER = _Label()


def item_text(item: Any) -> str:
    """What the model reads of one history item (a Responses input item or a Chat message):
    a call's name and arguments, a result's output, a message's text; the JSON of the rest.

    Counting a tool result as the JSON of its whole item would escape every quote inside it
    again and inflate the count; the API hands the model the output text itself.
    """
    if not isinstance(item, dict):
        return json.dumps(item, default=str)
    kind, role = item.get("type"), item.get("role")
    if kind in ("function_call", "custom_tool_call"):
        return f"{item.get('name')}{item.get('arguments', item.get('input', ''))}"
    if kind in ("function_call_output", "custom_tool_call_output"):
        return _text(item.get("output"))
    if role is not None:  # a message of either API, maybe with Chat tool calls
        calls = "".join(f"{c['function']['name']}{c['function']['arguments']}"
                        for c in item.get("tool_calls") or () if "function" in c)
        return _text(item.get("content")) + calls
    return json.dumps(item, default=str)


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # message parts
        return "".join(str(p.get("text", "")) if isinstance(p, dict) else str(p)
                       for p in content)
    return json.dumps(content, default=str)


def _is_model_item(item: Any) -> bool:
    return isinstance(item, dict) and (
        item.get("type") in ("function_call", "custom_tool_call", "reasoning")
        or item.get("role") == "assistant")


class ContextCounter:
    """Tokens of the context each model call is sent: tool definitions, instructions and the
    history so far.

    Every call re-sends the whole history, so a long conversation repeats the same texts many
    times; each distinct text is encoded once and remembered.
    """

    def __init__(self) -> None:
        self._known: dict[str, int] = {}

    def text(self, value: Any) -> int:
        """Tokens of a text, or of any other value's JSON (a tool list, say)."""
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        if text not in self._known:
            self._known[text] = count_tokens(text)
        return self._known[text]

    def items(self, items: Iterable[Any]) -> int:
        return sum(self.text(item_text(item)) for item in items)

    def request(self, body: dict[str, Any]) -> int:
        """The input of one Responses or Chat Completions request body."""
        tools = self.text(body["tools"]) if body.get("tools") else 0
        history = body.get("input", body.get("messages")) or []
        if isinstance(history, str):
            history = [{"role": "user", "content": history}]
        return tools + self.text(body.get("instructions") or "") + self.items(history)

    def per_call(self, setup: int, history: list[Any]) -> list[int]:
        """The input of each model call that produced `history`: `setup` (tools and
        instructions) plus the history before that call's reply."""
        sizes, total = [], 0
        for i, item in enumerate(history):
            if _is_model_item(item) and (i == 0 or not _is_model_item(history[i - 1])):
                sizes.append(setup + total)
            total += self.text(item_text(item))
        return sizes
