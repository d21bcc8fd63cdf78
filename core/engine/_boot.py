"""How a guest boots: the code it starts with, and the host's answer to its first request.

The boot code asks for the guest package (its sources and their compiled code, from the
host's cache) and installs an importer for it, so a guest loads only what it uses.
"""

from __future__ import annotations

import marshal
from typing import Any

from ..guest import guest_sources
from ..guest.turns import SERVE, SERVE_ANSWERED
from ..runtime import GUEST_DIR
from . import _warmup as warmup

__all__ = ["BAKED_BOOT", "BOOT_SOURCE", "SERVE", "SERVE_ANSWERED", "boot_answer", "boot_reply"]

BOOT_SOURCE = '''
import sys, marshal
from importlib.machinery import ModuleSpec
_boot = marshal.loads(exchange(b'{"op":"boot"}'))

class _GuestFinder:
    """Imports tooliscode_guest modules from the sources the host sent, on first use, so a
    guest loads only what it needs (asyncio support, for one, only when asyncio is used)."""
    sources = dict(_boot["modules"])

    def find_spec(self, name, path=None, target=None):
        if name == "tooliscode_guest" or name in self.sources:
            spec = ModuleSpec(name, self, origin="<tooliscode>/" + name.rpartition(".")[2] + ".py",
                              is_package=name == "tooliscode_guest")
            spec.has_location = True
            return spec
        return None

    def create_module(self, spec):
        return None

    try:
        code = marshal.loads(_boot["code"]) if _boot.get("code") else {}
    except Exception:  # a damaged cache: compile from the sources instead
        code = {}

    def exec_module(self, module):
        try:
            code = marshal.loads(self.code[module.__name__])
        except Exception:
            code = compile(self.sources.get(module.__name__, ""), module.__spec__.origin, "exec")
        exec(code, module.__dict__)

sys.meta_path.insert(0, _GuestFinder())
import tooliscode_guest.main
tooliscode_guest.main.main(exchange, _boot)
'''
BAKED_BOOT = f"tooliscode_guest.main.attach(exchange, {GUEST_DIR!r})"
"""The boot of a guest whose runtime has the guest package built in and prepared (see
`Runtime.baked_guest`): it only needs its host and its folder."""
_replies: dict[tuple[bytes | None, bool], bytes] = {}


def boot_answer(code: bytes | None, turns: bool, baked: bool = False) -> dict[str, Any]:
    """The answer to a guest's "boot" request, for guest code compiled as `code`. A guest
    whose runtime has the guest package built in (`baked`) needs neither it nor a warm-up."""
    if baked:
        return {"modules": [], "code": None, "cwd": GUEST_DIR, "turns": turns, "warm": None}
    return {"modules": guest_sources(), "code": code, "cwd": GUEST_DIR, "turns": turns,
            "warm": warmup.script(SERVE, SERVE_ANSWERED) if turns else None}


def boot_reply(code: bytes | None, turns: bool) -> bytes:
    """`boot_answer`, encoded once: some 300 kB, wanted by every new guest."""
    if (code, turns) not in _replies:
        _replies[(code, turns)] = marshal.dumps(boot_answer(code, turns))
    return _replies[(code, turns)]
