"""Durable sessions: conversations kept in a shared store (`SessionStore`: a folder, Redis),
leased to one worker at a time and saved after each cell (`Keeper`). A session's state as
bytes is the session's own (`Session.snapshot`); its envelope is re-exported here."""

from typing import Any

from ..engine import pack, unpack
from ..errors import SnapshotError
from ._folder_store import FolderStore
from ._keeper import LOST_CELL, UNRESTORABLE, UNSAVED, Call, Keeper, Save
from ._store import LeaseHeld, SessionStore, StoreUnavailable

__all__ = ["LOST_CELL", "UNRESTORABLE", "UNSAVED", "Call", "FolderStore", "Keeper", "LeaseHeld",
           "RedisStore", "Save", "SessionStore", "SnapshotError", "StoreUnavailable", "pack",
           "unpack"]


def __getattr__(name: str) -> Any:  # lazy: the redis package is an optional extra
    if name == "RedisStore":
        from ._redis_store import RedisStore

        return RedisStore
    raise AttributeError(name)
