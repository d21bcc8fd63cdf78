"""Durable sessions: a session's state as bytes, checked before use, kept in a shared store."""

from .envelope import SnapshotError, pack, unpack
from .folder_store import FolderStore
from .keeper import Keeper
from .store import LeaseHeld, SessionStore, StoreUnavailable

__all__ = ["FolderStore", "Keeper", "RedisStore", "LeaseHeld", "SessionStore", "SnapshotError", "StoreUnavailable",
           "pack", "unpack"]


def __getattr__(name: str):  # lazy: the redis package is an optional extra
    if name == "RedisStore":
        from .redis_store import RedisStore

        return RedisStore
    raise AttributeError(name)
