"""The release, in one place for the package and what it reports of itself (the MCP proxy)."""

__version__ = "0.1.0"
