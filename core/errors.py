"""Exceptions the host side raises."""

from __future__ import annotations

__all__ = ["ToolIsCodeError", "RuntimeNotFound", "RuntimeIntegrityError", "SessionClosed",
           "SnapshotError", "ToolError"]


class ToolIsCodeError(Exception):
    """Base class of every error tooliscode raises on the host."""


class RuntimeNotFound(ToolIsCodeError):
    """No python.wasm could be found."""


class RuntimeIntegrityError(ToolIsCodeError):
    """A python.wasm whose SHA-256 is not the pinned one."""


class SessionClosed(ToolIsCodeError):
    """The session was used after `close()`."""


class SnapshotError(ToolIsCodeError):
    """A snapshot that cannot be used: corrupt, cut short, tampered with, or from elsewhere
    (another runtime, version or start image)."""


class ToolError(ToolIsCodeError):
    """Raise from a tool to send the model a message without a traceback.

    Any exception a tool raises reaches the guest as a `ToolError`; raising this one says the
    message is meant for the model as it is.
    """
