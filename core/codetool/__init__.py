"""A code tool over keyed conversations: `CodeTool` runs code for a conversation or a run,
renders the result for a model, and keeps, replaces and evicts the interpreters behind it.
Every front end (ToolIsCode, the framework adapters, the MCP proxy, serve, text mode, the
REPL) runs code through it."""

from .codetool import CodeTool
from .reply import Reply
from .sandbox import Sandbox, Toolbox, ToolFactory, fingerprint

__all__ = ["CodeTool", "Reply", "Sandbox", "ToolFactory", "Toolbox", "fingerprint"]
