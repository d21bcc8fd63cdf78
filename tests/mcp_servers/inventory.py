"""A small MCP server of our own for the tests: `python inventory.py [--http PORT]`.

Its tools cover each kind of result a client must handle: structured objects, wrapped
structured values (lists, numbers), plain text, several content blocks, errors, a slow call.
"""

from __future__ import annotations

import asyncio
import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

server = MCPServer("inventory", instructions="A toy shop's stock, for tests.", log_level="WARNING")

STOCK = {
    "A1": {"sku": "A1", "name": "anvil", "category": "tools", "price": 120.0, "qty": 3},
    "B2": {"sku": "B2", "name": "bucket", "category": "garden", "price": 8.5, "qty": 40},
    "C3": {"sku": "C3", "name": "chisel", "category": "tools", "price": 14.0, "qty": 0},
    "D4": {"sku": "D4", "name": "dahlia seeds", "category": "garden", "price": 3.25, "qty": 120},
}


class Item(BaseModel):
    sku: str
    name: str
    category: str
    price: float
    qty: int


@server.tool()
def list_items(category: str | None = None) -> list[Item]:
    """Every item in stock, optionally of one category."""
    return [Item(**i) for i in STOCK.values() if category in (None, i["category"])]


@server.tool()
def get_item(sku: str) -> Item:
    """One item by its SKU."""
    if sku not in STOCK:
        raise ToolError(f"no item with SKU {sku!r}")
    return Item(**STOCK[sku])


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool(structured_output=False)
def describe(sku: str) -> str:
    """A sentence about one item, as plain text."""
    item = STOCK[sku]
    return f"{item['name']} costs {item['price']:.2f} and {item['qty']} are left"


@server.tool(name="word-count", structured_output=False)
def word_count(text: str) -> list[str]:
    """Words and their count, one text block each."""
    words = text.split()
    return [f"words: {len(words)}", f"longest: {max(words, key=len) if words else ''}"]


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then say so."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def process_id() -> int:
    """The server's process id (to check start and stop)."""
    return os.getpid()


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
