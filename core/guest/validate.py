"""Tool arguments checked against their JSON Schema inside the guest, before a call leaves.

This is for early errors the model can act on ("edits[0]['newText'] must be str, not int"),
not for security: the host still decides what it accepts. So the checker is lenient where
it cannot judge: keywords it does not know are ignored, remote `$ref`s and formats are not
checked, and a value that is not plain JSON data (a `datetime`, a dataclass) is left for the
host, since the channel converts it on the way out.

A schema is compiled once into closures that run only the keywords it has, because every
tool call pays for the check and guest Python is several times slower than native. The path
to a bad value is built only when one is found, as the error travels up. Standard library
only; `re` and `difflib` are imported only when a schema or an error needs them.

The words of a failure are in invalid.py; calls whose arguments are plain scalars of a plain
schema are accepted without this check, in plain.py.
"""

from __future__ import annotations

from .invalid import (
    PLAIN,
    PY_NAMES,
    Invalid,
    did_you_mean,
    fails,
    inside,
    nearest,
    same,
    show,
    wrong_type,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Check = Callable[[Any], None]
    """Raises `Invalid`, with a path relative to the value it was given."""

__all__ = ["checker", "did_you_mean", "problem", "resolve"]

_MISSING = object()
_FAILS = {">=": lambda v, limit: v < limit, "<=": lambda v, limit: v > limit,
          ">": lambda v, limit: v <= limit, "<": lambda v, limit: v >= limit}
"""A bound in words -> whether a value breaks it."""


def resolve(root: Any, ref: str) -> Any:
    """The schema a local `$ref` points at (a JSON pointer into `root`), or None for a
    remote or dangling reference. Shared with the host's stub writer."""
    if not ref.startswith("#"):
        return None
    node = root
    for part in ref[1:].split("/"):
        if not part:
            continue
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list):
            if not (part.isdigit() and int(part) < len(node)):
                return None
            node = node[int(part)]
        elif hasattr(node, "keys") and part in node:  # a dict; on the host, any mapping
            node = node[part]
        else:
            return None
    return node


def checker(schema: Any) -> Callable[[dict[str, Any], dict[str, str] | None], str | None]:
    """Compile `schema` once; the result says what is wrong with an arguments object, naming
    the first bad argument (as the caller wrote it, through `names`), or None."""
    check = _Compiler(schema).compile(schema)

    def problem_of(arguments: dict[str, Any], names: dict[str, str] | None = None) -> str | None:
        if check is None:
            return None
        try:
            check(arguments)
        except Invalid as bad:
            if not bad.path:
                return f"the call {bad.message}"
            first = str(bad.path[0])
            where = (names or {}).get(first, first) + "".join(f"[{p!r}]" for p in bad.path[1:])
            return f"{where} {bad.message}"
        except RecursionError:
            pass  # a schema that refers to itself without end: not judged
        return None

    return problem_of


def problem(schema: Any, arguments: dict[str, Any],
            names: dict[str, str] | None = None) -> str | None:
    """`checker(schema)(arguments, names)`, for a single use."""
    return checker(schema)(arguments, names)


_TYPES = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
          "array": (list, tuple), "object": (dict,), "null": (type(None),)}
"""JSON Schema type name -> the exact Python types of it (subclasses never reach the check:
they are left for the host). A float with an integral value is an integer too."""


def _accepted(kind: Any) -> tuple[frozenset[type] | None, bool, str]:
    """(the Python types `type: kind` allows, whether integral floats pass, their names)."""
    kinds = tuple(kind) if isinstance(kind, list) else (kind,)
    if kind is None or any(k not in _TYPES for k in kinds):
        return None, False, ""  # no type, or an unknown type name: not ours to judge
    accepted = frozenset(t for k in kinds for t in _TYPES[k])
    return accepted, "integer" in kinds, " | ".join(PY_NAMES[k] for k in kinds)


def _size(schema: dict[str, Any], keyword: str, noun: str) -> Check | None:
    """`minLength`/`maxLength`, `minItems`/`maxItems`, `minProperties`/`maxProperties`."""
    low, high = schema.get("min" + keyword), schema.get("max" + keyword)
    low = low if isinstance(low, int) else None
    high = high if isinstance(high, int) else None
    if low is None and high is None:
        return None

    def size(value: Any) -> None:
        if low is not None and len(value) < low:
            raise Invalid(f"must have at least {low} {noun}, not {len(value)}")
        if high is not None and len(value) > high:
            raise Invalid(f"must have at most {high} {noun}, not {len(value)}")

    return size


def _all(steps: list[Check | None]) -> Check | None:
    present = [s for s in steps if s is not None]
    if not present:
        return None
    if len(present) == 1:
        return present[0]

    def every(value: Any) -> None:
        for step in present:
            step(value)

    return every


class _Compiler:
    """Compiles one schema; `$ref`s resolve against the root it was made with."""

    def __init__(self, root: Any):
        self.root = root
        self.refs: dict[str, Check] = {}

    def compile(self, schema: Any) -> Check | None:
        """A check for `schema`, or None when it allows every value."""
        if schema is False:
            def nothing(value: Any) -> None:
                raise Invalid("is not allowed here")

            return nothing
        if not isinstance(schema, dict) or not schema:
            return None
        ref = schema.get("$ref")
        accepted, integral, wanted = _accepted(schema.get("type"))
        text, number = self._string(schema), self._number(schema)
        array, mapping = self._array(schema), self._object(schema)
        general = _all([self._ref(ref) if isinstance(ref, str) else None,
                        self._values(schema), self._combined(schema)])
        if not (accepted or text or number or array or mapping or general):
            return None
        nullable = schema.get("nullable") is True

        def check(value: Any) -> None:
            kind = type(value)
            if kind not in PLAIN or (nullable and value is None):
                return  # converted by the channel, and judged by the host
            if accepted is not None and kind not in accepted and not (
                    integral and kind is float and value.is_integer()):
                raise wrong_type(wanted, value)
            if kind is dict:
                if mapping is not None:
                    mapping(value)
            elif kind is str:
                if text is not None:
                    text(value)
            elif kind is list or kind is tuple:
                if array is not None:
                    array(value)
            elif (kind is int or kind is float) and number is not None:
                number(value)
            if general is not None:
                general(value)

        return check

    def _ref(self, ref: str) -> Check | None:
        known = self.refs.get(ref)
        if known is not None:
            return known
        # Remote and dangling references resolve to None, which allows every value: not
        # fetched, and a dangling one is the schema's fault, not the model's.
        target = resolve(self.root, ref)
        holder: list[Check | None] = [None]

        def follow(value: Any) -> None:  # compiled after it is named: references may recurse
            if holder[0] is not None:
                holder[0](value)

        self.refs[ref] = follow
        holder[0] = self.compile(target)
        return follow

    def _values(self, schema: dict[str, Any]) -> Check | None:
        options = schema.get("enum")
        has_const = "const" in schema
        if not isinstance(options, list) and not has_const:
            return None
        const = schema.get("const")

        def listed(value: Any) -> None:
            if isinstance(options, list) and not any(same(value, o) for o in options):
                shown = ", ".join(show(o) for o in options[:20])
                hint = did_you_mean(value, [o for o in options if isinstance(o, str)]) \
                    if isinstance(value, str) else ""
                raise Invalid(f"must be one of {shown}, not {show(value)}{hint}")
            if has_const and not same(value, const):
                raise Invalid(f"must be {show(const)}, not {show(value)}")

        return listed

    def _string(self, schema: dict[str, Any]) -> Check | None:
        pattern = schema.get("pattern")
        matcher = None
        if isinstance(pattern, str):
            import re

            try:
                matcher = re.compile(pattern).search
            except re.error:
                pass  # a pattern Python cannot read (ECMA-only syntax): not judged

        def matches(value: str) -> None:
            if matcher is not None and matcher(value) is None:
                raise Invalid(f"must match the pattern {pattern!r}, not {show(value)}")

        return _all([_size(schema, "Length", "characters"), matches if matcher else None])

    def _number(self, schema: dict[str, Any]) -> Check | None:
        bounds = []
        for key, words in (("minimum", ">="), ("maximum", "<="), ("exclusiveMinimum", ">"),
                           ("exclusiveMaximum", "<")):
            limit = schema.get(key)
            if isinstance(limit, bool):  # draft 4: exclusiveM* flags the matching bound
                bound = schema.get("minimum" if key == "exclusiveMinimum" else "maximum")
                limit = bound if limit and isinstance(bound, (int, float)) else None
            if isinstance(limit, (int, float)):
                bounds.append((words, limit))
        step = schema.get("multipleOf")
        step = step if isinstance(step, (int, float)) and not isinstance(step, bool) \
            and step > 0 else None
        if not bounds and step is None:
            return None
        def ranged(value: float) -> None:
            for words, limit in bounds:
                if _FAILS[words](value, limit):
                    raise Invalid(f"must be {words} {limit}, not {value}")
            if step is not None:
                ratio = value / step
                if abs(ratio - round(ratio)) > 1e-9:  # a tolerance: 0.07 is a multiple of 0.01
                    raise Invalid(f"must be a multiple of {step}, not {value}")

        return ranged

    def _array(self, schema: dict[str, Any]) -> Check | None:
        prefix, items = schema.get("prefixItems"), schema.get("items")
        if isinstance(items, list):  # draft 4-7 tuple form
            prefix, items = items, schema.get("additionalItems")
        heads = [self.compile(s) for s in prefix] if isinstance(prefix, list) else []
        rest = self.compile(items) if items is not None else None
        unique = schema.get("uniqueItems") is True

        def each(value: Any) -> None:
            for i, (check, item) in enumerate(zip(heads, value)):
                if check is not None:
                    inside(check, item, i)
            if rest is not None:
                for i in range(len(heads), len(value)):
                    inside(rest, value[i], i)
            if unique:
                for i, item in enumerate(value):
                    if any(same(item, other) for other in value[:i]):
                        raise Invalid("repeats an earlier item; items must be unique").at(i)

        needed = any(heads) or rest is not None or unique
        return _all([_size(schema, "Items", "items"), each if needed else None])

    def _object(self, schema: dict[str, Any]) -> Check | None:
        raw = schema.get("properties")
        props = {k: self.compile(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
        patterns = schema.get("patternProperties")
        patterns = [(p, self.compile(s)) for p, s in patterns.items()] \
            if isinstance(patterns, dict) else []
        extra = schema.get("additionalProperties", _MISSING)
        closed = extra is False
        other = self.compile(extra) if isinstance(extra, dict) else None
        required = tuple(schema.get("required") or ())

        def keys(value: dict[str, Any]) -> None:
            for key, item in value.items():
                sub = props.get(key, _MISSING)
                if sub is not _MISSING:
                    if sub is not None:
                        try:  # inline, not through inside: this loop is every call's cost
                            sub(item)
                        except Invalid as bad:
                            raise bad.at(key) from None
                elif not (patterns and self._patterned(patterns, key, item)):
                    if closed:
                        raise Invalid(f"has an unexpected key {key!r}"
                                       f"{did_you_mean(str(key), props)}")
                    if other is not None:
                        inside(other, item, key)
            # After the keys present, so a misspelt key is named with its suggestion first.
            for key in required:
                if key not in value:
                    raise Invalid(f"is missing the required key {key!r}")

        needed = any(props.values()) or patterns or closed or other or required
        return _all([keys if needed else None, _size(schema, "Properties", "keys")])

    def _patterned(self, patterns: list[tuple[str, Check | None]], key: Any, item: Any) -> bool:
        import re

        matched = False
        for pattern, check in patterns:
            try:
                found = re.search(pattern, str(key))
            except re.error:
                found = True  # cannot judge: treat as allowed
            if found:
                matched = True
                if check is not None:
                    inside(check, item, key)
        return matched

    def _combined(self, schema: dict[str, Any]) -> Check | None:
        steps: list[Check | None] = [self.compile(s) for s in schema.get("allOf") or ()]
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list) and options:
                steps.append(self._alternatives([self.compile(o) for o in options],
                                                exactly_one=key == "oneOf"))
        negated = schema.get("not")
        if isinstance(negated, (dict, bool)):
            steps.append(self._negated(self.compile(negated)))
        condition = schema.get("if")
        if isinstance(condition, (dict, bool)):
            steps.append(self._conditional(self.compile(condition), self.compile(
                schema.get("then", True)), self.compile(schema.get("else", True))))
        return _all(steps)

    @staticmethod
    def _alternatives(options: list[Check | None], exactly_one: bool) -> Check:
        def alternatives(value: Any) -> None:
            failures = [fails(check, value) for check in options]
            passed = failures.count(None)
            if exactly_one and passed > 1:
                raise Invalid(f"matches {passed} of the alternatives; it must match exactly one")
            if passed == 0:
                raise nearest([f for f in failures if f is not None], value)

        return alternatives

    @staticmethod
    def _negated(check: Check | None) -> Check:
        def negated(value: Any) -> None:
            if fails(check, value) is None:
                raise Invalid("matches a shape that is not allowed")

        return negated

    @staticmethod
    def _conditional(condition: Check | None, then: Check | None,
                     otherwise: Check | None) -> Check:
        def conditional(value: Any) -> None:
            branch = then if fails(condition, value) is None else otherwise
            if branch is not None:
                branch(value)

        return conditional
