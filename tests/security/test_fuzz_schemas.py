"""Random JSON Schemas through SDK generation: the stub always compiles (on the host and in
the guest), and what the schema allows always passes the guest's argument checks."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tooliscode import Session, Tool
from tooliscode.guest.validate import problem
from tooliscode.tools._stubs import stub

names = st.one_of(
    st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True),
    st.sampled_from(["class", "from", "def", "foo-bar", "2fast", "with space", "type", "id",
                     "print", "Ünïcode", "x.y", "_private", "self"]),
)
# from_regex imports its machinery on first use; deep inside a recursive draw, CPython 3.11
# compiling that module could fail with "AST constructor recursion depth mismatch"
names.validate()
leaves = st.one_of(
    st.just({"type": "string"}),
    st.builds(lambda lo, hi: {"type": "string", "minLength": lo, "maxLength": lo + hi},
              st.integers(0, 3), st.integers(0, 5)),
    st.builds(lambda lo, hi: {"type": "integer", "minimum": lo, "maximum": lo + hi},
              st.integers(-50, 50), st.integers(0, 100)),
    st.just({"type": "number"}),
    st.just({"type": "boolean"}),
    st.just({"type": "null"}),
    st.builds(lambda vals: {"enum": vals},
              st.lists(st.one_of(st.text(max_size=5), st.integers(-3, 3)), min_size=1,
                       max_size=4, unique=True)),
    st.builds(lambda kind: {"type": [kind, "null"]}, st.sampled_from(["string", "integer"])),
    st.just({}),
)


def _object(children: st.SearchStrategy) -> st.SearchStrategy:
    def build(props: dict, required: list[bool], extra: bool | None) -> dict:
        schema: dict = {"type": "object", "properties": props,
                        "required": [k for k, r in zip(props, required) if r]}
        if extra is not None:
            schema["additionalProperties"] = extra
        return schema

    return st.builds(build, st.dictionaries(names, children, max_size=4),
                     st.lists(st.booleans(), min_size=4, max_size=4),
                     st.sampled_from([None, False, True]))


schemas = st.recursive(
    leaves,
    lambda children: st.one_of(
        st.builds(lambda item: {"type": "array", "items": item}, children),
        _object(children),
        st.builds(lambda a, b: {"anyOf": [a, b]}, children, children),
    ),
    max_leaves=8,
)
tool_schemas = _object(schemas)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner,
                                                                 max_size=2),
    max_leaves=4)


def instances(schema: dict, top: bool = False) -> st.SearchStrategy:
    """Values `schema` allows (for the subset of JSON Schema generated above). At the top, a
    tool's arguments, unknown keys are left out unless the schema says they are welcome:
    guest calls refuse keywords a tool does not declare, to catch misspelt names."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "anyOf" in schema:
        return st.one_of(*(instances(s) for s in schema["anyOf"]))
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of(instances({**schema, "type": kind[0]}), st.none())
    if kind == "string":
        return st.text(min_size=schema.get("minLength", 0), max_size=schema.get("maxLength", 6))
    if kind == "integer":
        return st.integers(schema.get("minimum"), schema.get("maximum"))
    if kind == "number":
        return st.floats(allow_nan=False, allow_infinity=False) | st.integers(-9, 9)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        return st.lists(instances(schema["items"]), max_size=3)
    if kind == "object":
        props, required = schema["properties"], set(schema["required"])
        welcome = schema.get("additionalProperties")
        extra = {"zz_extra": json_values} if welcome or (welcome is None and not top) else {}
        return st.fixed_dictionaries(
            {k: instances(v) for k, v in props.items() if k in required},
            optional={**{k: instances(v) for k, v in props.items() if k not in required},
                      **{k: v for k, v in extra.items() if k not in props}})
    return json_values


# 150 schemas of up to 8 leaves over every construct the generator has; the golden corpora in
# tests/tools/test_codegen.py cover the real-world shapes.
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(schema=tool_schemas, data=st.data())
def test_stub_compiles_and_allowed_arguments_pass(schema, data):
    tool = Tool(name="fuzzed", description="A fuzzed tool.", parameters=schema)
    compile(stub(tool), "<stub>", "exec")
    value = data.draw(instances(schema))
    assert problem(schema, value) is None, (schema, value, problem(schema, value))


# Each example starts an interpreter, the slow part, so it brings three tools at once:
# 15 examples check 45 schemas in the guest (the host-only test above checks 150).
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(schemas=st.lists(tool_schemas, min_size=3, max_size=3), data=st.data())
def test_in_the_guest_the_stub_compiles_and_allowed_calls_pass(schemas, data):
    seen: dict[str, list[dict]] = {f"fuzzed{i}": [] for i in range(len(schemas))}
    tools = [Tool(name=name, parameters=schema,
                  function=lambda _seen=seen[name], **kw: _seen.append(kw) or "ok")
             for name, schema in zip(seen, schemas)]
    values = [data.draw(instances(schema, top=True)) for schema in schemas]
    with Session(tools) as s:
        for name, schema, value in zip(seen, schemas, values):
            s.write_file("args.json", json.dumps(value))
            r = s.run(f"import json\nhelp({name})\nargs = json.load(open('args.json'))\n"
                      f"names = {{wire: py for py, wire in {name}._keys.items()}}\n"
                      f"{name}(**{{names.get(k, k): v for k, v in args.items()}})")
            assert r.ok and r.value == "'ok'", (schema, value, r.error)
            assert f"def {name}(" in r.stdout
    assert list(seen.values()) == [[v] for v in values], (seen, values)
