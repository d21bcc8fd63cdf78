"""Import paths that earlier releases documented, kept working after the modules moved.

`import tooliscode.loop` finds the module at its new home (`tooliscode.openai.loop`) and
registers the same module object under the old name, so both names share one module.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from types import ModuleType

MOVED = {
    "tooliscode.loop": "tooliscode.openai.loop",
    "tooliscode.streaming": "tooliscode.openai.streaming",
    "tooliscode.testing": "tooliscode.openai.testing",
    "tooliscode.mcp_tools": "tooliscode.mcp.tools",
    "tooliscode.mcp_proxy": "tooliscode.mcp.proxy",
}


class _Moved(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name: str, path: object = None, target: object = None):
        return importlib.util.spec_from_loader(name, self) if name in MOVED else None

    def create_module(self, spec) -> ModuleType:
        return importlib.import_module(MOVED[spec.name])

    def exec_module(self, module: ModuleType) -> None:
        """The module ran already, under its new name."""


def install() -> None:
    if not any(isinstance(f, _Moved) for f in sys.meta_path):
        sys.meta_path.append(_Moved())
