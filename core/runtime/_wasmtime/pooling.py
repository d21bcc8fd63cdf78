"""Slots for guests, kept ready between them: wasmtime's pooling allocator.

Without it, each new guest's memory is mapped afresh from the start image, and every page its
first turns write is a copy-on-write fault: some 290 for a default guest's first cell, each
costing microseconds (4 us on a VM), about a third of a new guest's first result. With it, a
guest ends into its slot, whose first `KEEP_RESIDENT_BYTES` wasmtime sets back to the start
image in place and leaves resident: the next guest in that slot writes them without a fault.

What a slot keeps resident stays when its guest ends, until another takes the slot. So the
slots are few (`slots()`), which bounds that memory; a guest that finds them all taken starts
without one (`Tiers.spill`), as every guest did before. A pool reserves address space for
all its slots at once; where that cannot be had, the engine is made without one.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

import wasmtime
from wasmtime import _ffi as ffi

__all__ = ["ENV_SLOTS", "KEEP_RESIDENT_BYTES", "exhausted", "misfit", "slots", "use_pool"]

ENV_SLOTS = "TOOLISCODE_SLOTS"
"""How many guests of a runtime that uses slots may hold one at once (0: none)."""
_SLOTS = 8
KEEP_RESIDENT_BYTES = 16 << 20
"""A default guest's first cell writes pages across its first 16 MiB (8 MiB leave half of
its faults); past this, a slot's pages are given back to the system as without a pool."""
_MAX_MEMORY_BYTES = 4 << 30
"""Any memory a 32-bit guest can have: `Limits.memory_bytes` bounds it, not the slot."""
_CORE_INSTANCES = 64
"""Per guest: a component is made of a few dozen core instances (its libraries, shims)."""
_INSTANCE_BYTES = 4 << 20
_TABLE_ELEMENTS = 1 << 16
_TABLE_KEEP_RESIDENT_BYTES = 1 << 20


def slots() -> int:
    """The slots a pool has: `TOOLISCODE_SLOTS`, else 8."""
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


def _setter(name: str, kind: type) -> Any:
    fn = ffi.dll[f"wasmtime_pooling_allocation_config_{name}_set"]
    fn.restype, fn.argtypes = None, [ctypes.c_void_p, kind]
    return fn


def use_pool(config: wasmtime.Config, count: int) -> None:
    """Have engines made from `config` keep `count` slots for components."""
    new = ffi.dll.wasmtime_pooling_allocation_config_new
    new.restype, new.argtypes = ctypes.c_void_p, []
    delete = ffi.dll.wasmtime_pooling_allocation_config_delete
    delete.restype, delete.argtypes = None, [ctypes.c_void_p]
    strategy = ffi.dll.wasmtime_pooling_allocation_strategy_set
    strategy.restype, strategy.argtypes = None, [ctypes.c_void_p, ctypes.c_void_p]
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
            _setter(name, kind)(pool, value)
        strategy(config.ptr(), pool)  # copies the settings
    finally:
        delete(pool)


def exhausted(exc: BaseException) -> bool:
    """Whether instantiating failed only because every slot is taken."""
    return isinstance(exc, wasmtime.WasmtimeError) and "maximum concurrent limit" in str(exc)


def misfit(exc: BaseException) -> bool:
    """Whether a compile was refused only because it does not fit an engine's slots."""
    return isinstance(exc, wasmtime.WasmtimeError) and "pooling allocator" in str(exc)
