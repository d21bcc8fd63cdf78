"""Which interpreter an Agents SDK run uses when the toolset keeps no conversation: its own,
for as long as the run lives, or, for a run that resumes a paused one, the paused run's.

A run is known by its usage object (one per run, shared by every context made from it), and
its interpreter closes when that object is collected. A run whose cell paused hands its
interpreter over: it is held under the pause's token (which travels in the SDK's state) until
the run that resumes the pause claims it, the pause expires, or nothing is left that could
resume it (the paused call's objects were collected).
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RunKeys"]


@dataclass
class _Held:
    key: Hashable
    until: float | None


@dataclass
class RunKeys:
    """The interpreters' keys of runs: `("run", id)`, or the key of the run a run resumes."""

    drop: Callable[[Hashable], None]
    """Close the interpreter of a key (called on whatever thread collects a run)."""
    forget: Callable[[int], None]
    """Forget what was kept for a run that is gone."""
    _runs: dict[int, weakref.finalize] = field(default_factory=dict)
    _held: dict[str, _Held] = field(default_factory=dict)
    _aliases: dict[int, Hashable] = field(default_factory=dict)

    def run(self, usage: Any) -> int:
        """The id of the run whose usage object this is."""
        run = id(usage)
        if run not in self._runs:
            done = self._runs[run] = weakref.finalize(usage, self._gone, run)
            done.atexit = False
        return run

    def key(self, usage: Any, token: str | None = None) -> Hashable:
        """The run's interpreter key; a run resuming the pause `token` takes over its run's."""
        run = self.run(usage)
        held = self._held.pop(token, None) if token else None
        if held is not None:
            self._aliases[run] = held.key
        return self._aliases.get(run, ("run", run))

    def hold(self, key: Hashable, token: str, call: Any, expire_s: float | None) -> None:
        """Keep `key`'s interpreter for the run that resumes pause `token`, until `expire_s`
        passes or the paused `call` object is collected."""
        self._held[token] = _Held(key, None if expire_s is None else time.monotonic() + expire_s)
        gone = weakref.finalize(call, self._release, token)
        gone.atexit = False

    def sweep(self) -> None:
        """Let go of the pauses that expired."""
        now = time.monotonic()
        for token, held in list(self._held.items()):
            if held.until is not None and now > held.until:
                self._release(token)

    def _gone(self, run: int) -> None:
        self._runs.pop(run, None)
        self.forget(run)
        key = self._aliases.pop(run, ("run", run))
        if not any(h.key == key for h in list(self._held.values())):
            self.drop(key)

    def _release(self, token: str) -> None:
        held = self._held.pop(token, None)
        if held is not None and held.key not in self._aliases.values():
            self.drop(held.key)
