"""LangGraph's own stop signal for a run that a tool can hear: a request to drain it.

Cancelling the task of an async run (`ainvoke`, `astream`), closing an async stream early
and a node's `timeout` all cancel the code tool's task, which stops its cell. A sync run has
nothing of the kind: closing its `stream` waits for the running step's threads, and nothing
tells the tool. What it has is `RunControl` (`graph.stream(..., control=control)`):
`control.request_drain()`, from any thread, asks the run to stop after the running step, and
a running node is meant to look at `runtime.drain_requested`. The code tool does, while its
cell runs: the cell stops at once and comes back to the state before it, so the step ends and
the run stops.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from langgraph.runtime import get_runtime
from tooliscode.adapters import cancel_when
from tooliscode.engine import Cancel

__all__ = ["drained"]


@contextlib.contextmanager
def drained() -> Iterator[Cancel | None]:
    """A `Cancel` that fires when the running graph run is asked to drain; None outside a
    graph (or under a LangGraph without `RunControl`)."""
    check = _drain_check()
    if check is None:
        yield None
        return
    with cancel_when(check) as cancel:
        yield cancel


def _drain_check() -> Callable[[], str | None] | None:
    try:
        control = getattr(get_runtime(), "control", None)
    except (RuntimeError, KeyError):  # not inside a graph's run
        return None
    if control is None:
        return None

    def check() -> str | None:
        if not control.drain_requested:
            return None
        reason = control.drain_reason
        return "the graph run was asked to drain" + (f": {reason}" if reason else "")

    return check
