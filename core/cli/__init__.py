"""The `tooliscode` command line: one module per command, shared options in `_options.py`."""

from ._main import COMMANDS, Command, main

__all__ = ["COMMANDS", "Command", "main"]
