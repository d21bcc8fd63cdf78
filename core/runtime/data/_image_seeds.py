"""Fresh random seeds for guests mapped from one memory image, written by the host.

Every guest mapped from an image starts with the image's random state. Reseeding in Python
(`random.seed`, numpy's `seed`) at the start of the first turn runs enough interpreter code
to copy some 400 pages of the image, about 3 ms. Instead, the image builder puts a known
pattern into each generator's state and finds where it lies in memory (next to the
generator's `id()`, its address in linear memory); each new guest then gets new random
words written right there, a page or two, before it runs anything. The state's position is
left at its end, so the first draw stirs the new words through the whole state.
"""

from __future__ import annotations

import json
import logging
import struct
from pathlib import Path

from .._wasmtime.compile_cache import write_private

__all__ = ["MARK_SOURCE", "locate", "locate_and_save", "load", "seeds_path"]

log = logging.getLogger("tooliscode")

_WORDS = 624  # MT19937's state, in both CPython's `random` and numpy's legacy generator
_SALTS = (0x3C6EF372, 0x5BE0CD19)
_NEAR = 1024
"""How far past the object's start its state may lie (the object header and a few fields)."""


def _pattern(salt: int) -> list[int]:
    return [(i * 0x9E3779B1 + salt) & 0xFFFFFFFF for i in range(_WORDS)]


MARK_SOURCE = f'''
import random as _r, sys as _s
_r.setstate((3, tuple({_pattern(_SALTS[0])!r}) + ({_WORDS},), None))
_ids = [id(_r._inst)]
if "numpy" in _s.modules:
    _np = _s.modules["numpy"]
    _g = _np.random.mtrand._rand
    _g.set_state(("MT19937", _np.array({_pattern(_SALTS[1])!r}, dtype=_np.uint32), {_WORDS}))
    _ids.append(id(_g._bit_generator))
    del _np, _g
print("seeds:" + ",".join(map(str, _ids)))
del _r, _s, _ids
'''
"""Run in the image's guest last: sets each generator to its pattern and prints where the
generators are (the host reads that line from the guest's stdout)."""


def locate(memory: bytes, output: str) -> list[tuple[int, int]]:
    """(offset, length) of each generator's state words, from the guest's answer to
    `MARK_SOURCE`; raises ValueError when one cannot be found exactly."""
    line = next((x for x in output.splitlines() if x.startswith("seeds:")), None)
    if line is None:
        raise ValueError("the image's guest did not say where its random generators are")
    found = []
    for salt, address in zip(_SALTS, map(int, line[6:].split(","))):
        pattern = struct.pack(f"<{_WORDS}I", *_pattern(salt))
        at = memory.find(pattern, address, address + _NEAR + len(pattern))
        if at < 0:
            raise ValueError(f"no random state found near {address:#x}")
        found.append((at, len(pattern)))
    return found


def seeds_path(image: Path) -> Path:
    """Where the seed places of `image` are kept (written before the image itself)."""
    return image.with_suffix(".seeds")


def locate_and_save(memory: bytes, output: bytes, image: Path) -> None:
    """Find the states in the image's `memory` and save where they are beside `image` (an
    empty list if they cannot be found: its guests then reseed in Python, a few ms slower)."""
    try:
        seeds = locate(memory, output.decode("utf-8", "replace"))
    except ValueError as exc:
        log.warning("tooliscode: %s", exc)
        seeds = []
    write_private(seeds_path(image), json.dumps(seeds).encode())


def load(image: Path) -> tuple[tuple[int, int], ...] | None:
    """The seed places saved beside `image`, or None (its guests reseed in Python)."""
    try:
        raw = json.loads(seeds_path(image).read_bytes())
        return tuple((int(at), int(n)) for at, n in raw)
    except (OSError, ValueError, TypeError):
        return None
