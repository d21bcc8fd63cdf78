"""JSON Schema to the Python stub the model reads and the spec the guest binds calls with.

Single schemas with their exact stub, checked on the host alone; tests/tools/test_codegen.py checks
whole corpora against golden files and in the guest.
"""

from __future__ import annotations

import pytest
from tooliscode import Tool
from tooliscode.tools._stubs import ToolStub, guest_spec, stub


def tool(properties: dict, required: tuple = (), output: dict | None = None, **extra) -> Tool:
    schema = {"type": "object", "properties": properties, "required": list(required), **extra}
    return Tool(name="t", description="Does t.", parameters=schema, output_schema=output)


def signature(properties: dict, required: tuple = (), output: dict | None = None, **extra) -> str:
    return ToolStub.of(tool(properties, required, output, **extra)).signature()


@pytest.mark.parametrize("schema, annotation", [
    ({"type": "string"}, "str"),
    ({"type": "integer"}, "int"),
    ({"type": "number"}, "float"),
    ({"type": "boolean"}, "bool"),
    ({"type": "array", "items": {"type": "integer"}}, "list[int]"),
    ({"enum": ["a", "b"]}, "Literal['a', 'b']"),
    ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, "str | int"),
])
def test_json_types_become_python_annotations(schema, annotation):
    assert signature({"x": schema}, required=("x",)) == f"t(x: {annotation}) -> Any"


def test_required_parameters_come_first_and_defaults_are_shown():
    assert signature({"opt": {"type": "integer", "default": 3}, "req": {"type": "string"},
                      "flag": {"type": "boolean", "default": False},
                      "word": {"type": "string", "default": "x"}}, required=("req",)) == \
        "t(req: str, opt: int = 3, flag: bool = False, word: str = 'x') -> Any"


def test_none_means_not_given_unless_the_schema_allows_null():
    stub_ = ToolStub.of(tool({"maybe": {"type": "string"},
                              "nullable": {"type": ["string", "null"]}}))
    assert stub_.signature() == "t(maybe: str | None = None, nullable: str | None = None) -> Any"
    omit = {p.name: p.omit_none for p in stub_.params}
    assert omit == {"maybe": True, "nullable": False}  # null is a value the tool accepts
    assert guest_spec(tool({"maybe": {"type": "string"}}))["omit_none"] == ["maybe"]


def test_names_python_cannot_use_are_renamed_and_mapped_back():
    stub_ = ToolStub.of(tool({"from": {"type": "string"}, "foo-bar": {"type": "integer"}},
                             required=("from", "foo-bar")))
    assert stub_.signature() == "t(from_: str, foo_bar: int) -> Any"
    spec = guest_spec(stub_.tool)
    assert spec["params"] == ["from_", "foo_bar"]
    assert spec["keys"] == {"from_": "from", "foo_bar": "foo-bar"}
    assert spec["required"] == ["from_", "foo_bar"]


def test_nested_objects_become_typed_dicts_named_after_the_tool():
    t = tool({"customer": {"type": "object", "properties": {"id": {"type": "string"}},
                           "required": ["id"]}}, required=("customer",))
    source = stub(t)
    assert "class TCustomer(TypedDict):\n    id: str\n" in source
    assert "def t(customer: TCustomer) -> Any:" in source
    compile(source, "<stub>", "exec")


def test_refs_are_resolved_to_named_classes():
    t = tool({"x": {"$ref": "#/$defs/Point"}}, required=("x",),
             **{"$defs": {"Point": {"type": "object", "properties": {"q": {"type": "integer"}}}}})
    assert ToolStub.of(t).signature() == "t(x: Point) -> Any"
    assert "class Point(TypedDict" in stub(t)


def test_open_schemas_take_extra_keywords():
    stub_ = ToolStub.of(tool({"a": {"type": "string"}}, additionalProperties=True))
    assert stub_.signature() == "t(a: str | None = None, **kwargs: Any) -> Any"
    assert guest_spec(stub_.tool)["open"] is True
    assert guest_spec(tool({"a": {"type": "string"}}))["open"] is False


def test_the_output_schema_gives_the_return_type():
    assert signature({}, output={"type": "array", "items": {"type": "string"}}).endswith(
        "-> list[str]")
    t = tool({"q": {"type": "string"}}, output={"type": "object", "required": ["n"],
                                                "properties": {"n": {"type": "integer"}}})
    assert "class TResult(TypedDict):\n    n: int\n" in stub(t)
    assert ToolStub.of(t).signature().endswith("-> TResult")


def test_the_docstring_has_the_description_and_documented_arguments():
    t = tool({"req": {"type": "string", "description": "The thing to look up."},
              "quiet": {"type": "boolean"}}, required=("req",))
    source = stub(t)
    assert '    """Does t.\n\n    Args:\n        req: The thing to look up.\n    """' in source
    assert "quiet:" not in source.split("Args:")[1]  # nothing to say about it


def test_every_stub_is_valid_python():
    t = tool({"class": {"type": "string"}, "items": {"type": "array", "items": {
        "type": "object", "properties": {"sku": {"type": "string"}, "n": {"type": "integer"}},
        "required": ["sku"]}}, "mode": {"enum": ["fast", "slow"], "default": "fast"}},
        required=("items",), output={"type": "object", "properties": {}})
    compile(stub(t), "<stub>", "exec")
    spec = guest_spec(t)
    assert spec["stub"] == stub(t) and spec["name"] == "t" and spec["wire"] == "t"
