"""The Tool model: from callables, OpenAI dicts, pydantic models and explicit fields; names,
namespaces and the errors for names that clash."""

from __future__ import annotations

import functools
import sys
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field
from tooliscode import Limits, Session, Tool, ToolRegistry, as_tool
from tooliscode.prompt._catalog import catalog
from tooliscode.tools._schema import parse_docstring
from tooliscode.tools._stubs import ToolStub, guest_spec, stub
from tooliscode.tools._tool import python_name


class Address(BaseModel):
    street: str
    city: str


class Customer(BaseModel):
    """A customer record."""

    name: str
    tier: Literal["free", "pro"] = "free"
    address: Address | None = None


def google(query: str, limit: int = 10, *, tags: list[str] | None = None) -> list[dict]:
    """Search the catalogue.

    Matches titles first.

    Args:
        query (str): Words to look for,
            over two lines.
        limit: How many results.
        tags: Only items with these tags.

    Returns:
        The matching items, best first.
    """
    return [{"query": query, "limit": limit, "tags": tags}]


def numpy_style(a: int, b: float = 0.5) -> float:
    """Add two numbers.

    Parameters
    ----------
    a : int
        The first.
    b : float, optional
        The second.
    """
    return a + b


def sphinx_style(path: str, mode: str = "r") -> str:
    """Open a file.

    :param path: Where it is.
    :param mode: How to open it.
    :returns: a handle
    """
    return f"{path}:{mode}"


def save_customer(customer: Customer, notify: Annotated[bool, Field(description="Send mail.")]
                  = False) -> Customer:
    """Store a customer."""
    assert isinstance(customer, Customer)  # the host turned the guest's dict into the model
    return customer.model_copy(update={"name": customer.name.upper()})


def test_schema_and_docs_from_a_google_docstring():
    tool = Tool.from_function(google)
    props = tool.parameters["properties"]
    assert tool.description.startswith("Search the catalogue.\n\nMatches titles first.")
    assert "Returns: The matching items, best first." in tool.description
    assert props["query"]["description"] == "Words to look for, over two lines."
    assert props["limit"] == {"default": 10, "description": "How many results.", "type": "integer"}
    assert tool.parameters["required"] == ["query"]
    assert tool.parameters["additionalProperties"] is False
    assert stub(tool).startswith("def google(query: str, limit: int = 10, tags: list[str] | None "
                                 "= None) -> list[dict[str, Any]]:\n")


@pytest.mark.parametrize("fn, docs", [
    (numpy_style, {"a": "The first.", "b": "The second."}),
    (sphinx_style, {"path": "Where it is.", "mode": "How to open it."}),
])
def test_numpy_and_sphinx_docstrings(fn, docs):
    tool = Tool.from_function(fn)
    assert {k: v.get("description") for k, v in tool.parameters["properties"].items()} == docs
    assert "Parameters" not in tool.description and ":param" not in tool.description


def test_docstring_without_sections_is_all_description():
    parts = parse_docstring("Just text: with a colon.\n\nNote: something odd.")
    assert parts.description == "Just text: with a colon.\n\nNote: something odd."
    assert parts.params == {}


def test_without_griffe_the_whole_docstring_is_the_description(monkeypatch):
    monkeypatch.setitem(sys.modules, "griffe", None)  # import griffe now raises ImportError
    parts = parse_docstring(google.__doc__)
    assert parts.params == {} and parts.description.startswith("Search the catalogue.")
    assert "Args:" in parts.description


def test_partials_and_callable_objects():
    class Greeter:
        """Greet someone."""

        def __call__(self, name: str, punctuation: str = "!") -> str:
            return f"hello {name}{punctuation}"

    tool = Tool.from_function(Greeter())
    assert (tool.name, tool.description) == ("Greeter", "Greet someone.")
    assert list(tool.parameters["properties"]) == ["name", "punctuation"]
    part = Tool.from_function(functools.partial(sphinx_style, mode="w"))
    assert part.name == "sphinx_style"
    assert part.parameters["properties"]["mode"]["default"] == "w"


def test_a_callable_schema_is_built_once_but_follows_changes():
    def lookup(key: str, limit: int = 3) -> list[str]:
        """Find keys."""
        return [key] * limit

    first, second = Tool.from_function(lookup), Tool.from_function(lookup)
    assert first.parameters == second.parameters and first.parameters is not second.parameters
    first.parameters["properties"]["key"]["type"] = "integer"  # a copy each: no sharing
    assert Tool.from_function(lookup).parameters["properties"]["key"]["type"] == "string"
    lookup.__doc__ = "Find keys, fast."
    lookup.__defaults__ = (5,)
    changed = Tool.from_function(lookup)
    assert changed.description == "Find keys, fast."
    assert changed.parameters["properties"]["limit"]["default"] == 5


def test_pydantic_models_as_parameters_and_results_through_the_sandbox():
    tool = Tool.from_function(save_customer)
    built = ToolStub.of(tool)
    assert built.signature() == \
        "save_customer(customer: Customer, notify: bool = False) -> Customer"
    assert "class Address(TypedDict):" in built.source()
    assert "tier: NotRequired[Literal['free', 'pro']]" in built.source()
    with Session([tool], limits=Limits(timeout_s=30)) as s:
        r = s.run("save_customer({'name': 'ada', 'address': {'street': 's', 'city': 'c'}})")
        assert r.ok, r.error
        assert r.value == ("{'name': 'ADA', 'tier': 'free', 'address': {'street': 's', "
                           "'city': 'c'}}")
        r = s.run("save_customer({'name': 'ada', 'tier': 'gold'})")
        assert not r.ok and "customer['tier'] must be one of 'free', 'pro'" in r.error


def test_openai_responses_and_chat_completions_shapes_are_the_same_tool():
    body = {"name": "get_weather", "description": "Weather now.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                           "required": ["city"], "additionalProperties": False}}
    responses = Tool.from_openai({"type": "function", **body, "strict": True})
    chat = Tool.from_openai({"type": "function", "function": body})
    assert as_tool({"type": "function", "function": body}).parameters == chat.parameters
    for tool in (responses, chat):
        assert (tool.name, tool.description, tool.parameters) == (
            "get_weather", "Weather now.", body["parameters"])
    with pytest.raises(ValueError, match="not a function tool"):
        Tool.from_openai({"type": "web_search"})
    with pytest.raises(ValueError, match="needs a name"):
        Tool.from_openai({"type": "function", "function": {"parameters": {}}})


def test_a_pydantic_model_class_is_a_tool():
    seen = []
    tool = Tool.from_model(Customer, seen.append)
    assert tool.name == "customer" and tool.description == "A customer record."
    declaration = as_tool(Customer)
    assert declaration.function is None and declaration.parameters == tool.parameters
    with Session([tool]) as s:
        assert s.run("customer('bo', 'pro')").ok
    assert seen == [Customer(name="bo", tier="pro")]


def test_explicit_fields():
    tool = Tool(name="ping", description="Answer pong.", function=lambda host="x": f"pong {host}",
                parameters={"type": "object", "properties": {"host": {"type": "string"}}},
                output_schema={"type": "string"}, timeout_s=2, metadata={"owner": "ops"})
    assert ToolStub.of(tool).signature() == "ping(host: str | None = None) -> str"
    with Session([tool]) as s:
        assert s.run("ping(), ping('h')").value == "('pong x', 'pong h')"


def test_names_become_identifiers_that_hide_nothing():
    def make(name, **kw):
        return Tool(name=name, **kw)

    assert make("get-weather").python_name == "get_weather"
    assert make("2fa.check").python_name == "_2fa_check"
    assert make("class").python_name == "class_"
    soft = make("find", parameters={"type": "object", "required": ["type"], "properties": {
        "type": {"type": "string"}, "match": {"type": "string"}, "from": {"type": "string"}}})
    assert ToolStub.of(soft).signature() == (  # soft keywords are names; `from` is not
        "find(type: str, match: str | None = None, from_: str | None = None) -> Any")
    # Builtins, standard modules and the sandbox's helpers stay reachable.
    assert [make(n).python_name for n in ("filter", "json", "help", "search_tools")] == [
        "filter_", "json_", "help_", "search_tools_"]
    assert make("filter", namespace="db").python_name == "filter"  # an attribute hides nothing
    assert make("x", namespace="my-server").namespace == "my_server"
    assert make("x", namespace="time").namespace == "time_"
    with pytest.raises(ValueError, match="not a Python identifier"):
        make("x", python_name="not valid")
    with pytest.raises(ValueError, match="non-empty name"):
        make(" ")


def test_duplicate_and_colliding_names_are_clear_errors():
    with pytest.raises(ValueError, match="two tools are named 'a'"):
        ToolRegistry([Tool(name="a"), Tool(name="a")])
    with pytest.raises(ValueError, match="'get-user' and 'get_user' would both be called "
                                         "'get_user'"):
        ToolRegistry([Tool(name="get-user"), Tool(name="get_user")])
    with pytest.raises(ValueError, match="clashes with the namespace 'db'"):
        ToolRegistry([Tool(name="q", namespace="db"), Tool(name="db")])
    with pytest.raises(ValueError, match="namespace 'db' of tool 'q' clashes"):
        ToolRegistry([Tool(name="db"), Tool(name="q", namespace="db")])
    same_short_name = ToolRegistry([Tool(name="a.list", namespace="a", python_name="list"),
                                    Tool(name="b.list", namespace="b", python_name="list")])
    assert [t.qualified_name for t in same_short_name] == ["a.list", "b.list"]


def test_namespaced_and_sanitised_tools_are_called_by_their_python_names():
    tools = [Tool(name="get-weather", function=lambda city: f"sunny in {city}",
                  parameters={"type": "object", "properties": {"city": {"type": "string"}}}),
             Tool(name="json", function=lambda: "tool, not module"),
             Tool(name="srv/query", namespace="my-db", python_name="query",
                  function=lambda sql: [sql],
                  parameters={"type": "object", "properties": {"sql": {"type": "string"}}})]
    with Session(tools) as s:
        r = s.run("import json\n(get_weather('Oslo'), json_(), my_db.query(sql='select 1'), "
                  "json.dumps(1))")
        assert r.ok, r.error
        assert r.value == "('sunny in Oslo', 'tool, not module', ['select 1'], '1')"
        assert [c.name for c in r.tool_calls] == ["get-weather", "json", "srv/query"]


def test_identifiers_in_any_script_are_kept_as_written():
    assert [python_name(n) for n in ("número_de_pedido", "日本語", "über-größe", "2fa.check",
                                     "class", "x y")] == [
        "número_de_pedido", "日本語", "über_größe", "_2fa_check", "class_", "x_y"]
    # Python reads identifiers in NFKC form: a decomposed é or a ligature is written so.
    assert python_name("nu\u0301mero") == "n\u00famero" and python_name("\ufb01nd") == "find"
    tool = Tool(name="buscar", parameters={"type": "object", "required": ["n\u00famero"],
                "properties": {"n\u00famero": {"type": "integer"},
                               "nu\u0301mero": {"type": "integer"}}})
    assert ToolStub.of(tool).signature() == \
        "buscar(número: int, número_2: int | None = None) -> Any"
    assert guest_spec(tool)["keys"] == {"número_2": "nu\u0301mero"}
    with pytest.raises(ValueError, match="would both be called 'find'"):
        ToolRegistry([Tool(name="\ufb01nd"), Tool(name="find")])


def buscar_pedido(número_de_pedido: int, detalle: bool = False) -> dict:
    """Busca un pedido por su número."""
    return {"pedido": número_de_pedido, "detalle": detalle}


NOTA = {"type": "function", "function": {
    "name": "añadir_nota", "description": "Añade una nota a un pedido.",
    "parameters": {"type": "object", "required": ["número_de_pedido", "texto"], "properties": {
        "número_de_pedido": {"type": "integer"}, "texto": {"type": "string"}}}}}


def test_non_ascii_names_are_what_the_model_reads_and_calls():
    tools = [buscar_pedido, Tool.from_openai(NOTA, function=lambda **kw: kw)]
    text = catalog(ToolRegistry(tools))
    assert "def buscar_pedido(número_de_pedido: int, detalle: bool = False):" in text
    assert "def añadir_nota(número_de_pedido: int, texto: str):" in text
    with Session(tools) as s:
        r = s.run("a = buscar_pedido(número_de_pedido=7)\n"
                  "b = añadir_nota(número_de_pedido=7, texto='urgente')\n"
                  "help(añadir_nota)\na, b")
        assert r.ok, r.error
        assert r.value == ("({'pedido': 7, 'detalle': False}, "
                           "{'número_de_pedido': 7, 'texto': 'urgente'})")
        assert r.stdout.startswith("def añadir_nota(número_de_pedido: int, texto: str) -> Any:")
        assert [(c.name, c.arguments) for c in r.tool_calls] == [
            ("buscar_pedido", {"número_de_pedido": 7}),
            ("añadir_nota", {"número_de_pedido": 7, "texto": "urgente"})]
        r = s.run("añadir_nota(numero_de_pedido=7, texto='x')")
        assert r.error_type == "ToolArgumentError" and "did you mean 'número_de_pedido'" in r.error


def test_a_tool_without_parameters_shows_empty_parentheses():
    declared = Tool.from_openai({"type": "function", "name": "now", "description": "The time.",
                                 "parameters": {"type": "object", "properties": {}}},
                                function=lambda **kw: ["now", kw])
    assert stub(declared) == 'def now() -> Any:\n    """The time."""'
    assert ToolStub.of(declared).brief() == "now()"  # the catalog's one-line form
    open_ = Tool(name="anything", parameters={"type": "object", "additionalProperties": True})
    assert ToolStub.of(open_).signature() == "anything(**kwargs: Any) -> Any"
    with Session([declared]) as s:
        # Shown as `now()`, but keys the schema does not forbid still reach the tool.
        assert s.run("now(), now(tz='UTC')").value == "(['now', {}], ['now', {'tz': 'UTC'}])"
