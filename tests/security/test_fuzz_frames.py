"""Random input through the host's frame handling: it always answers, never raises."""

from __future__ import annotations

import json
import marshal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tooliscode import Session

OPS = ["call", "start", "wait", "cancel", "search", "ready", "boot", "x", "", "done"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8),
                                                                       children, max_size=4),
    max_leaves=20,
)
messages = st.fixed_dictionaries(
    {"op": st.sampled_from([o for o in OPS if o not in ("ready", "done")])},
    optional={"name": st.one_of(st.text(max_size=12), st.sampled_from(["echo"]), json_values),
              "args": json_values, "ids": json_values, "timeout": json_values,
              "query": json_values, "limit": json_values},
)


def echo(value: object = None) -> object:
    """Returns its argument."""
    return value


@pytest.fixture(scope="module")
def worker():
    with Session([echo]) as s:
        yield s._state.worker


# 200 examples each: the frame parser is small and its branches are few (JSON or not, an op
# known or not, fields of the wrong type); more examples take seconds and find nothing new.
FIXTURES = HealthCheck.function_scoped_fixture

@settings(max_examples=200, deadline=None, suppress_health_check=[FIXTURES])
@given(frame=st.binary(max_size=300))
def test_random_bytes_always_get_a_dict_answer(worker, frame):
    reply = marshal.loads(worker._handle(frame))
    assert isinstance(reply, dict)


@settings(max_examples=200, deadline=None, suppress_health_check=[FIXTURES])
@given(message=messages)
def test_random_messages_always_get_a_dict_answer(worker, message):
    reply = marshal.loads(worker._handle(json.dumps(message).encode()))
    assert isinstance(reply, dict)
    assert "ok" in reply or "done" in reply or "modules" in reply


@pytest.fixture(scope="module")
def echo_session():
    """One interpreter for all the values: each example overwrites the same names and file."""
    with Session([echo]) as s:
        yield s


@settings(max_examples=60, deadline=None, suppress_health_check=[FIXTURES])
@given(value=json_values)
def test_random_values_cross_the_channel_unchanged(echo_session, value):
    s = echo_session
    s.write_file("v.json", json.dumps(value))
    r = s.run("import json\nv = json.load(open('v.json'))\nback = echo(value=v)\n"
              "json.dumps(back, sort_keys=True) == json.dumps(v, sort_keys=True)")
    assert r.ok and r.value == "True", (value, r.error)
