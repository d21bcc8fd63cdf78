from __future__ import annotations

import asyncio
import importlib.util
import threading
import time

import pytest
from tooliscode import Limits, Session, ToolError

# tests/integrations/crewai runs in CrewAI's own environment (see its conftest.py and the Makefile).
collect_ignore = [] if importlib.util.find_spec("crewai") else ["integrations/crewai"]


def get_order(order_id: int) -> dict:
    """Look up one order.

    Args:
        order_id: The order's number.
    """
    if order_id < 0:
        raise ToolError(f"order {order_id} does not exist")
    return {"id": order_id, "status": "paid", "total": order_id * 1.5}


def whoami() -> str:
    """The name of the host thread running this tool."""
    return threading.current_thread().name


def slow(seconds: float, tag: str = "") -> str:
    """Sleep on the host, then echo the tag."""
    time.sleep(seconds)
    return tag


async def aslow(seconds: float, tag: str = "") -> dict:
    """Sleep asynchronously on the host."""
    loop = asyncio.get_running_loop()
    await asyncio.sleep(seconds)
    return {"tag": tag, "loop": id(loop)}


def explode(message: str = "kaboom") -> None:
    """Always fails."""
    raise ValueError(message)


@pytest.fixture
def tools():
    return [get_order, whoami, slow, aslow, explode]


@pytest.fixture
def session(tools):
    with Session(tools, limits=Limits(timeout_s=10)) as s:
        yield s


@pytest.fixture
def short_session(tools):
    """A session with a 1.5 s cell limit, for timeout tests."""
    with Session(tools, limits=Limits(timeout_s=1.5)) as s:
        yield s


@pytest.fixture
def next_run():
    """`next_run(code, run, tools)`: end the run, and take the next run's sandbox once its
    spare is ready (started, or renewed on the data runtime)."""
    def take(code, run, tools):
        code.finish(run, tools)
        deadline = time.monotonic() + 60  # a hang guard: a loaded machine may start slowly
        while time.monotonic() < deadline:
            spare = code.spare
            if spare is not None and spare.ready(tools) and not spare.lock.locked():
                return code.take()
            time.sleep(0.01)
        raise AssertionError("no spare was made ready")
    return take
