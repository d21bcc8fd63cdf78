"""A turn of the command loop, as the host words it, and run without compiling it.

The data runtime's reactor runs each turn's source as a prompt does: it parses it to an
AST, compiles that, registers the text with linecache and runs it, some 100 us a turn. Our
turns are always one of two texts, the second carrying the answer to the guest's first
request (the command), so `install` has the reactor call `serve` for those directly. The
texts stay plain Python, so a reactor without the shortcut (a guest booting, before
`install`) runs them the slow way to the same effect; any other text takes that way too.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["SERVE", "SERVE_ANSWERED", "answered", "install"]

SERVE = "tooliscode_guest.main.serve()"
"""One turn of a turn-based guest (`tooliscode_guest` is bound by the boot code)."""
SERVE_ANSWERED = "tooliscode_guest.main.serve(_answer)"
"""`SERVE` given the answer to the guest's first request ("ready") with the turn's source,
bound as `_answer` (`Instance.first_answer_limit`)."""

_HEAD = "_answer = bytes.fromhex('"
_TAIL = f"')\n{SERVE_ANSWERED}\ndel _answer\n"


def answered(source: str, first: bytes) -> str:
    """`source` run with `_answer` bound to `first`, as Python that any reactor runs (hex
    digits: no escapes to parse, and `install` reads them back with one call)."""
    return f"{_HEAD}{first.hex()}')\n{source}\ndel _answer\n"


def install(reactor: Any, serve: Callable[..., None]) -> bool:
    """Have `reactor` (the data runtime's `_reactor` module) run our two turns by calling
    `serve`; False where it has no `_run_turn` to stand in for."""
    run = getattr(reactor, "_run_turn", None)
    if not callable(run) or getattr(run, "_tooliscode", False):
        return callable(run)

    def run_turn(text: str, name: str) -> Any:
        if text == SERVE:
            return serve()
        if text.startswith(_HEAD) and text.endswith(_TAIL):
            try:
                first = bytes.fromhex(text[len(_HEAD):-len(_TAIL)])
            except ValueError:  # not ours after all
                return run(text, name)
            return serve(first)
        return run(text, name)

    run_turn._tooliscode = True  # type: ignore[attr-defined]
    reactor._run_turn = run_turn
    return True
