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

from .tool import Tool

__all__ = ["Opening", "clip", "openings", "summary"]

SUMMARY_CHARS = 110
_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)[.!?](?=\s)")


def _text(tool: Tool) -> str:
    return " ".join(tool.description.split())


def _ends(text: str) -> list[int]:
    """Where each sentence of `text` ends; the last one runs to the end."""
    ends = [m.end() for m in _SENTENCE_END.finditer(text)]
    return [*ends, len(text)] if text and (not ends or ends[-1] < len(text)) else ends


def summary(tool: Tool, limit: int = SUMMARY_CHARS, opening: str = "") -> str:
    """The first sentence of the description after `opening` (a shared one, see
    `openings`), at most `limit` characters."""
    text = _text(tool)
    if opening and text.startswith(opening):
        text = text[len(opening):].lstrip()
    end = _SENTENCE_END.search(text)
    return clip(text[: end.start() + 1] if end else text, limit)


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
    by_first: dict[str, list[tuple[str, list[int]]]] = {}
    members: dict[str, list[Tool]] = {}
    for tool in tools:
        text = _text(tool)
        ends = _ends(text)
        if not ends:
            continue
        first = text[: ends[0]]
        by_first.setdefault(first, []).append((text, ends))
        members.setdefault(first, []).append(tool)
    out = []
    for first, described in by_first.items():
        if len(described) < min_tools:
            continue
        text, ends = described[0]
        shared = ends[0]
        for end in ends[1:]:  # one more sentence, while every one of them has it too
            if not all(t.startswith(text[:end]) and end in e for t, e in described):
                break
            shared = end
        out.append(Opening(text[:shared], members[first]))
    return out
