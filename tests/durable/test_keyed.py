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
        _saved(a.code_tool, "c1")
        reply = b.run_code("x += 1\nprint(x)", key="c1")
        assert reply.text.strip() == "102", reply.text
        _saved(b.code_tool, "c1")
        assert a.run_code("print(x)", key="c1").text.strip() == "102"  # a saw b's cell
        assert "x" not in a.run_code("print(sorted(globals()))", key="c2").text


def test_a_conversation_that_comes_back_holds_only_what_the_other_worker_left(tmp_path):
    """The worker it comes back to still has its older interpreter (loaded in place on the
    default runtime): nothing of that older state may outlive what the other worker did."""
    store = FolderStore(tmp_path / "store")
    with ToolIsCode([bump], store=store) as a, ToolIsCode([bump], store=store) as b:
        assert a.run_code("y = 5\nz = 1\nopen('old.txt', 'w').write('old')", key="c").ok
        _saved(a.code_tool, "c")
        assert b.run_code("del y\nimport os\nos.remove('old.txt')\n"
                          "open('new.txt', 'w').write('new')\nz += 1", key="c").ok
        _saved(b.code_tool, "c")
        look = ("import os\nprint('y' in globals(), z, "
                        "sorted(n for n in os.listdir('.') if n[0] != '.'))")
        reply = a.run_code(look, key="c")
        assert reply.text.strip() == "False 2 ['new.txt']", reply.text


def test_a_plain_session_that_comes_back_holds_only_the_newer_state(tmp_path):
    """The same through `Keeper.checkout`, which reloads a session it still holds."""
    from tooliscode import Session
    from tooliscode.durable import Keeper

    store = FolderStore(tmp_path / "store")
    keepers = Keeper(store), Keeper(store)
    made: list[Session] = []

    def call(keeper: Keeper, code: str) -> str:
        session, _ = keeper.checkout(
            "k", lambda: made.append(Session([bump])) or made[-1],
            lambda blob: made.append(Session.restore(blob, [bump], announce=False))
            or made[-1])
        try:
            result = session.run(code)
        finally:
            keeper.checkin("k")
        assert result.ok, result.error
        return result.stdout.strip()

    try:
        call(keepers[0], "y = 5\nz = bump(1)\nopen('old.txt', 'w').write('old')")
        call(keepers[1], "del y\nimport os\nos.remove('old.txt')\nz += 1")
        held = len(made)
        seen = call(keepers[0], "import os\nprint('y' in globals(), z, "
                                "sorted(n for n in os.listdir('.') if n[0] != '.'))")
        assert seen == "False 102 []"
        if not made[0].runtime.exact:  # loaded into the session it held: none made
            assert len(made) == held
    finally:
        for keeper in keepers:
            keeper.close()


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
