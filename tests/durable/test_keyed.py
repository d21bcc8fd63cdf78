"""`store=` on the keyed layers: conversations that move between code tools (as between worker
processes) and come back after eviction with their state."""

from __future__ import annotations

import time

from tooliscode import ToolIsCode
from tooliscode.codetool import CodeTool
from tooliscode.durable import FolderStore


def bump(n: int) -> int:
    """Add a hundred."""
    return n + 100


def _saved(code: CodeTool, key: str) -> None:
    """Wait for the save that follows a call (it runs on another thread)."""
    deadline = time.monotonic() + 60
    entry = code.keeper._entry(key)
    while entry.lock.locked():
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_a_conversation_moves_between_code_tools_sharing_a_store(tmp_path):
    store = FolderStore(tmp_path)
    with ToolIsCode([bump], store=store) as a, ToolIsCode([bump], store=store) as b:
        assert a.run_code("x = bump(1)", key="c1").ok
        _saved(a.code, "c1")
        reply = b.run_code("x += 1\nprint(x)", key="c1")
        assert reply.text.strip() == "102", reply.text
        _saved(b.code, "c1")
        assert a.run_code("print(x)", key="c1").text.strip() == "102"  # a saw b's cell
        assert "x" not in a.run_code("print(sorted(globals()))", key="c2").text


def test_an_evicted_conversation_is_saved_not_lost(tmp_path):
    code = CodeTool([bump], store=FolderStore(tmp_path), max_sessions=1)
    try:
        assert code.run_code("kept = [1, 2, 3]", key="first").ok
        _saved(code, "first")
        assert code.run_code("other = 1", key="second").ok  # evicts "first" here
        _saved(code, "second")
        reply = code.run_code("print(kept)", key="first")
        assert reply.text.strip() == "[1, 2, 3]", reply.text
        assert "closed" not in reply.text
    finally:
        code.close()
