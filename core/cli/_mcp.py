"""`tooliscode mcp`: code mode for any MCP client, fronting the MCP servers of a config file."""

from __future__ import annotations

import argparse
import os
import sys

from ._options import runtime_argument, use_runtime

__all__ = ["arguments", "run"]


def arguments(parser: argparse.ArgumentParser) -> None:
    runtime_argument(parser)
    parser.add_argument("--config", required=True, metavar="FILE",
                        help='the upstream servers, as MCP clients write them: {"mcpServers": '
                             '{"name": {"command": ..., "args": [...]} or {"url": ...}}} '
                             '(JSON; TOML when the name ends in .toml). A server\'s "callers": '
                             '{"tool": "direct" | "both"} serves those tools beside run_python')
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio",
                        help="serve one client on stdin/stdout, or streamable HTTP")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP: the address to listen on")
    parser.add_argument("--port", type=int, default=8000, help="HTTP: the port to listen on")
    parser.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                        help="time limit of one cell")
    parser.add_argument("--memory", type=int, default=512, metavar="MB",
                        help="memory limit of each client's interpreter")
    parser.add_argument("--api-key", metavar="KEY",
                        help="HTTP: clients must send this key as Authorization: Bearer <key> "
                             "(default: $TOOLISCODE_API_KEY; none: open to anyone who can "
                             "connect)")


def run(args: argparse.Namespace) -> int:
    import asyncio
    import logging

    from ..engine import Limits
    from ..mcp import CodeModeProxy, UpstreamError, load_config

    try:
        import mcp  # noqa: F401
    except ImportError as exc:
        raise ImportError("`tooliscode mcp` needs the mcp extra: "
                          "pip install 'tooliscode[mcp]'") from exc
    logging.basicConfig(level=logging.WARNING, format="tooliscode mcp: %(message)s")
    use_runtime(args)
    upstreams = load_config(args.config)
    limits = Limits(timeout_s=args.timeout, memory_bytes=args.memory * 1024 * 1024)
    proxy = CodeModeProxy({u.name: u.server() for u in upstreams}, limits=limits,
                          api_key=args.api_key or os.environ.get("TOOLISCODE_API_KEY"),
                          callers={k: v for u in upstreams
                                   for k, v in u.qualified_callers.items()})

    def say(text: str) -> None:
        print(f"tooliscode mcp: {text}", file=sys.stderr, flush=True)

    try:
        asyncio.run(proxy.run(args.transport, args.host, args.port, say=say))
    except UpstreamError as exc:
        targets = {u.name: u.target for u in upstreams}
        for name, why in exc.failures.items():
            say(f"the server {name!r} ({targets[name]}) failed to start: {why}")
        return 1
    except ValueError as exc:  # callers naming a tool no server has
        say(f"{args.config}: {exc}")
        return 1
    return 0
