"""The `tooliscode` command.

    tooliscode repl mypkg.tools:TOOLS                 # or just: tooliscode mypkg.tools:TOOLS
    tooliscode repl --mcp "uvx mcp-server-time" --mcp "mcp-server-git --repository ."
    tooliscode mcp --config servers.json             # code mode for any MCP client
    tooliscode serve --upstream http://localhost:11434/v1 --model qwq
    tooliscode warmup --runtime all                  # compile ahead of time (container builds)

Each subcommand is a module with `arguments(parser)` and `run(args)`, listed in `COMMANDS`, so a
new one is one module and one entry.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from . import _mcp, _repl, _serve, _warmup

__all__ = ["COMMANDS", "Command", "main"]


@dataclass(frozen=True)
class Command:
    """One subcommand."""

    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


COMMANDS: dict[str, Command] = {
    "repl": Command("run cells over a tool collection and see exactly what the model sees",
                    _repl.arguments, _repl.run),
    "mcp": Command("serve code mode over MCP: one run_python tool (and search_tools) fronting "
                   "the MCP servers of a config file", _mcp.arguments, _mcp.run),
    "serve": Command("an OpenAI-compatible server giving tool calling to an upstream model "
                     "without it: the model writes Python, its calls become tool_calls",
                     _serve.arguments, _serve.run),
    "warmup": Command("compile the sandbox's runtimes and prepare their start images ahead of "
                      "time (for container builds)", _warmup.arguments, _warmup.run),
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

