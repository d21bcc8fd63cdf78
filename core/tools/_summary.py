"""One-line summaries of tools, and the text several tools' descriptions share.

A summary is the first sentence of what a tool's description says about that tool. Many
servers wrap every description in the same boilerplate: an opening of one or more sentences
("This tool belongs to the X system. It lets users navigate folders, read files, etc."),
often ending in a label ("Tool description:"), and sometimes a closing ("See the manual for
field meanings."). That text would be every tool's summary, and the model could not tell the
tools apart without `help` on each. `shared_texts` finds it, so the catalog shows it once,
above the group, and summarises each tool from its own text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from ._tool import Tool

__all__ = ["SUMMARY_CHARS", "Shared", "clip", "own_summaries", "own_text", "shared_texts",
           "summary"]

SUMMARY_CHARS = 110
_SENTENCE_END = re.compile(r"[.!?](?<!\be\.g\.)(?<!\bi\.e\.)(?=\s+[^\sa-z])")
"""A full stop, question or exclamation mark before a word that does not go on in lower case:
"etc. Tool" ends a sentence, "etc. and" and "e.g. files" do not. The punctuation comes first:
tested at every character, it is what rules most of them out."""
_LABEL = re.compile(r"(?:[^\s:.!?]+ ){0,3}[^\s:.!?]+:(?=\s)")
"""A short label that opens a sentence and introduces what follows ("Tool description:")."""
_SCANNED = 1_500
"""Characters of a description searched for a shared opening: boilerplate comes first."""


def _norm(text: str) -> str:
    return " ".join(text.split())


def _first(text: str) -> str:
    """The first sentence of `text`, its white space made single spaces. Found before the
    rest is normalised: descriptions run to kilobytes and only this much is read."""
    end = _SENTENCE_END.search(text)
    return _norm(text[: end.end()] if end else text)


def _ends(text: str, start: int = 0, stop: int | None = None, most: int = 1 << 30) -> list[int]:
    """Where the sentences of normalised `text` end, and the labels that open them, from
    `start` to `stop` (the end of the text included when it is reached); at most `most`."""
    stop = len(text) if stop is None else min(stop, len(text))
    out: list[int] = []
    at = start
    while at < stop and len(out) < most:
        label = _LABEL.match(text, at)
        if label is not None and label.end() < stop:
            out.append(label.end())
            at = label.end() + 1
            continue
        end = _SENTENCE_END.search(text, at, stop)
        if end is None:
            break
        out.append(end.end())
        at = end.end() + 1
    if stop == len(text) and len(out) < most and (not out or out[-1] < stop):
        out.append(stop)
    return out


def _sentence_starts(text: str) -> list[int]:
    """Where the sentences after the first begin, among the last `_SCANNED` characters of
    normalised `text`: where a closing may begin."""
    return [m.end() + 1 for m in _SENTENCE_END.finditer(text, max(0, len(text) - _SCANNED))]


def clip(text: str, limit: int) -> str:
    """`text` cut at a word to at most `limit` characters, with `…` where it was cut."""
    if len(text) <= limit:
        return text
    return text[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"


def own_text(tool: Tool, opening: str = "", closing: str = "") -> str:
    """The description without a shared `opening` and `closing`, white space made single."""
    text = _norm(tool.description)
    if opening and text.startswith(opening):
        text = text[len(opening):].lstrip()
    if closing and text.endswith(closing) and len(text) > len(closing):
        text = text[: -len(closing)].rstrip()
    return text


def summary(tool: Tool, limit: int = SUMMARY_CHARS, opening: str = "", closing: str = "") -> str:
    """The first sentence of the description, leaving out a shared `opening` and `closing`
    (see `shared_texts`), at most `limit` characters."""
    text = own_text(tool, opening, closing) if opening or closing else tool.description
    return clip(_first(text), limit)


@dataclass
class Shared:
    """Text that the descriptions of `tools` all begin with (`opening`) or end with
    (`closing`); either may be empty."""

    opening: str
    tools: list[Tool] = field(default_factory=list)
    closing: str = ""


def shared_texts(tools: Iterable[Tool], min_tools: int = 2, closings: bool = True) -> list[Shared]:
    """Groups of `tools` whose descriptions share an opening or a closing, in order of their
    first tool.

    Each tool joins the group of the longest opening (whole sentences and labels) that it
    shares with at least `min_tools - 1` others, so two tools of one group never begin their
    own text with the same sentence (unless their whole descriptions are the same). A group
    may hold only some of the tools that share its first sentence: the ones that share more
    form a group of their own. Within a group, the trailing sentences every member ends
    with are its closing. Tools with no shared opening but the same closing are grouped too.
    """
    tools = list(tools)
    texts: dict[int, str] = {}
    by_first: dict[str, list[Tool]] = {}
    alone: list[Tool] = []
    for tool in tools:
        text = texts[id(tool)] = _norm(tool.description[: _SCANNED * 2])
        first = _ends(text, 0, _SCANNED, most=1)
        if first:
            by_first.setdefault(text[: first[0]], []).append(tool)
        else:
            alone.append(tool)
    groups: dict[str, Shared] = {}
    for members in by_first.values():
        if len(members) < min_tools:  # most tools: their first sentence is their own
            alone += members
            continue
        ends = {id(t): _ends(texts[id(t)], 0, _SCANNED) for t in members}
        counts: dict[str, int] = {}
        for tool in members:
            text = texts[id(tool)]
            for end in ends[id(tool)]:
                counts[text[:end]] = counts.get(text[:end], 0) + 1
        for tool in members:
            opening = _opening(texts[id(tool)], ends[id(tool)], counts, min_tools)
            if opening:
                groups.setdefault(opening, Shared(opening)).tools.append(tool)
            else:
                alone.append(tool)
    for group in groups.values():
        group.closing = _closing([own_text(t, group.opening) for t in group.tools])
    order = {id(t): i for i, t in enumerate(tools)}
    by_closing = _by_closing(alone, min_tools) if closings else []
    return sorted([*groups.values(), *by_closing], key=lambda g: order[id(g.tools[0])])


def own_summaries(tools: Iterable[Tool], limit: int = SUMMARY_CHARS) -> dict[str, str]:
    """Each tool's summary by its name, leaving out the opening it shares with other tools of
    its namespace, as the catalog does."""
    by_namespace: dict[str | None, list[Tool]] = {}
    for tool in tools:
        by_namespace.setdefault(tool.namespace, []).append(tool)
    out: dict[str, str] = {}
    for members in by_namespace.values():
        for shared in shared_texts(members, closings=False):
            for tool in shared.tools:
                out[tool.name] = summary(tool, limit, shared.opening)
    return out


def _opening(text: str, ends: list[int], counts: dict[str, int], min_tools: int) -> str:
    """The longest prefix of `text` ending at a sentence or label that at least `min_tools`
    tools share; the whole text only when it is one sentence (otherwise its last sentence
    stays its own, to be its summary)."""
    shared = [end for end in ends if counts[text[:end]] >= min_tools]
    if not shared:
        return ""
    if shared[-1] == len(text) and len(shared) > 1:
        shared.pop()
    if shared[-1] == len(text) and len(ends) > 1:
        return ""
    return text[: shared[-1]]


def _closing(texts: list[str]) -> str:
    """The trailing sentences that all `texts` end with, leaving each at least one of its
    own."""
    if len(texts) < 2 or not texts[0]:
        return ""
    first = texts[0]
    for start in _sentence_starts(first):  # the longest candidate first
        tail = first[start:]
        if all(len(t) > len(tail) + 1 and t.endswith(" " + tail) for t in texts):
            return tail
    return ""


def _by_closing(tools: list[Tool], min_tools: int) -> list[Shared]:
    """Groups of tools (that share no opening) whose descriptions end alike."""
    texts = {id(t): _norm(t.description) for t in tools}
    by_last: dict[str, list[Tool]] = {}
    for tool in tools:
        text = texts[id(tool)]
        starts = _sentence_starts(text)
        if starts:  # a closing needs a sentence of the tool's own before it
            by_last.setdefault(text[starts[-1]:], []).append(tool)
    return [Shared("", members, _closing([texts[id(t)] for t in members]))
            for members in by_last.values() if len(members) >= min_tools]
