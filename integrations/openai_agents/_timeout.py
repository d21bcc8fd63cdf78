"""What the model reads when the SDK's time limit stopped a call of the code tool.

The SDK enforces a function tool's `timeout_seconds` itself, by cancelling the task that
runs the call, and cancelling that task stops the cell: so the limit bounds the whole code
call, and the session comes back to its state before the cell. Its default message says only
that the tool timed out; this one also says what that means for the session.
"""

from __future__ import annotations

from typing import Any

from agents import RunContextWrapper

__all__ = ["timed_out"]


def timed_out(ctx: RunContextWrapper[Any], error: Exception) -> str:
    """The SDK's `timeout_error_function` for the code tool."""
    seconds = getattr(error, "timeout_seconds", None)
    after = f" after {seconds:g} s" if isinstance(seconds, (int, float)) else ""
    return (f"[error] The code timed out{after}, the tool's time limit, and was stopped. The "
            "Python session is back to its state before that code: what it defined or changed "
            "is gone, while the tool calls it made happened and the files it wrote are kept.")
