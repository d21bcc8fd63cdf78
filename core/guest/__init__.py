"""Python that runs INSIDE the sandbox.

These files form the package `tooliscode_guest` in the guest. They use only the standard
library and relative imports, so the host can import them too (for tests and for the
shared argument validator) as `tooliscode.guest`. Its modules are the guest's, not the
host's API: the host uses only what this `__init__` exports.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

from .capture import clip
from .channel import OUTPUT_MARK
from .convert import to_json_value
from .errors import message_chars
from .figures import MAX_FIGURES, png_size
from .validate import problem, resolve

__all__ = ["GUEST_MODULES", "MAX_FIGURES", "OUTPUT_MARK", "clip", "guest_sources", "message_chars", "png_size",
           "problem", "resolve", "to_json_value"]

GUEST_PACKAGE = "tooliscode_guest"
GUEST_MODULES = ("convert", "channel", "aio", "hooks", "capture", "stream",
                 "invalid", "validate", "plain",
                 "callsite", "tools", "discovery", "describe", "figures", "tracebacks", "errors",
                 "rehearsal", "reach", "cells", "salvage", "kinds", "persist", "points", "heap",
                 "turns", "main")
"""In load order: each may import only the ones before it."""


@lru_cache(maxsize=1)
def guest_sources() -> list[tuple[str, str]]:
    """(module name, source) pairs, in load order."""
    out = []
    for stem in GUEST_MODULES:
        text = resources.files(__name__).joinpath(f"{stem}.py").read_text("utf-8")
        out.append((f"{GUEST_PACKAGE}.{stem}", text))
    return out
