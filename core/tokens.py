"""Counting tokens offline, to show what code mode saves.

With the optional `bpe-openai` package (it ships OpenAI's o200k_base vocabulary, so it works
without network) counts are real BPE tokens; without it they are characters / 4, and
`TOKENIZER` says which, so every printed figure can be labelled honestly.
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["TOKENIZER", "count_tokens"]

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
