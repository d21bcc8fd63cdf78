"""The fast paths of a tool call, against the general paths they stand in for.

The guest's plain binder (core/guest/plain.py) must give exactly what binding and checking
the general way gives, or None; the host's check of plain arguments (core/tools/_schema.py)
must give what pydantic gives. Both are run on the host here, over the corpus's tools.
"""

from __future__ import annotations

from typing import Any

import pytest
from golden.refresh import corpora, corpus_tools
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from tooliscode.guest.tools import ToolArgumentError, ToolFunction
from tooliscode.tools._schema import function_schema
from tooliscode.tools._stubs import guest_spec

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False),
                    st.sampled_from(["", "a", "2", "x y"]))


def _compiled(tool: Any) -> ToolFunction:
    fn = ToolFunction(guest_spec(tool))
    fn._compile(fn._schema)
    return fn


PLAIN = [fn for fn in (_compiled(t) for c in corpora() for t in corpus_tools(c))
         if fn._plain is not None and fn._params]


def test_the_corpus_has_plain_tools_to_check():
    assert len(PLAIN) >= 10


@pytest.mark.parametrize("fn", PLAIN, ids=lambda fn: fn.__name__)
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_the_plain_binder_binds_as_the_general_path_does(fn, data):
    args = tuple(data.draw(st.lists(SCALARS, max_size=len(fn._params))))
    fast = fn._plain(*args)
    try:
        general = fn._bind(args, {})
    except ToolArgumentError:
        assert fast is None, "the binder accepted a call the general path refuses"
        return
    if fast is not None:
        assert list(fast.items()) == list(general.items())


def test_the_plain_binder_takes_what_it_is_sure_of():
    spec = {"name": "f", "params": ["a", "b", "c"], "required": ["a"], "omit_none": ["c"],
            "keys": {"b": "b-key"},
            "schema": {"type": "object", "required": ["a"], "properties": {
                "a": {"type": "integer"}, "b-key": {"type": "string"},
                "c": {"type": "boolean"}}}}
    fn = ToolFunction(spec)
    fn._compile(fn._schema)
    assert fn._plain(1, "x", None) == {"a": 1, "b-key": "x"}
    assert fn._plain(1) == {"a": 1}
    assert fn._plain() is None  # missing: the general path words it
    assert fn._plain(1.0) is None  # an integral float: the full check decides
    assert fn._plain(1, 2) is None  # a wrong type: so do the words of the error
    with pytest.raises(ToolArgumentError, match="b must be str, not int"):
        fn._bind((1, 2), {})


def _typed(x: int, s: str = "a", f: float = 1.5, o: str | None = None, b: bool = False,
           anything: Any = None) -> None:
    """A tool with plain parameters."""


@pytest.mark.parametrize("arguments", [
    {"x": 1}, {"x": 1, "s": "q", "f": 2.5, "o": None, "b": True, "anything": [1]},
    {"x": 1, "o": "z"}, {"x": 1, "f": 2}, {"x": "1"}, {"x": True}, {"x": 1.0}, {"s": "q"},
    {"x": 1, "extra": 2}, {"x": 1, "o": 5}, {"x": 10**30},
])
def test_the_host_check_of_plain_arguments_is_pydantics(arguments):
    fast = function_schema(_typed).validate

    def reference(values: dict) -> Any:
        from pydantic import create_model

        fields = {k: (v, d) for k, v, d in [("x", int, ...), ("s", str, "a"),
                                            ("f", float, 1.5), ("o", str | None, None),
                                            ("b", bool, False), ("anything", Any, None)]}
        m = create_model("ref", __config__={"extra": "forbid"}, **fields)  # type: ignore
        return m.model_validate(values).model_dump()

    try:
        expected = reference(arguments)
    except ValidationError as exc:
        with pytest.raises(ValidationError) as got:
            fast(dict(arguments))
        assert got.value.errors(include_url=False) == exc.errors(include_url=False)
        return
    got = fast(dict(arguments))
    assert got == expected and all(type(got[k]) is type(expected[k]) for k in expected)
