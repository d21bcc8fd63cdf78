"""The kit every front end stands on (`tooliscode.adapters`): one set of options, a catalog
built once per tool set, a framework's tools declared once and called through a running cell,
approval that fails closed, and the one façade."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from tooliscode import Limits, ToolError
from tooliscode.adapters import (
    Binding,
    Catalog,
    Cell,
    Hooks,
    Options,
    Tools,
    ToolsFacade,
    callable_parameters,
    code_of,
)
from tooliscode.codetool import Reply


def test_one_set_of_defaults_and_clear_errors():
    assert (Options().max_sessions, Options().idle_timeout_s, Options().name) == \
        (64, 1800.0, "run_python")
    assert Options().in_description(prompted=True) is False  # "auto": the prompt, where it can
    assert Options().in_description(prompted=False) is True
    assert Options(instructions="prompt").in_description(prompted=False) is False
    with pytest.raises(ValueError, match="must be one of code, direct, both"):
        Options(callers={"x": "sometimes"})
    with pytest.raises(ValueError, match="instructions must be"):
        Options(instructions="system")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_sessions must be at least 1"):
        Options(max_sessions=0)
    with pytest.raises(ValueError, match="callers= has no meaning"):
        Options(callers={"x": "direct"}).code_only("a CodeAgent calls its tools from code only")
    again = Options(**Options(limits=Limits(timeout_s=3), name="py").args())
    assert again == Options(limits=Limits(timeout_s=3), name="py")


def test_a_catalog_is_built_once_per_tool_set():
    def find(q: str) -> list:
        """Find things."""
        return []

    from tooliscode import Tool

    first = Catalog.of([Tool.from_function(find)])
    assert Catalog.of([Tool.from_function(find)]) is first  # same content: the same catalog
    assert "def find(q: str) -> list" in first.instructions
    assert first.tool_description(in_description=True) == first.instructions
    other = Catalog.of([Tool.from_function(find, description="Find other things.")])
    assert other is not first


def test_a_defaulted_parameter_is_never_required_from_code():
    strict = {"type": "object", "required": ["a", "b", "c"],
              "properties": {"a": {"type": "string"}, "b": {"type": "array", "default": []},
                             "c": {"type": ["integer", "null"], "default": None}}}
    assert callable_parameters(strict)["required"] == ["a"]
    assert callable_parameters(strict)["properties"] == strict["properties"]
    assert callable_parameters({"type": "object"}) == {"type": "object"}


def test_the_code_arguments_and_their_errors():
    assert code_of('{"code": "1"}') == code_of({"code": "1"}) == "1"
    for bad in ("not json", "{}", {"code": 3}, None):
        with pytest.raises(ValueError, match='expected arguments {"code"'):
            code_of(bad)


@dataclasses.dataclass(kw_only=True)
class _Cell(Cell):
    seen: list[str]


class _Plain(Hooks[Any, _Cell]):
    """A framework whose tools are plain functions and which cannot pause a cell."""

    asynchronous = False

    def declare(self, native: Any) -> Binding[Any]:
        return Binding.of(native, name=native.__name__, description=native.__doc__ or "",
                          parameters={"type": "object", "properties": {"n": {"type": "integer"}},
                                      "required": ["n"]},
                          approval="always" if native.__name__ == "wire" else "never")

    def call(self, cell: _Cell, binding: Binding[Any], arguments: dict[str, Any],
             call_id: str) -> Any:
        cell.seen.append(call_id)
        return binding.native(**arguments)

    def render(self, reply: Reply) -> str:
        return reply.text


class _Front(ToolsFacade):
    def __init__(self, natives: list[Any], **options: Any) -> None:
        settings = Options(**options)
        self._serve(Tools.of(_Plain(), natives, settings.callers), settings)

    def run(self, code: str, key: Any = None) -> tuple[str, list[str]]:
        cell = _Cell(call_id="c7", tools=self._tools, seen=[])
        return self.code_tool.run_code(code, key=key, context=cell).text, cell.seen


def test_a_front_end_of_hooks_only():
    wired: list[int] = []

    def double(n: int) -> int:
        """Twice n."""
        return 2 * n

    def wire(n: int) -> str:
        """Wire money (always needs a person's approval)."""
        wired.append(n)
        return "wired"

    def shout(n: int) -> str:
        """For the model itself."""
        return "!" * n

    front = _Front([double, wire, shout], callers={"shout": "direct"})
    try:
        text, seen = front.run("x = double(n=2) + double(n=3)\n"
                               "try:\n    wire(n=100)\nexcept ToolError as e:\n    print(e)\nx")
        assert "wire needs a person's approval" in text and wired == []  # fails closed
        assert text.endswith("[value] 10") and seen == ["c7:1", "c7:2"]
        assert front.direct_tools == [shout] and front.tools == [double, wire]
        assert "NameError" in front.run("shout(n=1)")[0]
        assert front.run("x", key="k")[0].startswith("[error]")  # another conversation
        assert set(front.live()) == {None, "k"}
        assert front.paused_for("c7") == ()
        assert front.session().run("x").value == "10"
        assert front.drop("k") and set(front.live()) == {None}
        with pytest.raises(ToolError, match="only while the code tool runs"):
            front.session().registry.get("double").invoke({"n": 1})  # no cell runs
    finally:
        front.close()
