"""JSON Schema -> Python annotations, with a `TypedDict` class for each object shape.

The annotations are for reading, by a model, and they are written as PEP 563 style
declarations: a class may be named before it is defined (recursive `$ref`s), so the text
is valid Python that `typing.get_type_hints` resolves once every class exists.
"""

from __future__ import annotations

import keyword
import re
import textwrap
import unicodedata
from collections.abc import Mapping
from typing import Any

from ..guest import resolve

__all__ = ["TypeWriter", "describe", "docstring", "pascal", "union"]

_SIMPLE = {"string": "str", "integer": "int", "number": "float", "boolean": "bool",
           "null": "None", "array": "list[Any]", "object": "dict[str, Any]"}
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+|[A-Z]")
_LITERAL_TYPES = (str, int, bool, type(None))
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MAX_DEPTH = 40
_WIDTH = 100


def _shape(ch: str) -> str:
    """A character as `_WORD` classes it: `A` upper, `a` other letter, `0` digit, else ` `."""
    if ch.isascii():
        return ch if ch.isalnum() else " "
    if ch.isdecimal():
        return "0"
    if ("_" + ch).isidentifier():
        return "A" if ch.isupper() else "a"
    return " "


def pascal(text: str) -> str:
    """`get_current_time` -> `GetCurrentTime`, `oldText` -> `OldText`, `dirección_envío` ->
    `DirecciónEnvío` (an identifier)."""
    if text.isascii():
        words = _WORD.findall(text)
    else:  # words found on the text's shape, in any script
        text = unicodedata.normalize("NFKC", text)
        words = [text[m.start():m.end()] for m in _WORD.finditer("".join(map(_shape, text)))]
    out = "".join(w[:1].upper() + w[1:] for w in words)
    return out if out.isidentifier() else f"T{out}"


def _one_line(text: Any) -> str:
    """`text` on one line, without characters that cannot stand in source code."""
    if not text:
        return ""
    return " ".join("".join(ch for ch in str(text) if ch.isprintable() or ch.isspace()).split())


def describe(schema: Any) -> str:
    """A schema's description and the constraints an annotation cannot show, on one line."""
    if not isinstance(schema, Mapping):
        return ""
    notes = []
    if isinstance(schema.get("format"), str):
        notes.append(f"format {schema['format']}")
    if isinstance(schema.get("pattern"), str):
        notes.append(f"pattern {schema['pattern']!r}")
    for key, shown in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="),
                       ("exclusiveMaximum", "<"), ("minLength", "min length"),
                       ("maxLength", "max length"), ("minItems", "min items"),
                       ("maxItems", "max items")):
        value = schema.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            notes.append(f"{shown} {value}")
    if schema.get("uniqueItems") is True:
        notes.append("unique items")
    if schema.get("deprecated") is True:
        notes.append("deprecated")
    text = _one_line(schema.get("description"))
    return f"{text} ({'; '.join(notes)})".strip() if notes else text


def _split(text: str, sep: str) -> list[str]:
    """`text` split on `sep` where it is outside brackets and string quotes: the members of
    `A | B[C | D]`, the values of `Literal['a,b', 2]`."""
    parts, depth, quote, start, i = [], 0, "", 0, 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
        i += 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def union(members: list[str]) -> str:
    """`A | B`, flattened and without repeats; `Any` swallows the rest, `None` goes last,
    and several `Literal[...]`s become one."""
    flat: list[str] = []
    literals: list[str] = []
    for member in members:
        for part in _split(member, "|"):
            if part == "Any":
                return "Any"
            if part.startswith("Literal[") and part.endswith("]"):
                literals.extend(v for v in _split(part[8:-1], ",") if v not in literals)
            elif part not in flat:
                flat.append(part)
    if literals:
        if "None" in literals:
            literals.remove("None")
            if "None" not in flat:
                flat.append("None")
        flat.insert(0, f"Literal[{', '.join(literals)}]")
    if "None" in flat:
        flat.remove("None")
        flat.append("None")
    return " | ".join(flat) or "Any"


def _literal(values: list[Any]) -> str | None:
    if not values or not all(isinstance(v, _LITERAL_TYPES) for v in values):
        return None
    shown = [repr(v) for v in values if v is not None]
    if not shown:
        return "None"
    text = f"Literal[{', '.join(shown)}]"
    return union([text, "None"]) if None in values else text


class TypeWriter:
    """Annotations for the schemas of one stub, collecting the classes they name.

    `root` is what `$ref`s resolve against. `classes` maps the names of `TypedDict` classes
    and type aliases to their source, each after the ones it uses (cycles aside).
    """

    def __init__(self, root: Any):
        self.root = root
        self.classes: dict[str, str] = {}
        self._refs: dict[str, str] = {}
        self._bodies: dict[str, str] = {}
        self._taken: set[str] = set()
        self._depth = 0

    def use(self, root: Any) -> None:
        """Resolve `$ref`s against `root` from now on (an output schema after the input)."""
        self.root = root
        self._refs.clear()  # the same `#/$defs/X` may mean another shape there

    def annotation(self, schema: Any, hint: str) -> str:
        """The annotation for `schema`; `hint` names a class made for an inline object."""
        if not isinstance(schema, Mapping) or not schema:
            return "Any"
        if self._depth > _MAX_DEPTH:
            return "Any"
        self._depth += 1
        try:
            ann = self._annotation(schema, hint)
        finally:
            self._depth -= 1
        if schema.get("nullable") is True:
            ann = union([ann, "None"])
        return ann

    def _annotation(self, schema: Mapping[str, Any], hint: str) -> str:
        ref = schema.get("$ref")
        if isinstance(ref, str):
            return self._ref(ref)
        if "const" in schema:
            return _literal([schema["const"]]) or self._typed(schema, hint)
        if isinstance(schema.get("enum"), list):
            return _literal(schema["enum"]) or self._typed(schema, hint)
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list) and options:
                return union([self.annotation(_with_base(schema, key, o), _branch(hint, o, i))
                              for i, o in enumerate(options, 1)])
        every = schema.get("allOf")
        if isinstance(every, list) and every:
            if len(every) > 1:  # a `$ref` among several parts is merged by its content
                every = [resolve(self.root, p["$ref"]) if isinstance(p, Mapping) and
                         isinstance(p.get("$ref"), str) else p for p in every]
            return self.annotation(_merge_all(schema, every), hint)
        return self._typed(schema, hint)

    def _typed(self, schema: Mapping[str, Any], hint: str) -> str:
        kind = schema.get("type")
        if isinstance(kind, list):
            return union([self._typed({**schema, "type": k}, hint) for k in kind]) if kind \
                else "Any"
        if kind is None:
            if "properties" in schema or "additionalProperties" in schema:
                kind = "object"
            elif "items" in schema or "prefixItems" in schema:
                kind = "array"
        if kind == "array":
            return self._array(schema, hint)
        if kind == "object":
            return self._object(schema, hint)
        return _SIMPLE.get(kind, "Any") if isinstance(kind, str) else "Any"

    def _array(self, schema: Mapping[str, Any], hint: str) -> str:
        items = schema.get("items")
        prefix = schema.get("prefixItems", items if isinstance(items, list) else None)
        if isinstance(prefix, list) and prefix and (items is False or items is prefix
                                                     or schema.get("maxItems") == len(prefix)):
            members = [self.annotation(p, f"{hint}{i}") for i, p in enumerate(prefix, 1)]
            return f"tuple[{', '.join(members)}]"
        if isinstance(prefix, list) and not isinstance(items, Mapping):
            return f"list[{union([self.annotation(p, hint) for p in prefix])}]"
        return f"list[{self.annotation(items, f'{hint}Item')}]"

    def _object(self, schema: Mapping[str, Any], hint: str, name: str | None = None) -> str:
        props = schema.get("properties")
        if isinstance(props, Mapping) and props:
            return self._class(schema, props, name or self._reserve(hint))
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping) and extra:
            return f"dict[str, {self.annotation(extra, f'{hint}Value')}]"
        return "dict[str, Any]"

    def _reserve(self, wanted: str) -> str:
        name, n = wanted, 2
        while name in self._taken:
            name, n = f"{wanted}{n}", n + 1
        self._taken.add(name)
        return name

    def _ref(self, ref: str) -> str:
        known = self._refs.get(ref)
        if known is not None:
            return known
        target = resolve(self.root, ref)
        if target is None:
            return "Any"
        base = pascal(ref.rstrip("/").rpartition("/")[2])
        # Named before it is written, so a reference back into it finds the name.
        name = self._refs[ref] = self._reserve(base)
        if _is_class(target):
            # The same shape met before under another name is written once, with that name.
            name = self._refs[ref] = self._object(target, base, name)
            return name
        ann = self.annotation(target, base)
        if self._forward(ann):  # names itself or an unfinished class: evaluated lazily
            self.classes[name] = f"type {name} = {ann}"
        elif " | " in ann or ann.startswith("Literal["):  # worth a name of its own
            self.classes[name] = f"{name} = {ann}"
        else:  # a plain type reads better in place
            self._taken.discard(name)
            self._refs[ref] = name = ann
        return name

    def _forward(self, annotation: str) -> bool:
        """Whether `annotation` names a class or alias not written yet (a cycle)."""
        named = self._taken.intersection(_IDENT.findall(annotation))
        return any(n not in self.classes for n in named)

    def _class(self, schema: Mapping[str, Any], props: Mapping[str, Any], name: str) -> str:
        required = set(schema.get("required") or ())
        fields = []
        for key, prop in props.items():
            ann = self.annotation(prop, name + pascal(str(key)))
            fields.append((str(key), ann if key in required else f"NotRequired[{ann}]",
                           describe(prop)))
        if not all(_plain_key(k) for k, _, _ in fields):
            # The functional form's dict is evaluated at once: names from later go in quotes.
            fields = [(k, repr(a) if self._forward(a) else a, d) for k, a, d in fields]
        body = _class_body(fields, _one_line(schema.get("description")))
        same = self._bodies.get(body)
        if same is not None and same != name:
            self._taken.discard(name)
            return same  # an inline shape seen before: one class serves both
        self._bodies[body] = name
        self.classes[name] = _class_source(name, body, fields)
        return name


def _class_body(fields: list[tuple[str, str, str]], doc: str) -> str:
    """The class without its name, to recognise the same shape twice."""
    return "\n".join([doc, *(f"{k}: {a}  # {d}" for k, a, d in fields)])


def _class_source(name: str, body: str, fields: list[tuple[str, str, str]]) -> str:
    doc = body.partition("\n")[0]
    if all(_plain_key(k) for k, _, _ in fields):
        lines = [f"class {name}(TypedDict):"]
        if doc:
            lines.append(f"    {docstring(doc)}")
        lines += [_field(f"{k}: {a}", d) for k, a, d in fields]
        return "\n".join(lines)
    # Keys that are not identifiers need the functional form.
    lines = [f"# {doc}"] if doc else []
    lines.append(f"{name} = TypedDict({name!r}, {{")
    lines += [_field(f"{k!r}: {a},", d) for k, a, d in fields]
    lines.append("})")
    return "\n".join(lines)


def _plain_key(key: str) -> bool:
    """Whether the class form can spell `key` as a field name (Python would read a field
    not in NFKC form as another key)."""
    return key.isidentifier() and not keyword.iskeyword(key) and \
        unicodedata.normalize("NFKC", key) == key


def _field(code: str, doc: str) -> str:
    """A field line, its description as a comment beside it, or above it when long."""
    if not doc:
        return f"    {code}"
    if len(code) + len(doc) + 8 <= _WIDTH:
        return f"    {code}  # {doc}"
    comment = textwrap.fill(doc, _WIDTH, initial_indent="    # ", subsequent_indent="    # ",
                            break_long_words=False, break_on_hyphens=False)
    return f"{comment}\n    {code}"


def docstring(text: str, indent: str = "") -> str:
    """`text` as a triple-quoted literal that compiles whatever characters it holds."""
    text = "".join(ch for ch in text if ch.isprintable() or ch in "\n\t")
    text = text.replace('"""', "'''")
    if text.endswith(('"', "\\")):
        text += " "
    prefix = "r" if "\\" in text else ""
    if "\n" in text:
        body = "\n".join(indent + line if line.strip() else "" for line in text.splitlines())
        return f'{prefix}"""{body.lstrip()}\n{indent}"""'
    return f'{prefix}"""{text}"""'


def _is_class(schema: Any) -> bool:
    if not isinstance(schema, Mapping):
        return False
    props = schema.get("properties")
    plain = not any(k in schema for k in ("anyOf", "oneOf", "allOf", "$ref", "enum", "const"))
    return plain and isinstance(props, Mapping) and bool(props) and \
        schema.get("type", "object") in ("object", ["object"])


def _with_base(schema: Mapping[str, Any], key: str, option: Any) -> Any:
    """An `anyOf` branch, with the keywords written beside the `anyOf` (a shared `type`,
    `properties`) folded in."""
    rest = {k: v for k, v in schema.items() if k not in (key, "description", "title",
                                                         "default", "nullable")}
    if not rest or not isinstance(option, Mapping):
        return option
    return _merge_all({}, [option, rest])  # the branch's own keywords win


def _branch(hint: str, option: Any, index: int) -> str:
    title = option.get("title") if isinstance(option, Mapping) else None
    return pascal(title) if isinstance(title, str) and title.strip() else f"{hint}{index}"


def _merge_all(schema: Mapping[str, Any], parts: list[Any]) -> dict[str, Any]:
    """`allOf` as one schema: properties and requirements added up, the rest kept first-wins."""
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    props: dict[str, Any] = dict(merged.get("properties") or {})
    required: list[str] = list(merged.get("required") or ())
    for part in parts:
        if not isinstance(part, Mapping):
            continue
        for key, value in part.items():
            if key == "properties" and isinstance(value, Mapping):
                props.update(value)
            elif key == "required" and isinstance(value, list):
                required += [r for r in value if r not in required]
            else:
                merged.setdefault(key, value)
    if props:
        merged["properties"] = props
    if required:
        merged["required"] = required
    return merged
