"""A real Redis server for the durable-session tests."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time

import pytest
from tooliscode import Session


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    """A real Redis server on loopback (redis-server from the system's packages; .ci/run
    installs it)."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server is not installed (apt-get install redis-server)")
    port = free_port()
    folder = tmp_path_factory.mktemp("redis")
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", str(folder)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    yield f"redis://127.0.0.1:{port}/0"
    proc.terminate()
    proc.wait(10)




@pytest.fixture(scope="session")
def data_runtime():
    """The data runtime, with its start image made (exact snapshots are deltas against it)."""
    from tooliscode.runtime import runtime_named

    runtime = runtime_named("data")
    with Session([], runtime=runtime):  # the first guest starts the image's build
        pass
    assert runtime.images.wait(300), "the memory image could not be made"
    return runtime
