"""Just enough of the WebAssembly component binary format to insert definitions into one.

A component is a list of sections. The interposer (`_interpose.py`) inserts a core module,
its instance and the functions it exports right before libc's instantiation; every core
function and core instance defined after that point then has a higher index, and each
reference to one is renumbered (`Shift`). Only the three kinds of section that hold such
references are decoded (core instances, aliases, canonical functions); the rest are copied
as they are. Anything this reader does not know raises, rather than being copied wrong.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from .._wasmtime.leb128 import read_uleb, uleb

__all__ = ["CoreFuncType", "Section", "Instantiate", "InlineExports", "Alias", "Canon", "Shift",
           "Counts", "sections", "encode", "core_func_imports", "parse_core_instances",
           "encode_core_instances", "parse_aliases", "encode_aliases", "parse_canons",
           "encode_canons", "imports", "IMPORT_FUNC", "CORE_FUNC", "CORE_MEMORY",
           "CORE_INSTANCE", "CORE_MODULE", "SECTION_CORE_MODULE", "SECTION_CORE_INSTANCE",
           "SECTION_ALIAS", "SECTION_CANON", "SECTION_IMPORT"]

COMPONENT_MAGIC = b"\x00asm\x0d\x00\x01\x00"
CORE_FUNC, CORE_TABLE, CORE_MEMORY, CORE_GLOBAL = 0x00, 0x01, 0x02, 0x03
CORE_MODULE, CORE_INSTANCE = 0x11, 0x12
SECTION_CORE_MODULE, SECTION_CORE_INSTANCE, SECTION_ALIAS = 1, 2, 6
SECTION_CANON, SECTION_IMPORT = 8, 10
_LIFT, _LOWER = 0x00, 0x01
_RESOURCE_OPS = (0x02, 0x03, 0x04)  # resource.new, .drop, .rep: a type index each
_VALTYPES = {0x7F: "i32", 0x7E: "i64", 0x7D: "f32", 0x7C: "f64"}
_OPTS_WITH_INDEX = {0x03: "memory", 0x04: "func", 0x05: "func", 0x07: "func"}
"""memory, realloc, post-return, callback: the canonical options that carry an index."""
_OPTS_BARE = (0x00, 0x01, 0x02, 0x06)  # string encodings, async


def _read_name(b: bytes, i: int) -> tuple[str, int]:
    n, i = read_uleb(b, i)
    return b[i:i + n].decode(), i + n


def _name(s: str) -> bytes:
    raw = s.encode()
    return uleb(len(raw)) + raw


@dataclass(frozen=True)
class CoreFuncType:
    params: tuple[str, ...]
    results: tuple[str, ...]

    def wat(self) -> str:
        params = f"(param {' '.join(self.params)})" if self.params else ""
        results = f"(result {' '.join(self.results)})" if self.results else ""
        return f"{params} {results}".strip()


@dataclass
class Section:
    id: int
    body: bytes


def sections(component: bytes) -> list[Section]:
    if component[:8] != COMPONENT_MAGIC:
        raise ValueError("not a WebAssembly component")
    out, i = [], 8
    while i < len(component):
        size, j = read_uleb(component, i + 1)
        out.append(Section(component[i], component[j:j + size]))
        i = j + size
    return out


def encode(secs: list[Section]) -> bytes:
    out = bytearray(COMPONENT_MAGIC)
    for sec in secs:
        out.append(sec.id)
        out += uleb(len(sec.body)) + sec.body
    return bytes(out)


def _core_sections(module: bytes) -> Iterator[tuple[int, int, int]]:
    i = 8
    while i < len(module):
        size, j = read_uleb(module, i + 1)
        yield module[i], j, j + size
        i = j + size


def core_func_imports(module: bytes) -> dict[tuple[str, str], CoreFuncType]:
    """A core module's function imports: (module, name) -> type."""
    types: list[CoreFuncType] = []
    out: dict[tuple[str, str], CoreFuncType] = {}
    for sid, i, _end in _core_sections(module):
        if sid == 1:  # types
            n, i = read_uleb(module, i)
            for _ in range(n):
                if module[i] != 0x60:
                    raise ValueError(f"core type form {module[i]:#x} is not a function")
                kinds: list[tuple[str, ...]] = []
                i += 1
                for _part in range(2):
                    count, i = read_uleb(module, i)
                    kinds.append(tuple(_VALTYPES[module[i + k]] for k in range(count)))
                    i += count
                types.append(CoreFuncType(kinds[0], kinds[1]))
        elif sid == 2:  # imports
            n, i = read_uleb(module, i)
            for _ in range(n):
                mod, i = _read_name(module, i)
                name, i = _read_name(module, i)
                kind = module[i]
                i += 1
                if kind == 0x00:
                    index, i = read_uleb(module, i)
                    out[(mod, name)] = types[index]
                    continue
                if kind == 0x01:  # a table: its element type, then limits
                    i += 1
                if kind in (0x01, 0x02):
                    flags = module[i]
                    _, i = read_uleb(module, i + 1)
                    if flags & 1:
                        _, i = read_uleb(module, i)
                elif kind == 0x03:  # a global: value type and mutability
                    i += 2
                elif kind == 0x04:  # a tag
                    _, i = read_uleb(module, i + 1)
                else:
                    raise ValueError(f"core import kind {kind:#x}")
    return out


# -- core instances ----------------------------------------------------------------------------


@dataclass
class Instantiate:
    module: int
    args: list[tuple[str, int]]
    """import module name -> core instance"""


@dataclass
class InlineExports:
    exports: list[tuple[str, int, int]]
    """(name, core sort, index)"""


def parse_core_instances(b: bytes) -> list[Instantiate | InlineExports]:
    n, i = read_uleb(b, 0)
    out: list[Instantiate | InlineExports] = []
    for _ in range(n):
        kind = b[i]
        i += 1
        if kind == 0x00:
            module, i = read_uleb(b, i)
            count, i = read_uleb(b, i)
            args = []
            for _arg in range(count):
                name, i = _read_name(b, i)
                if b[i] != CORE_INSTANCE:
                    raise ValueError("an instantiation argument that is not an instance")
                index, i = read_uleb(b, i + 1)
                args.append((name, index))
            out.append(Instantiate(module, args))
        elif kind == 0x01:
            count, i = read_uleb(b, i)
            exports = []
            for _export in range(count):
                name, i = _read_name(b, i)
                sort = b[i]
                index, i = read_uleb(b, i + 1)
                exports.append((name, sort, index))
            out.append(InlineExports(exports))
        else:
            raise ValueError(f"core instance form {kind:#x}")
    return out


def encode_core_instances(items: list[Instantiate | InlineExports]) -> bytes:
    out = bytearray(uleb(len(items)))
    for item in items:
        if isinstance(item, Instantiate):
            out += b"\x00" + uleb(item.module) + uleb(len(item.args))
            for name, index in item.args:
                out += _name(name) + bytes([CORE_INSTANCE]) + uleb(index)
        else:
            out += b"\x01" + uleb(len(item.exports))
            for name, sort, index in item.exports:
                out += _name(name) + bytes([sort]) + uleb(index)
    return bytes(out)


# -- aliases -----------------------------------------------------------------------------------


@dataclass
class Alias:
    sort: bytes
    """The sort's bytes: 0x00 and a core sort, or one component sort byte."""
    target: int
    """0x00 an export of a component instance, 0x01 of a core instance, 0x02 outer."""
    index: int
    name: str = ""
    outer_index: int = 0

    @property
    def core_sort(self) -> int | None:
        return self.sort[1] if self.sort[0] == 0x00 else None


def parse_aliases(b: bytes) -> list[Alias]:
    n, i = read_uleb(b, 0)
    out = []
    for _ in range(n):
        width = 2 if b[i] == 0x00 else 1
        sort, target = b[i:i + width], b[i + width]
        i += width + 1
        index, i = read_uleb(b, i)
        if target in (0x00, 0x01):
            name, i = _read_name(b, i)
            out.append(Alias(sort, target, index, name))
        else:
            outer, i = read_uleb(b, i)
            out.append(Alias(sort, target, index, outer_index=outer))
    return out


def encode_aliases(items: list[Alias]) -> bytes:
    out = bytearray(uleb(len(items)))
    for a in items:
        out += a.sort + bytes([a.target]) + uleb(a.index)
        out += _name(a.name) if a.target in (0x00, 0x01) else uleb(a.outer_index)
    return bytes(out)


# -- canonical functions -----------------------------------------------------------------------


@dataclass
class Canon:
    op: int
    index: int
    """lift: a core func; lower: a component func; resource ops: a type."""
    options: list[tuple[int, int | None]] = field(default_factory=list)
    type: int = 0
    """lift only: the component function type."""


def parse_canons(b: bytes) -> list[Canon]:
    n, i = read_uleb(b, 0)
    out = []
    for _ in range(n):
        op = b[i]
        i += 1
        if op in (_LIFT, _LOWER):
            if b[i] != 0x00:
                raise ValueError(f"canon {op:#x} form {b[i]:#x}")
            index, i = read_uleb(b, i + 1)
            count, i = read_uleb(b, i)
            options: list[tuple[int, int | None]] = []
            for _opt in range(count):
                opt = b[i]
                i += 1
                if opt in _OPTS_WITH_INDEX:
                    value, i = read_uleb(b, i)
                    options.append((opt, value))
                elif opt in _OPTS_BARE:
                    options.append((opt, None))
                else:
                    raise ValueError(f"canonical option {opt:#x}")
            ty = 0
            if op == _LIFT:
                ty, i = read_uleb(b, i)
            out.append(Canon(op, index, options, ty))
        elif op in _RESOURCE_OPS:
            ty, i = read_uleb(b, i)
            out.append(Canon(op, ty))
        else:
            raise ValueError(f"canonical function {op:#x} (not a WASI 0.2 component?)")
    return out


def encode_canons(items: list[Canon]) -> bytes:
    out = bytearray(uleb(len(items)))
    for c in items:
        out.append(c.op)
        if c.op in (_LIFT, _LOWER):
            out += b"\x00" + uleb(c.index) + uleb(len(c.options))
            for opt, value in c.options:
                out += bytes([opt]) + (uleb(value) if value is not None else b"")
            if c.op == _LIFT:
                out += uleb(c.type)
        else:
            out += uleb(c.index)
    return bytes(out)


def imports(b: bytes) -> list[tuple[str, int, int | None]]:
    """An import section's entries: (name, extern kind, core sort for a core import)."""
    n, i = read_uleb(b, 0)
    out: list[tuple[str, int, int | None]] = []
    for _ in range(n):
        prefix = b[i]
        name, i = _read_name(b, i + 1)
        if prefix == 0x01:
            _, i = _read_name(b, i)  # a version suffix
        kind, core = b[i], None
        i += 1
        if kind == 0x00:  # a core module
            core = b[i]
            _, i = read_uleb(b, i + 1)
        elif kind == 0x03:  # a type: eq bound (then an index) or a resource
            bound = b[i]
            i += 1
            if bound == 0x00:
                _, i = read_uleb(b, i)
        elif kind in (0x01, 0x04, 0x05):
            _, i = read_uleb(b, i)
        else:
            raise ValueError(f"import kind {kind:#x}")
        out.append((name, kind, core))
    return out


IMPORT_FUNC = 0x01


# -- index spaces ------------------------------------------------------------------------------


@dataclass
class Counts:
    """How many core functions, instances and modules the sections taken so far define."""

    core_func: int = 0
    core_instance: int = 0
    core_module: int = 0

    def take(self, sec: Section) -> None:
        if sec.id == SECTION_CORE_MODULE:
            self.core_module += 1
        elif sec.id == SECTION_CORE_INSTANCE:
            self.core_instance += len(parse_core_instances(sec.body))
        elif sec.id == SECTION_ALIAS:
            for a in parse_aliases(sec.body):
                if a.core_sort == CORE_FUNC:
                    self.core_func += 1
                elif a.core_sort == CORE_INSTANCE:
                    self.core_instance += 1
                elif a.core_sort == CORE_MODULE:
                    self.core_module += 1
        elif sec.id == SECTION_CANON:
            self.core_func += sum(1 for c in parse_canons(sec.body) if c.op != _LIFT)
        elif sec.id == SECTION_IMPORT:
            self.core_module += sum(1 for _, _, core in imports(sec.body) if core == CORE_MODULE)


@dataclass(frozen=True)
class Shift:
    """Renumbering after an insertion: core functions from `func_from` on move up by `funcs`,
    core instances from `instance_from` on by `instances`."""

    func_from: int
    funcs: int
    instance_from: int
    instances: int

    def func(self, index: int) -> int:
        return index + self.funcs if index >= self.func_from else index

    def instance(self, index: int) -> int:
        return index + self.instances if index >= self.instance_from else index

    def core_sort(self, sort: int, index: int) -> int:
        if sort == CORE_FUNC:
            return self.func(index)
        return self.instance(index) if sort == CORE_INSTANCE else index

    def section(self, sec: Section) -> Section:
        """`sec` with its references renumbered (sections that hold none come back as
        they are: nested components have index spaces of their own)."""
        if sec.id == SECTION_CORE_INSTANCE:
            items = parse_core_instances(sec.body)
            for item in items:
                if isinstance(item, Instantiate):
                    item.args = [(n, self.instance(x)) for n, x in item.args]
                else:
                    item.exports = [(n, s, self.core_sort(s, x)) for n, s, x in item.exports]
            return Section(sec.id, encode_core_instances(items))
        if sec.id == SECTION_ALIAS:
            aliases = parse_aliases(sec.body)
            for a in aliases:
                if a.target == 0x01:
                    a.index = self.instance(a.index)
            return Section(sec.id, encode_aliases(aliases))
        if sec.id == SECTION_CANON:
            canons = parse_canons(sec.body)
            for c in canons:
                if c.op == _LIFT:
                    c.index = self.func(c.index)
                c.options = [(o, self.func(v) if v is not None and _OPTS_WITH_INDEX[o] == "func"
                              else v) for o, v in c.options]
            return Section(sec.id, encode_canons(canons))
        return sec
