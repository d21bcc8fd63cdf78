"""The servers file of `tooliscode mcp`: the `mcpServers` shape MCP clients already use.

    {"mcpServers": {
        "git":  {"command": "uvx", "args": ["mcp-server-git"], "env": {"GIT_PAGER": "cat"}},
        "shop": {"url": "https://shop.example/mcp",
                 "headers": {"Authorization": "Bearer ${SHOP_TOKEN}"},
                 "include": ["list_items"], "timeout_s": 20,
                 "callers": {"list_items": "both", "checkout": "direct"}}}}

So a client's existing configuration can be copied as it is. `${NAME}` and `${NAME:-default}`
in commands, arguments, values of `env` and `headers`, `cwd` and `url` are read from the
environment, so secrets need not be written into the file. Keys that other clients add
(`disabled`, `autoApprove`, ...) are accepted; `disabled: true` leaves a server out.
`callers` says who calls each of a server's tools, by its MCP name: "code" (the default),
"direct" (a tool of the proxy's own, beside `run_python`, left out of the code) or "both".
JSON always; TOML (`[mcpServers.git]`) on Python 3.11 and later.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ToolIsCodeError
from ..tools import CALLERS, Caller

__all__ = ["ConfigError", "UpstreamConfig", "load_config", "parse_config"]

_log = logging.getLogger("tooliscode")

_OURS = {"command", "args", "env", "cwd", "url", "headers", "type", "transport", "include",
         "timeout_s", "disabled", "callers"}
_THEIRS = {"autoApprove", "alwaysAllow", "description", "name", "enabled", "trust", "envFile",
           "timeout", "disabledTools", "note", "notes"}
"""Keys other MCP clients write into the same file; accepted without a warning."""
_HTTP = {"http", "streamable-http", "streamable_http", "streamableHttp"}
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class ConfigError(ToolIsCodeError, ValueError):
    """The servers file cannot be used; the message says where and why."""


@dataclass(frozen=True)
class UpstreamConfig:
    """One upstream MCP server: a command run over stdio, or a streamable HTTP URL."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] | None = None
    include: tuple[str, ...] | None = None
    timeout_s: float | None = None
    callers: Mapping[str, Caller] | None = None
    """Who calls each tool, by its MCP name (see the module's docstring)."""

    @property
    def namespace(self) -> str:
        """What the code calls the server's tools under (`namespace.tool`)."""
        from ._tools import mcp_namespace

        return mcp_namespace(self.name)

    @property
    def qualified_callers(self) -> dict[str, Caller]:
        """`callers` by the tools' names in the code, as `CodeModeProxy(callers=...)` takes."""
        return {f"{self.namespace}.{tool}": caller for tool, caller in (self.callers or {}).items()}

    @property
    def target(self) -> str:
        """What the server is, for messages: its command line or URL."""
        return self.url or " ".join([self.command or "", *self.args]).strip()

    def server(self) -> Any:
        """A `tooliscode.MCPServer` for this entry (not started)."""
        from ._client import MCPServer

        options: dict[str, Any] = {"name": self.namespace, "timeout_s": self.timeout_s,
                                   "include": self.include}
        if self.url is not None:
            return MCPServer.http(self.url, headers=self.headers, **options)
        assert self.command is not None
        return MCPServer.stdio(self.command, self.args, self.env, cwd=self.cwd, **options)


def load_config(path: str | os.PathLike[str]) -> list[UpstreamConfig]:
    """The enabled servers of a JSON (or, by its `.toml` suffix, TOML) servers file."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the servers file {file}: {exc.strerror or exc}") from None
    try:
        if file.suffix.lower() == ".toml" and sys.version_info >= (3, 11):
            import tomllib

            data = tomllib.loads(text)
        elif file.suffix.lower() == ".toml":
            raise ImportError("tomllib")  # Python 3.10: said below
        else:
            data = json.loads(text)
    except ImportError:
        raise ConfigError(f"{file}: TOML needs Python 3.11 or later; use JSON") from None
    except ValueError as exc:  # json.JSONDecodeError and tomllib.TOMLDecodeError both are
        raise ConfigError(f"{file}: not valid {file.suffix.lstrip('.').upper() or 'JSON'}: "
                          f"{exc}") from None
    return parse_config(data, str(file))


def parse_config(data: Any, source: str = "config") -> list[UpstreamConfig]:
    """The enabled servers of an already-parsed servers file; `source` names it in errors."""
    if not isinstance(data, Mapping):
        raise ConfigError(f'{source}: expected an object with "mcpServers", got '
                          f"{type(data).__name__}")
    key = "mcpServers" if "mcpServers" in data else "servers" if "servers" in data else None
    if key is None:
        raise ConfigError(f'{source}: no "mcpServers" object (the shape MCP clients use: '
                          '{"mcpServers": {"name": {"command": ..., "args": [...]}}})')
    servers = data[key]
    if not isinstance(servers, Mapping) or not servers:
        raise ConfigError(f'{source}: "{key}" must be an object naming at least one server')
    out = []
    for name, entry in servers.items():
        where = f"{source}: {key}.{name}"
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{where}: expected an object, got {type(entry).__name__}")
        if entry.get("disabled") is True or entry.get("enabled") is False:
            continue
        out.append(_server(str(name), entry, where))
    if not out:
        raise ConfigError(f"{source}: every server is disabled")
    return out


def _server(name: str, entry: Mapping[str, Any], where: str) -> UpstreamConfig:
    unknown = sorted(set(entry) - _OURS - _THEIRS)
    if unknown:
        _log.warning("%s: ignoring unknown keys %s", where, ", ".join(unknown))
    kind = entry.get("type", entry.get("transport"))
    if kind is not None and kind != "stdio" and kind not in _HTTP:
        hint = " (SSE is not supported; use the server's streamable HTTP URL)" if kind == "sse" \
            else ""
        raise ConfigError(f'{where}: unknown "type" {kind!r}{hint}')
    has_command, has_url = "command" in entry, "url" in entry
    if has_command == has_url:
        raise ConfigError(f'{where}: give either "command" (a server run over stdio) or "url" '
                          "(streamable HTTP)" + (", not both" if has_command else ""))
    timeout = entry.get("timeout_s")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or timeout <= 0):
        raise ConfigError(f'{where}.timeout_s: expected a positive number of seconds, got '
                          f"{timeout!r}")
    include = entry.get("include")
    common: dict[str, Any] = {
        "include": tuple(_strings(include, f"{where}.include")) if include is not None
              else None, "timeout_s": timeout, "callers": _callers(entry.get("callers"), where)}
    if has_url:
        url = _string(entry["url"], f"{where}.url")
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"{where}.url: expected an http(s) URL, got {url!r}")
        return UpstreamConfig(name, url=url, headers=_table(entry.get("headers"),
                                                            f"{where}.headers"), **common)
    cwd = entry.get("cwd")
    return UpstreamConfig(
        name, command=_string(entry["command"], f"{where}.command"),
        args=tuple(_strings(entry.get("args", []), f"{where}.args")),
        env=_table(entry.get("env"), f"{where}.env"),
        cwd=_string(cwd, f"{where}.cwd") if cwd is not None else None, **common)


def _callers(value: Any, where: str) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ConfigError(f'{where}.callers: expected an object of tool names to "code", '
                          f'"direct" or "both", got {value!r}')
    for tool, caller in value.items():
        if caller not in CALLERS:
            raise ConfigError(f"{where}.callers.{tool}: expected one of {', '.join(CALLERS)}, "
                              f"got {caller!r}")
    return {str(k): str(v) for k, v in value.items()}


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}: expected a non-empty string, got {value!r}")
    return _expand(value, where)


def _strings(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: expected a list of strings, got {value!r}")
    return [_expand(v, where) for v in value]


def _table(value: Any, where: str) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(isinstance(v, (str, int, float))
                                                 and not isinstance(v, bool)
                                                 for v in value.values()):
        raise ConfigError(f"{where}: expected an object of strings, got {value!r}")
    return {str(k): _expand(str(v), f"{where}.{k}") for k, v in value.items()}


def _expand(text: str, where: str) -> str:
    def value(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = os.environ.get(name)
        if found is None and default is None:
            raise ConfigError(f"{where}: the environment variable {name} is not set "
                              f"(write ${{{name}:-default}} to give a default)")
        return found if found is not None else default

    return _VARIABLE.sub(value, text)
