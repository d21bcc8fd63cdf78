"""MCP: servers as sources of sandbox tools, MCP tool conversion, the servers file, and the
code-mode proxy (`tooliscode mcp`)."""
