"""The guest's argument checker (core/guest/validate.py), run on the host for speed.

It must never reject what a full JSON Schema validator accepts (false errors would stop good
calls), and on the corpus's schemas it should reject what that validator rejects. The
`jsonschema` library is the reference; Hypothesis breaks valid examples at random places.
"""

from __future__ import annotations

import jsonschema
import pytest
from golden.examples import example, replaced
from golden.refresh import corpora, corpus_tools
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tooliscode.guest.validate import problem

TOOLS = [t for c in corpora() for t in corpus_tools(c)]


def _reference(schema, value) -> bool | None:
    """jsonschema's verdict; None where the checker may differ on purpose: OpenAPI's
    `nullable`, and `multipleOf` a float step (0.07 is a multiple of 0.01 only with a
    tolerance)."""
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    errors = list(cls(schema).iter_errors(value))
    hard = [e for e in errors if e.validator != "multipleOf" and not (
        e.validator == "type" and e.instance is None and e.schema.get("nullable"))]
    return False if hard else (None if errors else True)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 200) | st.floats(-5, 200, allow_nan=False)
    | st.sampled_from(["", "x", "open", "asc", "card", "AAPL", "2024-05-01"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["a", "kind", "sku", "path", "and", "field", "op", "value", "v", "name"]),
        inner, max_size=3),
    max_leaves=8)


def _paths(value, path=()):
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, path + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _paths(item, path + (i,))


@pytest.mark.parametrize("tool", TOOLS, ids=[t.name for t in TOOLS])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_agrees_with_jsonschema_on_broken_examples(tool, data):
    schema = tool.parameters
    start = example(schema, full=data.draw(st.booleans()))
    path = data.draw(st.sampled_from(list(_paths(start))[1:] or [()]))
    value = replaced(start, path, data.draw(json_values))
    if not isinstance(value, dict):
        return  # arguments are always an object by the time they are checked
    found, expected = problem(schema, value), _reference(schema, value)
    if expected is not None:
        assert (found is None) == expected, (value, found)


@pytest.mark.parametrize("schema, value, message", [
    ({"type": "object", "properties": {"n": {"type": "integer"}}}, {"n": True},
     "n must be int, not bool (True)"),
    ({"type": "object", "properties": {"n": {"type": "number"}}}, {"n": "1"},
     "n must be float, not str ('1')"),
    ({"properties": {"x": {"anyOf": [{"type": "integer"}, {"type": "array"}]}}}, {"x": "s"},
     "x must be int | list, not str ('s')"),
    ({"properties": {"x": {"type": "string", "nullable": True}}}, {"x": 3},
     "x must be str, not int (3)"),
    ({"properties": {"p": {"type": "array", "items": {"type": "string"}, "maxItems": 2}}},
     {"p": ["a", "b", "c"]}, "p must have at most 2 items, not 3"),
    ({"properties": {"p": {"type": "array", "uniqueItems": True}}}, {"p": [1, 2, 1]},
     "p[2] repeats an earlier item"),
    ({"properties": {"d": {"type": "object", "additionalProperties": {"type": "integer"}}}},
     {"d": {"a": 1, "b": "two"}}, "d['b'] must be int, not str ('two')"),
    ({"properties": {"s": {"type": "string", "pattern": "^[a-z]+$"}}}, {"s": "ABC"},
     "s must match the pattern '^[a-z]+$', not 'ABC'"),
    ({"properties": {"n": {"type": "number", "minimum": 0, "exclusiveMinimum": True}}},
     {"n": 0}, "n must be > 0, not 0"),
    ({"properties": {"k": {"const": "card"}}}, {"k": "bank"}, "k must be 'card', not 'bank'"),
    ({"required": ["a"], "properties": {"a": {}}}, {}, "the call is missing the required key 'a'"),
    ({"properties": {"t": {"$ref": "#/$defs/T"}}, "$defs": {"T": {
        "type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/T"}},
                                         "n": {"type": "integer"}}}}},
     {"t": {"kids": [{"kids": [{"n": "x"}]}]}}, "t['kids'][0]['kids'][0]['n'] must be int"),
])
def test_messages_name_the_field_in_python_terms(schema, value, message):
    assert message in problem(schema, value)


def test_leaves_to_the_host_what_it_cannot_judge():
    import datetime as dt

    schema = {"properties": {"when": {"type": "string", "format": "date"},
                             "re": {"type": "string", "pattern": "(?<x>ECMA)"},
                             "far": {"$ref": "https://example.com/schema.json"}}}
    # A date object is turned into text by the channel; an ECMA-only pattern and a remote
    # reference are not this checker's to judge.
    assert problem(schema, {"when": dt.date(2024, 1, 1), "re": "x", "far": 1}) is None
    assert problem({"properties": {"x": {"$ref": "#"}}}, {"x": {"x": {"x": 1}}}) is None


def test_uses_the_parameter_names_the_model_wrote():
    schema = {"properties": {"x-api-key": {"type": "string"}}}
    assert problem(schema, {"x-api-key": 1}, {"x-api-key": "x_api_key"}).startswith(
        "x_api_key must be str")
