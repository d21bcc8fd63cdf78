"""MCP servers the tests start: ours (`inventory.py`) and how to reach them."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

INVENTORY = str(Path(__file__).with_name("inventory.py"))


def installed(script: str) -> str:
    """The path of a console script installed beside this Python (a PyPI MCP server), or skip."""
    found = Path(sys.executable).with_name(script)
    path = str(found) if found.exists() else shutil.which(script)
    if path is None:
        pytest.skip(f"{script} is not installed (pip install {script})")
    return path


def git_repo(path: Path) -> Path:
    """A repository with three commits (by Ada, Bob, Ada) and `a.txt` changed, not staged."""

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    for i, (author, name) in enumerate([("Ada", "a.txt"), ("Bob", "b.txt"), ("Ada", "c.txt")]):
        (path / name).write_text(f"file {i}\n")
        git("add", name)
        git("-c", f"user.name={author}", "-c", f"user.email={author.lower()}@example.org",
            "commit", "-q", "-m", f"add {name}")
    (path / "a.txt").write_text("changed\n")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def inventory_over_http(startup_s: float = 30.0) -> Iterator[str]:
    """Run `inventory.py` as a streamable HTTP server on localhost; yields its URL."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, INVENTORY, "--http", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + startup_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the HTTP MCP server exited: {proc.stderr.read().decode()}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            if time.monotonic() > deadline:
                raise TimeoutError("the HTTP MCP server did not start")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
