"""A code tool over keyed conversations: `CodeTool` runs code for a conversation or a run,
renders the result for a model, and keeps, replaces and evicts the interpreters behind it.
Every front end (ToolIsCode, the framework adapters, the MCP proxy, serve, text mode, the
REPL) runs code through it. `Closing` gives the things that hold interpreters `with` and
`async with`; `require_key` is the API-key check every server front end applies."""

from .._closing import Closing, Starting
from ._api_key import UNAUTHORIZED, key_matches, require_key
from ._code_tool import CodeTool
from ._reply import Outcome, Reply
from ._sandbox import Sandbox, Toolbox, ToolFactory, fingerprint
from ._steps import Step, Steps, adrive, drive

__all__ = ["UNAUTHORIZED", "Closing", "CodeTool", "Outcome", "Reply", "Sandbox", "Starting",
           "Step", "Steps", "ToolFactory", "Toolbox", "adrive", "drive", "fingerprint",
           "key_matches", "require_key"]
