"""Slots kept ready between guests: wasmtime's pooling allocator, for guests wanted now.

Without a slot, each new guest's memory is mapped afresh from the start image and let go
when it ends: each page its first turns touch is a page fault (some 290 for a default
guest's first cell, microseconds each on a virtual machine), and its end unmaps them all.
In a slot, a guest ends into memory that wasmtime sets back to the start image in place, its
first `KEEP_RESIDENT_BYTES` kept resident: the next guest there finds its pages in place.

What a slot keeps stays resident while no guest holds it, so the slots are few (`slots()`)
and only guests made when one is wanted take them (a pool's guests, made ahead of need, do
not). A guest that finds them all taken starts as every guest did before.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

import wasmtime
from wasmtime import _ffi as ffi

__all__ = ["ENV_SLOTS", "KEEP_RESIDENT_BYTES", "exhausted", "misfit", "slots", "use_pool"]

ENV_SLOTS = "TOOLISCODE_SLOTS"
"""How many guests of a runtime that keeps slots may hold one at once (0: none)."""
_SLOTS = 2
"""Two: a guest ends into its slot while the next one is made, and takes the other."""
KEEP_RESIDENT_BYTES = 16 << 20
"""A default guest's first cell writes pages across its first 16 MiB (8 MiB leave half of
its faults); past this, a slot's pages are given back to the system as without one."""
_MAX_MEMORY_BYTES = 4 << 30
"""Any memory a 32-bit guest can have: `Limits.memory_bytes` bounds it, not the slot."""
_CORE_INSTANCES = 64
"""Per guest: a component is made of a few dozen core instances (its libraries, shims)."""
_INSTANCE_BYTES = 4 << 20
_TABLE_ELEMENTS = 1 << 14
"""The component's table has 5,674 elements."""
_TABLE_KEEP_RESIDENT_BYTES = 1 << 17


def slots() -> int:
    """The slots an engine keeps: `TOOLISCODE_SLOTS`, else 2."""
    raw = os.environ.get(ENV_SLOTS, "").strip()
    if not raw:
        return _SLOTS
    try:
        count = int(raw)
    except ValueError:
        raise ValueError(f"{ENV_SLOTS} must be a whole number of slots, not {raw!r}") from None
    if count < 0:
        raise ValueError(f"{ENV_SLOTS} must be 0 or more, not {count}")
    return count


def _c(name: str, restype: Any, *argtypes: Any) -> Any:
    fn = ffi.dll[name]
    fn.restype, fn.argtypes = restype, list(argtypes)
    return fn


def use_pool(config: wasmtime.Config, count: int) -> None:
    """Have engines made from `config` keep `count` slots for components."""
    new = _c("wasmtime_pooling_allocation_config_new", ctypes.c_void_p)
    delete = _c("wasmtime_pooling_allocation_config_delete", None, ctypes.c_void_p)
    strategy = _c("wasmtime_pooling_allocation_strategy_set", None, ctypes.c_void_p,
                  ctypes.c_void_p)
    pool = new()
    try:
        u32, size = ctypes.c_uint32, ctypes.c_size_t
        for name, kind, value in (
                ("total_component_instances", u32, count),
                ("max_core_instances_per_component", u32, _CORE_INSTANCES),
                ("total_core_instances", u32, count * _CORE_INSTANCES),
                ("max_memories_per_component", u32, 4),
                ("total_memories", u32, count * 4),
                ("max_tables_per_component", u32, _CORE_INSTANCES),
                ("max_tables_per_module", u32, 4),
                ("total_tables", u32, count * _CORE_INSTANCES),
                ("table_elements", size, _TABLE_ELEMENTS),
                ("max_memory_size", size, _MAX_MEMORY_BYTES),
                ("max_core_instance_size", size, _INSTANCE_BYTES),
                ("max_component_instance_size", size, _INSTANCE_BYTES),
                ("linear_memory_keep_resident", size, KEEP_RESIDENT_BYTES),
                ("table_keep_resident", size, _TABLE_KEEP_RESIDENT_BYTES),
                ("total_stacks", u32, 0)):  # no async calls: no fiber stacks
            _c(f"wasmtime_pooling_allocation_config_{name}_set", None, ctypes.c_void_p,
               kind)(pool, value)
        strategy(config.ptr(), pool)  # copies the settings
    finally:
        delete(pool)


def exhausted(exc: BaseException) -> bool:
    """Whether instantiating failed only because every slot is taken."""
    return isinstance(exc, wasmtime.WasmtimeError) and "maximum concurrent limit" in str(exc)


def misfit(exc: BaseException) -> bool:
    """Whether a compile was refused only because it does not fit an engine's slots."""
    return isinstance(exc, wasmtime.WasmtimeError) and "pooling allocator" in str(exc)
