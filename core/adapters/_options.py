"""What every front end takes, with one set of defaults.

Adapters accept these as keyword arguments (typed by `OptionArgs`) and keep them as one
`Options`; the defaults live here only, so a conversation is kept as long, and as many are
kept, whichever framework runs it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from typing_extensions import TypedDict

from ..codetool import CodeTool, Toolbox
from ..durable import Keeper, SessionStore
from ..engine import Limits, OnOutput
from ..prompt import CODE_TOOL_NAME
from ..runtime import Runtime, python_note
from ..tools import Caller, check_callers
from ._output import OutputSink, forward

__all__ = ["CommonArgs", "OptionArgs", "Options", "Placement"]

Placement = Literal["auto", "description", "prompt"]
"""Where the guide and the catalog go: `"auto"`, the system prompt when the front end can put
them there itself, else the code tool's description; `"description"`, always the description;
`"prompt"`, never the description (the front end's `instructions` are then yours to place
where it cannot)."""

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True, kw_only=True)
class Options:
    """The sandbox's options, as every front end takes them."""

    runtime: Runtime | str | None = None
    """The sandbox's Python: "default" (CPython 3.14) or "data" (numpy, pandas, ...)."""
    limits: Limits | None = None
    """Per cell: wall time, memory, output, tool calls (see `Limits`)."""
    store: SessionStore | Keeper | None = None
    """Keeps each conversation's interpreter where every worker process finds it."""
    max_sessions: int | None = 64
    """How many conversations keep an interpreter; the least recently used goes first."""
    idle_timeout_s: float | None = 1800.0
    """A conversation idle this long loses its interpreter."""
    callers: Mapping[str, Caller] = field(default_factory=dict)
    """Who calls each tool: "code" (the default), "direct" (the model, beside the code tool,
    left out of the code) or "both"."""
    describe_names: bool = True
    """Say what the names of a cell that printed nothing hold (not only their names)."""
    instructions: Placement = "auto"
    name: str = CODE_TOOL_NAME
    """The code tool's name."""
    on_output: OutputSink | None = None
    """Given each chunk of what the code prints while it runs (an `OutputChunk`), beside the
    framework's own stream, or instead of it where the framework has none. Called on the
    running loop when the code tool runs async (an awaitable it returns is awaited), else on
    the sandbox's thread."""

    def __post_init__(self) -> None:
        if self.instructions not in ("auto", "description", "prompt"):
            raise ValueError("instructions must be 'auto', 'description' or 'prompt', not "
                             f"{self.instructions!r}")
        if self.max_sessions is not None and self.max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, not {self.max_sessions}")
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise ValueError("the code tool's name must be 1-64 letters, digits, '_' or '-' "
                             f"(as model APIs take tool names), not {self.name!r}")
        object.__setattr__(self, "callers", check_callers(self.callers, self.callers))

    @classmethod
    def of(cls, options: Options | None = None, **changes: object) -> Options:
        """`options` (or the defaults) with `changes`."""
        return dataclasses.replace(options or cls(), **changes)  # type: ignore[arg-type]

    def code_only(self, who: str) -> Options:
        """These options, for a front end whose tools only code calls (`who` says so):
        `callers` has no meaning there, and is refused."""
        if self.callers:
            raise ValueError(f"{who}: callers= has no meaning here")
        return self

    def args(self) -> OptionArgs:
        """These options as keyword arguments, to make another front end like this one."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[return-value]

    @property
    def python(self) -> str:
        """Which Python the sandbox runs, as the guide says it."""
        return python_note(self.runtime)

    def output(self, call_id: str, sink: OutputSink | None = None) -> OnOutput | None:
        """The `on_output` of code tool call `call_id`: its chunks to the framework's `sink`
        and to `on_output`; None when neither watches (nothing streams then)."""
        return forward(call_id, sink, self.on_output)

    def in_description(self, prompted: bool) -> bool:
        """Whether the catalog rides in the code tool's description, for a front end that
        puts it in the system prompt itself (`prompted`) or one that cannot."""
        return self.instructions == "description" or (self.instructions == "auto"
                                                       and not prompted)

    def code_tool(self, tools: Toolbox | None = None, *, keep_spare: bool = False,
                  workdir: str | Path | None = None) -> CodeTool:
        """The code tool these options describe."""
        return CodeTool(tools if tools is not None else (), limits=self.limits,
                        runtime=self.runtime, workdir=workdir,
                        describe_names=self.describe_names, idle_timeout_s=self.idle_timeout_s,
                        max_sessions=self.max_sessions, keep_spare=keep_spare, store=self.store)


class CommonArgs(TypedDict, total=False):
    """`Options` as keyword arguments, but the code tool's name (for a front end whose own
    `name` is another thing's: an MCP server's)."""

    runtime: Runtime | str | None
    limits: Limits | None
    store: SessionStore | Keeper | None
    max_sessions: int | None
    idle_timeout_s: float | None
    callers: Mapping[str, Caller]
    describe_names: bool
    instructions: Placement
    on_output: OutputSink | None


class OptionArgs(CommonArgs, total=False):
    """`Options` as keyword arguments (`**options: Unpack[OptionArgs]`)."""

    name: str
