"""A terminal REPL that shows a person exactly what the model sees, and runs cells like it.

It prints the tool list and instructions the model is given (with their token counts), then
runs each cell typed (or piped) through `ToolIsCode.run_code`, showing what it prints as it
prints it, then the very text the model would read back.
"""

from __future__ import annotations

import argparse
import ast
import codeop
import importlib
import importlib.util
import json
import shlex
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TextIO

from ..adapters import OutputChunk
from ..codetool import Reply
from ..engine import Limits
from ..openai import ToolIsCode
from ..prompt import TOKENIZER, count_tokens
from ..tools import Tool, ToolRegistry
from ._options import runtime_argument, use_runtime

__all__ = ["Repl", "arguments", "load_attribute", "load_mcp", "load_tools", "run"]

_HELP = """\
Type Python; a complete statement runs at once, a block runs after a blank line.
  :tools         the tool list sent to the model      :instructions  the system prompt part
  :files         files in the session folder          :reset         forget all variables
  :help          this text                            :quit          leave (or end of input)
  %%             on its own line: run what was typed so far"""


def load_attribute(spec: str) -> Any:
    """`package.module:attribute` or `path/to/file.py:attribute` (dots allowed after `:`)."""
    where, _, attribute = spec.rpartition(":")
    if not where or not attribute:
        raise ValueError(f"expected MODULE:ATTRIBUTE or FILE.py:ATTRIBUTE, got {spec!r}")
    if where.endswith(".py") or "/" in where:
        path = Path(where).resolve()
        module_spec = importlib.util.spec_from_file_location(path.stem, path)
        if module_spec is None or module_spec.loader is None:
            raise ValueError(f"cannot load {where}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules.setdefault(path.stem, module)
        module_spec.loader.exec_module(module)
    else:
        sys.path.insert(0, str(Path.cwd()))
        module = importlib.import_module(where)
    value: Any = module
    for part in attribute.split("."):
        value = getattr(value, part)
    return value


def load_tools(spec: str) -> list[Any]:
    """The tools an attribute names: one tool, a list of them, or a `ToolRegistry`."""
    value = load_attribute(spec)
    if isinstance(value, ToolRegistry):
        return list(value)
    if isinstance(value, (Tool, dict)) or callable(value):
        return [value]
    if isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
        return list(value)
    raise TypeError(f"{spec} is a {type(value).__name__}, not a tool or a list of tools")


def load_mcp(target: str, stack: ExitStack) -> list[Tool]:
    """The tools of an MCP server: a command line (stdio) or an http(s) URL; the server is
    stopped when `stack` closes."""
    try:
        from ..mcp import MCPServer
    except ImportError as exc:
        raise SystemExit("MCP servers need the mcp extra: pip install 'tooliscode[mcp]' "
                         f"({exc})") from None
    if target.startswith(("http://", "https://")):
        server = MCPServer.http(target)
    else:
        command, *args = shlex.split(target)
        server = MCPServer.stdio(command, args)
    server.start()
    stack.callback(server.close)
    return server.tools()


def _compiler() -> Callable[[str], Any]:
    compiler = codeop.CommandCompiler()
    compiler.compiler.flags |= ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    return compiler


class Repl:
    """Reads cells from `stdin`, runs them in `toolset`'s session, writes to `stdout`."""

    def __init__(self, toolset: ToolIsCode, stdin: TextIO = sys.stdin,
                 stdout: TextIO = sys.stdout, prompt: bool | None = None):
        self.toolset = toolset
        self.stdin, self.stdout = stdin, stdout
        self.prompt = stdin.isatty() if prompt is None else prompt
        self._count = 0
        self._compile = _compiler()

    def say(self, text: str = "") -> None:
        print(text, file=self.stdout, flush=True)

    def show_setup(self) -> None:
        tools = json.dumps(self.toolset.tools, indent=2)
        text = self.toolset.instructions
        self.say(f"(tokens are counted as {TOKENIZER})")
        self.say(f"=== tools sent to the model ({count_tokens(tools):,} tokens) ===")
        self.say(tools)
        self.say(f"\n=== instructions ({count_tokens(text):,} tokens) ===")
        self.say(text)
        self.say(f"\n{len(self.toolset.registry)} tools. :help for commands.")

    def run_cell(self, code: str) -> str:
        """Run `code` as the model's next call, showing what it prints as it prints it;
        returns (and prints) what the model reads."""
        self._count += 1
        live = _Live(self.stdout)
        out = self.toolset.run_code(code, call_id=f"repl_{self._count}", on_output=live)
        live.end()
        text = out.text
        self.say(f"--- the model reads ({count_tokens(text):,} tokens) ---")
        self.say(text)
        self._where_images(out)
        if out.has_final:
            self.say(f"--- final answer: {out.final!r}")
        return text

    def _where_images(self, out: Reply) -> None:
        """Where each image the cell made is on this machine, to open it."""
        if not out.images:
            return
        folder = self.toolset.session().workdir
        for image in out.images:
            self.say(f"--- image: {folder / image.path} ({image.width}x{image.height} px, "
                     f"{len(image.data):,} bytes)")

    def command(self, line: str) -> bool:
        """Run a `:command`; False means quit."""
        name = line.strip()[1:].split()[0] if line.strip()[1:] else "help"
        if name in ("quit", "exit", "q"):
            return False
        if name == "tools":
            self.say(json.dumps(self.toolset.tools, indent=2))
        elif name == "instructions":
            self.say(self.toolset.instructions)
        elif name == "files":
            files = self.toolset.session().files()
            self.say("\n".join(f"{f.path}  {f.size:,} bytes" for f in files) or "(no files)")
        elif name == "reset":
            self.toolset.session().reset()
            self.say("(all variables forgotten; files kept)")
        else:
            self.say(_HELP)
        return True

    def cells(self) -> Iterator[str]:
        """Cells as typed: `:commands` come through as they are."""
        buffer: list[str] = []
        while True:
            if self.prompt:
                self.stdout.write("... " if buffer else ">>> ")
                self.stdout.flush()
            line = self.stdin.readline()
            if not line:
                break
            line = line.rstrip("\n")
            if not buffer and line.startswith(":"):
                yield line
                continue
            if line.strip() == "%%":
                if buffer:
                    yield "\n".join(buffer)
                buffer = []
                continue
            if not buffer and not line.strip():
                continue
            buffer.append(line)
            if self._complete(buffer):
                yield "\n".join(buffer).rstrip()
                buffer = []
        if any(b.strip() for b in buffer):
            yield "\n".join(buffer)

    def _complete(self, lines: list[str]) -> bool:
        """Whether the lines make a whole cell, by the rules of Python's own REPL (a block
        ends with a blank line)."""
        try:
            return self._compile("\n".join(lines)) is not None
        except (SyntaxError, ValueError, OverflowError):
            return True  # let the sandbox report it, in its own words

    def loop(self) -> None:
        for cell in self.cells():
            if cell.startswith(":"):
                if not self.command(cell):
                    break
                continue
            self.run_cell(cell)


class _Live:
    """What a cell prints, written out as it comes (on the sandbox's thread), under a line
    that tells it from what the model reads after."""

    HEADER = "--- printed as it ran ---\n"

    def __init__(self, stdout: TextIO):
        self.stdout = stdout
        self.last = ""

    def __call__(self, chunk: OutputChunk) -> None:
        if not self.last:
            self.stdout.write(self.HEADER)
        self.stdout.write(chunk.text)
        self.stdout.flush()
        self.last = chunk.text

    def end(self) -> None:
        if self.last and not self.last.endswith("\n"):
            self.stdout.write("\n")


def arguments(parser: argparse.ArgumentParser) -> None:
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


def run(args: argparse.Namespace) -> int:
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
