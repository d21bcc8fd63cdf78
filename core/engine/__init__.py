"""The engine: `Session`, the worker thread that drives one guest, the tool calls of a cell,
building the `CellResult`, the warm pool, the session folder, keyed conversations, and a
session's state as bytes (`Session.snapshot`, `Session.restore`, `SessionState`)."""

from ._cancel import Cancel
from ._envelope import ENV_KEY, pack, unpack
from ._folder import INTERNAL_DIR, FileInfo
from ._handoff import run_in
from ._keyed import KeyedSessions
from ._limits import Limits
from ._output import OnOutput
from ._pause import (
    CallInfo,
    CallPaused,
    CallRecord,
    CellLog,
    Decision,
    PendingCall,
    StopCell,
    current_call,
)
from ._renewal import Renewal
from ._result import CellImage, CellResult, ToolCallRecord
from ._session import Session
from ._snapshot import SessionState, snapshot_runtime
from ._tool_calls import background_loop

__all__ = ["ENV_KEY", "INTERNAL_DIR", "CallInfo", "Cancel", "CallPaused", "CallRecord", "CellLog",
           "Decision", "PendingCall", "StopCell", "current_call", "CellImage", "CellResult", "FileInfo", "KeyedSessions",
           "Limits", "OnOutput", "Renewal", "Session", "SessionState", "ToolCallRecord", "background_loop",
           "pack", "run_in", "snapshot_runtime", "unpack"]
