"""One-line summaries of tools, and the opening sentences several tools' descriptions share.

A summary is the description's first sentence. When the tools of a server all open with the
same boilerplate ("This tool belongs to the X system."), that sentence would be every one of
their summaries, and the model could not tell them apart without `help` on each. The
catalog shows such an opening once, and summarises what follows it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from ._tool import Tool

__all__ = ["Opening", "clip", "openings", "summary"]

SUMMARY_CHARS = 110
_SENTENCE_END = re.compile(r"[.!?](?<!\be\.g\.)(?<!\bi\.e\.)(?<!\betc\.)(?=\s)")
"""The punctuation first: tested at every character, it is what rules most of them out."""


def _text(tool: Tool) -> str:
    return " ".join(tool.description.split())


def _first(text: str) -> str:
    """The first sentence of `text`, its white space made single spaces. Found before the
    rest is normalised: descriptions run to kilobytes and only this much is read."""
    end = _SENTENCE_END.search(text)
    return " ".join((text[: end.end()] if end else text).split())


def summary(tool: Tool, limit: int = SUMMARY_CHARS, opening: str = "") -> str:
    """The first sentence of the description after `opening` (a shared one, see
    `openings`), at most `limit` characters."""
    text = tool.description
    if opening:
        text = _text(tool)
        text = text[len(opening):] if text.startswith(opening) else text
    return clip(_first(text), limit)


def clip(text: str, limit: int) -> str:
    """`text` cut at a word to at most `limit` characters, with `…` where it was cut."""
    if len(text) <= limit:
        return text
    return text[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"


@dataclass
class Opening:
    """Leading sentences that the descriptions of `tools` all begin with."""

    text: str
    tools: list[Tool] = field(default_factory=list)


def openings(tools: Iterable[Tool], min_tools: int = 2) -> list[Opening]:
    """The shared openings among `tools`, in order of their first tool: tools whose first
    sentences are the same, with as many leading sentences as all of them share. Two tools
    are enough: their summaries would be the same."""
    by_first: dict[str, list[Tool]] = {}
    for tool in tools:
        first = _first(tool.description)
        if first:
            by_first.setdefault(first, []).append(tool)
    out = []
    for first, tools_ in by_first.items():
        if len(tools_) < min_tools:
            continue
        members = [(tool, _text(tool)) for tool in tools_]
        text = members[0][1]
        shared = len(first)
        # One more sentence, while every one of them has it too (the sentences of the
        # first are looked for only here: most tools share no opening).
        for more in [*_SENTENCE_END.finditer(text, shared), None]:
            end = more.end() if more else len(text)
            if end <= shared or not all(t.startswith(text[:end]) and (
                    len(t) == end or t[end] == " ") for _, t in members):
                break
            shared = end
        out.append(Opening(text[:shared], tools_))
    return out
