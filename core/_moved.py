"""Import paths of earlier releases, kept working for a while after the modules moved.

`import tooliscode.loop` finds the module at its new home and registers the same module object
under the old name, so both names share one module; a `DeprecationWarning` names where to
import from now and the release that drops the old path.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType

__all__ = ["MOVED", "REMOVED_IN", "install"]

REMOVED_IN = "0.3.0"
MOVED: dict[str, tuple[str, str]] = {
    # Not here: old paths whose last part is now a public name of the package
    # (`tooliscode.prompt.render`): importing them would rebind that name to the module.
    # old path: (the module now, the public place to import its names from)
    "tooliscode.loop": ("tooliscode.openai._loop", "tooliscode.openai"),
    "tooliscode.streaming": ("tooliscode.openai._streaming", "tooliscode.openai"),
    "tooliscode.testing": ("tooliscode.openai.testing", "tooliscode.openai.testing"),
    "tooliscode.mcp_tools": ("tooliscode.mcp._tools", "tooliscode.mcp"),
    "tooliscode.mcp_proxy": ("tooliscode.mcp._proxy", "tooliscode.mcp"),
    "tooliscode.closing": ("tooliscode._closing", "tooliscode.codetool"),
    "tooliscode.tools.tool": ("tooliscode.tools._tool", "tooliscode.tools"),
    "tooliscode.tools.registry": ("tooliscode.tools._registry", "tooliscode.tools"),
    "tooliscode.tools.schema": ("tooliscode.tools._schema", "tooliscode.tools"),
    "tooliscode.tools.stubs": ("tooliscode.tools._stubs", "tooliscode.tools"),
    "tooliscode.prompt.codetool": ("tooliscode.prompt._guide", "tooliscode.prompt"),
    "tooliscode.prompt.images": ("tooliscode.prompt._images", "tooliscode.prompt"),
    "tooliscode.prompt.tokens": ("tooliscode.prompt._tokens", "tooliscode.prompt"),
    "tooliscode.engine.limits": ("tooliscode.engine._limits", "tooliscode.engine"),
    "tooliscode.engine.result": ("tooliscode.engine._result", "tooliscode.engine"),
    "tooliscode.engine.session": ("tooliscode.engine._session", "tooliscode.engine"),
    "tooliscode.codetool.codetool": ("tooliscode.codetool._code_tool", "tooliscode.codetool"),
    "tooliscode.codetool.reply": ("tooliscode.codetool._reply", "tooliscode.codetool"),
    "tooliscode.codetool.sandbox": ("tooliscode.codetool._sandbox", "tooliscode.codetool"),
    "tooliscode.durable.envelope": ("tooliscode.engine._envelope", "tooliscode.durable"),
    "tooliscode.durable.keeper": ("tooliscode.durable._keeper", "tooliscode.durable"),
    "tooliscode.durable.store": ("tooliscode.durable._store", "tooliscode.durable"),
    "tooliscode.durable.folder_store": ("tooliscode.durable._folder_store", "tooliscode.durable"),
    "tooliscode.durable.redis_store": ("tooliscode.durable._redis_store", "tooliscode.durable"),
    "tooliscode.openai.loop": ("tooliscode.openai._loop", "tooliscode.openai"),
    "tooliscode.openai.streaming": ("tooliscode.openai._streaming", "tooliscode.openai"),
    "tooliscode.openai.textmode": ("tooliscode.openai._text_mode", "tooliscode.openai"),
    "tooliscode.openai.toolcall": ("tooliscode.openai._tool_call", "tooliscode.openai"),
    "tooliscode.openai.toolset": ("tooliscode.openai._toolset", "tooliscode.openai"),
    "tooliscode.mcp.client": ("tooliscode.mcp._client", "tooliscode.mcp"),
    "tooliscode.mcp.config": ("tooliscode.mcp._config", "tooliscode.mcp"),
    "tooliscode.mcp.proxy": ("tooliscode.mcp._proxy", "tooliscode.mcp"),
    "tooliscode.mcp.tools": ("tooliscode.mcp._tools", "tooliscode.mcp"),
    "tooliscode.serve.cli": ("tooliscode.cli._main", "tooliscode.cli"),
    "tooliscode.serve.server": ("tooliscode.serve._server", "tooliscode.serve"),
    "tooliscode.runtime.wasmtime_wasi": ("tooliscode.runtime.default._runtime",
                                         "tooliscode.runtime"),
    "tooliscode.runtime.wasi_python": ("tooliscode.runtime.data._runtime", "tooliscode.runtime"),
}


class _Moved(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name: str, path: object = None,
                  target: object = None) -> importlib.machinery.ModuleSpec | None:
        return importlib.util.spec_from_loader(name, self) if name in MOVED else None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        now, public = MOVED[spec.name]
        warnings.warn(f"{spec.name} is deprecated and will be removed in tooliscode "
                      f"{REMOVED_IN}: import from {public} instead", DeprecationWarning,
                      stacklevel=2)  # `warnings` skips the import machinery's frames
        return importlib.import_module(now)

    def exec_module(self, module: ModuleType) -> None:
        """The module ran already, under its new name."""


def install() -> None:
    if not any(isinstance(f, _Moved) for f in sys.meta_path):
        sys.meta_path.append(_Moved())
