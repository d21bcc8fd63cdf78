"""The kit every front end stands on: one layer above `codetool`, below the front ends.

A front end (an agent framework's adapter, `ToolIsCode`, the MCP proxy) takes `Options` (one
set of defaults), declares its framework's tools once as `Binding`s into a `Tools` set (the
sandbox's functions and the `Catalog` the model reads, built once per tool set), hands each
call of its code tool a `Cell`, and offers the same `Facade` over its interpreters. What is
its framework's own it supplies as `Hooks`: how a tool is declared and called, which
conversation a call belongs to, how a reply becomes the framework's content, and how a pause
becomes its pending structure. A framework's stop signals that do not cancel the task running
the code (a time limit it leaves to the tool, a flag) become a `Cancel` (`cancel_after`,
`cancel_when`).
"""

from ._arguments import CodeArgs, code_of, variables_code
from ._binding import Approval, Binding, callable_parameters
from ._cancel import cancel_after, cancel_when
from ._catalog import Catalog
from ._cell import Cell, running
from ._evaluated import evaluated
from ._facade import Facade, ToolsFacade
from ._hooks import Hooks
from ._options import CommonArgs, OptionArgs, Options, Placement
from ._output import OUTPUT_EVENT, OutputChunk, OutputSink, forward
from ._tools import Tools, unapproved

__all__ = ["OUTPUT_EVENT", "Approval", "Binding", "Catalog", "Cell", "CodeArgs", "CommonArgs",
           "Facade", "Hooks", "OptionArgs", "Options", "OutputChunk", "OutputSink", "Placement",
           "Tools", "ToolsFacade", "callable_parameters", "cancel_after", "cancel_when",
           "code_of", "evaluated", "forward", "running", "unapproved", "variables_code"]
