"""Finding tools by words: BM25 over names, descriptions and parameter names. No model, no
network, so `search_tools` answers in microseconds and the same query ranks the same way."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from ._tool import Tool

__all__ = ["SearchIndex", "words"]

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_K1 = 1.2
_B = 0.75
# A word in the name says more about a tool than the same word in its description.
_NAME_WEIGHT, _DESC_WEIGHT, _PARAM_WEIGHT = 3.0, 1.0, 0.5
_PREFIX_SHARE = 0.5
_STOP = frozenset([
    "a", "an", "and", "any", "are", "as", "at", "be", "by", "can", "do", "for", "from", "has",
    "have", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "that",
    "the", "their", "them", "then", "there", "these", "this", "to", "use", "using", "want", "was",
    "we", "what", "when", "which", "with", "you", "your", "all", "some"])
"""Words of a query that say nothing about which tool is meant."""


def _stem(word: str) -> str:
    """A crude stemmer, enough to make `issues`, `issue` and `created`, `create` meet."""
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    elif len(word) > 5 and word.endswith("ing"):
        word = word[:-3]
    elif len(word) > 4 and word.endswith("ed"):
        word = word[:-2]
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


def words(text: str) -> list[str]:
    """Lower-case stems of `text`, splitting snake_case and camelCase; no stop words."""
    return [_stem(w) for w in map(str.lower, _WORD.findall(text)) if w not in _STOP]


@dataclass(frozen=True)
class _Entry:
    tool: Tool
    name: Counter[str]
    desc: Counter[str]
    params: Counter[str]
    name_len: int
    desc_len: int


class SearchIndex:
    """Built once per tool set; `search` is then a loop over the tools."""

    def __init__(self, tools: Iterable[Tool]):
        self._entries = []
        for tool in tools:
            if tool.metadata.get("hidden"):
                continue
            props = tool.parameters.get("properties") or {}
            name = words(tool.qualified_name)
            desc = words(tool.description)
            self._entries.append(_Entry(
                tool, Counter(name + words(tool.name)), Counter(desc),
                Counter(w for key in props for w in words(str(key))), len(name), len(desc)))
        self._df = Counter(w for e in self._entries for w in {*e.name, *e.desc, *e.params})
        self._vocabulary = sorted(self._df)
        count = max(1, len(self._entries))
        self._avg_name = sum(e.name_len for e in self._entries) / count or 1
        self._avg_desc = sum(e.desc_len for e in self._entries) / count or 1

    def _idf(self, term: str) -> float:
        n, df = len(self._entries), self._df.get(term, 0)
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    def _expand(self, term: str) -> list[tuple[str, float]]:
        """The term itself when tools use it; else the words it begins (`calend` ->
        `calendar`), at a discount."""
        if term in self._df or len(term) < 3:
            return [(term, 1.0)]
        return [(w, _PREFIX_SHARE) for w in self._vocabulary if w.startswith(term)]

    def search(self, query: str, limit: int = 10) -> list[Tool]:
        """The tools that match `query` best, best first."""
        terms = [(w, share) for t in dict.fromkeys(words(query)) for w, share in self._expand(t)]
        if not terms or limit <= 0:
            return []
        phrase = "_".join(w.lower() for w in _WORD.findall(query))
        scored = []
        for e in self._entries:
            # BM25F: a word counts for more in a short name or description than in a long one.
            name_norm = 1 - _B + _B * e.name_len / self._avg_name
            desc_norm = 1 - _B + _B * e.desc_len / self._avg_desc
            score = 0.0
            for term, share in terms:
                tf = (_NAME_WEIGHT * e.name.get(term, 0) / name_norm
                      + _DESC_WEIGHT * e.desc.get(term, 0) / desc_norm
                      + _PARAM_WEIGHT * e.params.get(term, 0))
                if tf:
                    score += share * self._idf(term) * tf * (_K1 + 1) / (tf + _K1)
            if score and phrase and phrase in e.tool.qualified_name.lower():
                score *= 1.5  # the query, written as one name, is part of this tool's name
            if score > 0:
                scored.append((-score, e.tool.qualified_name, e.tool))
        scored.sort(key=lambda item: item[:2])
        return [tool for _, _, tool in scored[:limit]]
