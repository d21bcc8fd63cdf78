"""The interposer: a small core module between the guest's libc and the WASI imports it uses.

The component model gives a host no way to wrap one of wasmtime's own WASI functions (its
resources cannot be made from Python, nor its functions called). So the built component is
rewritten once: libc's calls to the imports that can grow the session folder, sleep, or
reach the network go to our wrappers first. A wrapper asks the host (`guard`, a scalar
import of our own world) and then either calls the real function or writes the error result
itself, where libc expects it:

- writes to a file stream, `descriptor.write`/`set-size` and creating files, folders and
  links count against the session folder's quota (refused: `quota` / a closed stream);
- the console's streams (from `get-stdout`/`get-stderr`) go to the host's `console` import;
- a guest that sleeps or polls only timers waits in the host, where a stop ends the wait;
- sockets and name lookups are refused outright (`not-supported`, as on the other runtimes);
- descriptors, streams and timers are told to the host as they are made and dropped, so a
  renewal knows whether the memory it writes back names only handles that are still alive.

The wrappers are plain WebAssembly (made from text by `wasmtime.wat2wasm`); they keep no
state of their own, since the host knows each handle's kind (`_guard.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum

from ._binary import (
    CORE_FUNC,
    CORE_MEMORY,
    IMPORT_FUNC,
    SECTION_ALIAS,
    SECTION_CANON,
    SECTION_CORE_INSTANCE,
    SECTION_CORE_MODULE,
    SECTION_IMPORT,
    Alias,
    Canon,
    CoreFuncType,
    Counts,
    InlineExports,
    Instantiate,
    Section,
    Shift,
    core_func_imports,
    encode,
    encode_aliases,
    encode_canons,
    encode_core_instances,
    imports,
    parse_aliases,
    parse_canons,
    parse_core_instances,
    sections,
)

__all__ = ["Op", "interpose", "GUARD_IMPORT", "CONSOLE_IMPORT", "QUOTA", "TOO_MANY"]

GUARD_IMPORT, CONSOLE_IMPORT = "guard", "console"
_GUARD = CoreFuncType(("i32", "i32", "i64"), ("i64",))
_CONSOLE = CoreFuncType(("i32", "i32", "i32"), ())
_STREAMS = "wasi:io/streams@0.2.0"
_FS = "wasi:filesystem/types@0.2.0"
_CLOCK = "wasi:clocks/monotonic-clock@0.2.0"
_POLL = "wasi:io/poll@0.2.0"
_STDIN, _STDOUT, _STDERR = ("wasi:cli/stdin@0.2.0", "wasi:cli/stdout@0.2.0",
                            "wasi:cli/stderr@0.2.0")
_SOCKETS = ("wasi:sockets/tcp-create-socket@0.2.0", "wasi:sockets/udp-create-socket@0.2.0",
            "wasi:sockets/ip-name-lookup@0.2.0")
QUOTA, TOO_MANY = 6, 22
"""filesystem error-codes: `quota` (EDQUOT) and, for an open past the limit of open files,
`insufficient-memory` (ENOMEM: the error-codes have no EMFILE)."""
_NOT_SUPPORTED, _CLOSED = 2, 1
"""sockets error-code `not-supported`, stream-error `closed`."""


class Op(IntEnum):
    """What a wrapper tells the guard: (op, handle, value) -> verdict."""

    WRITE = 1
    """A stream write of `value` bytes: < 0 refuse, 0 go on, 1/2 a console stream (fd)."""
    FILE_STREAM = 2
    DROP_STREAM = 3
    WRITE_AT = 4
    SET_SIZE = 5
    OPEN = 6
    """`handle`: open-flags, `value`: descriptor-flags."""
    ENTRY = 7
    CHANGE = 8
    TIMER = 9
    """A pollable `handle` that is ready `value` ns from now."""
    DROP_POLLABLE = 10
    BLOCK = 11
    POLL_ITEM = 12
    POLL_WAIT = 13
    CONSOLE = 14
    """`handle` is the console stream of fd `value`."""
    OPENED = 15
    """A file or folder opened as descriptor `handle`."""
    DROP_DESCRIPTOR = 16
    INPUT_STREAM = 17
    """An input stream `handle`: of a file, or the console's."""
    DROP_INPUT = 18


def _get(n: int) -> str:
    return " ".join(f"(local.get {i})" for i in range(n))


def _ask(op: Op, handle: str, value: str) -> str:
    return f"(call $guard (i32.const {int(op)}) {handle} {value})"


def _tell(op: Op, handle: str, value: str = "(i64.const 0)") -> str:
    return f"(drop {_ask(op, handle, value)})"


def _error(ret: int, payload_at: int, code: int | str) -> str:
    """Write `result::err(code)` where libc expects the result, and return (`code`: a
    constant, or an expression for an i32)."""
    value = f"(i32.const {code})" if isinstance(code, int) else code
    return (f"(i32.store8 (local.get {ret}) (i32.const 1)) "
            f"(i32.store8 offset={payload_at} (local.get {ret}) {value}) (return)")


def _guarded(op: Op, handle: str, value: str, nargs: int, payload_at: int) -> str:
    """Ask first; refused (the guard's answer is minus an error-code), the real function is
    not called and that error is the result. Its last local is an i64 of its own."""
    ret, verdict = nargs - 1, f"(local.get {nargs})"
    return (f"(local.set {nargs} {_ask(op, handle, value)}) "
            f"(if (i64.lt_s {verdict} (i64.const 0)) (then "
            f"{_error(ret, payload_at, f'(i32.wrap_i64 (i64.sub (i64.const 0) {verdict}))')})) "
            f"(call $real {_get(nargs)})")


def _u64(k: int) -> str:
    return f"(i64.extend_i32_u (local.get {k}))"


def _stream_write(nargs: int, length: str) -> str:
    """A stream write (its args: self, then the bytes, then the result pointer): refused as
    a closed stream; the console's goes to the host instead."""
    ret = nargs - 1
    return (f"(local.set {nargs} {_ask(Op.WRITE, '(local.get 0)', length)}) "
            f"(if (i64.lt_s (local.get {nargs}) (i64.const 0)) "
            f"(then {_error(ret, 4, _CLOSED)})) "
            f"(if (i64.gt_s (local.get {nargs}) (i64.const 0)) (then "
            f"(call $console (i32.wrap_i64 (local.get {nargs})) (local.get 1) (local.get 2)) "
            f"(i32.store8 (local.get {ret}) (i32.const 0)) (return))) "
            f"(call $real {_get(nargs)})")


def _opened_stream(nargs: int, op: Op = Op.FILE_STREAM) -> str:
    ret = nargs - 1
    return (f"(call $real {_get(nargs)}) (if (i32.eqz (i32.load8_u (local.get {ret}))) (then "
            f"{_tell(op, f'(i32.load offset=4 (local.get {ret}))')}))")


def _console_stream(fd: int, op: Op = Op.CONSOLE) -> str:
    return (f"(local.set 0 (call $real)) {_tell(op, '(local.get 0)', f'(i64.const {fd})')}"
            " (local.get 0)")


_POLL_LOOP = (
    "(local.set 3 (i32.const 0)) (block $done (loop $next "
    "(br_if $done (i32.ge_u (local.get 3) (local.get 1))) "
    + _tell(Op.POLL_ITEM, "(i32.load (i32.add (local.get 0) (i32.shl (local.get 3) (i32.const 2))))",
            _u64(3))
    + " (local.set 3 (i32.add (local.get 3) (i32.const 1))) (br $next))) "
    + _tell(Op.POLL_WAIT, "(i32.const 0)", _u64(1)) + f" (call $real {_get(3)})")

_WRAPPERS: dict[tuple[str, str], tuple[str, str]] = {
    # (module, name): (locals, body); `$real` is the function wrapped
    (_STREAMS, "[method]output-stream.write"): ("(local i64)", _stream_write(4, _u64(2))),
    (_STREAMS, "[method]output-stream.blocking-write-and-flush"):
        ("(local i64)", _stream_write(4, _u64(2))),
    (_STREAMS, "[resource-drop]output-stream"):
        ("", _tell(Op.DROP_STREAM, "(local.get 0)") + " (call $real (local.get 0))"),
    (_STREAMS, "[resource-drop]input-stream"):
        ("", _tell(Op.DROP_INPUT, "(local.get 0)") + " (call $real (local.get 0))"),
    (_FS, "[method]descriptor.read-via-stream"): ("", _opened_stream(3, Op.INPUT_STREAM)),
    (_FS, "[method]descriptor.write-via-stream"): ("", _opened_stream(3)),
    (_FS, "[method]descriptor.append-via-stream"): ("", _opened_stream(2)),
    (_FS, "[method]descriptor.write"):
        ("(local i64)", _guarded(Op.WRITE_AT, "(local.get 0)", _u64(2), 5, 8)),
    (_FS, "[method]descriptor.set-size"):
        ("(local i64)", _guarded(Op.SET_SIZE, "(local.get 0)", "(local.get 1)", 3, 1)),
    (_FS, "[method]descriptor.open-at"):
        ("(local i64)", _guarded(Op.OPEN, "(local.get 4)", _u64(5), 7, 4)
         + " (if (i32.eqz (i32.load8_u (local.get 6))) (then "
         + _tell(Op.OPENED, "(i32.load offset=4 (local.get 6))") + "))"),
    (_FS, "[resource-drop]descriptor"):
        ("", _tell(Op.DROP_DESCRIPTOR, "(local.get 0)") + " (call $real (local.get 0))"),
    (_FS, "[method]descriptor.create-directory-at"):
        ("(local i64)", _guarded(Op.ENTRY, "(local.get 0)", "(i64.const 0)", 4, 1)),
    (_FS, "[method]descriptor.symlink-at"):
        ("(local i64)", _guarded(Op.ENTRY, "(local.get 0)", "(i64.const 0)", 6, 1)),
    (_FS, "[method]descriptor.link-at"):
        ("(local i64)", _guarded(Op.ENTRY, "(local.get 0)", "(i64.const 0)", 8, 1)),
    (_FS, "[method]descriptor.rename-at"):
        ("", _tell(Op.CHANGE, "(local.get 0)") + f" (call $real {_get(7)})"),
    (_STDIN, "get-stdin"): ("(local i32)", _console_stream(0, Op.INPUT_STREAM)),
    (_STDOUT, "get-stdout"): ("(local i32)", _console_stream(1)),
    (_STDERR, "get-stderr"): ("(local i32)", _console_stream(2)),
    (_CLOCK, "subscribe-duration"):
        ("(local i32)", "(local.set 1 (call $real (local.get 0))) "
         + _tell(Op.TIMER, "(local.get 1)", "(local.get 0)") + " (local.get 1)"),
    (_CLOCK, "subscribe-instant"):
        ("(local i32)", "(local.set 1 (call $real (local.get 0))) "
         + _tell(Op.TIMER, "(local.get 1)", "(i64.sub (local.get 0) (call $now))")
         + " (local.get 1)"),
    (_POLL, "[resource-drop]pollable"):
        ("", _tell(Op.DROP_POLLABLE, "(local.get 0)") + " (call $real (local.get 0))"),
    (_POLL, "[method]pollable.block"):
        ("", _tell(Op.BLOCK, "(local.get 0)") + " (call $real (local.get 0))"),
    (_POLL, "poll"): ("(local i32)", _POLL_LOOP),
    (_SOCKETS[0], "create-tcp-socket"): ("", _error(1, 4, _NOT_SUPPORTED)),
    (_SOCKETS[1], "create-udp-socket"): ("", _error(1, 4, _NOT_SUPPORTED)),
    (_SOCKETS[2], "resolve-addresses"): ("", _error(3, 4, _NOT_SUPPORTED)),
}


def _module_text(funcs: dict[tuple[str, str], CoreFuncType], now: CoreFuncType) -> str:
    lines = ["(module", '  (import "real" "memory" (memory 0))',
             f'  (import "real" "{GUARD_IMPORT}" (func $guard {_GUARD.wat()}))',
             f'  (import "real" "{CONSOLE_IMPORT}" (func $console {_CONSOLE.wat()}))',
             f'  (import "real" "{_CLOCK}#now" (func $now {now.wat()}))']
    for k, ((module, name), ty) in enumerate(funcs.items()):
        lines.append(f'  (import "real" "{module}#{name}" (func $r{k} {ty.wat()}))')
    for k, (key, ty) in enumerate(funcs.items()):
        local, body = _WRAPPERS[key]
        lines.append(f'  (func (export "{key[0]}#{key[1]}") {ty.wat()} {local} '
                     f'{body.replace("$real", f"$r{k}")})')
    return "\n".join([*lines, ")"])


def _func_import_index(secs: list[Section], wanted: str) -> int:
    """The component function index of the world's import `wanted`."""
    index = 0
    for sec in secs:
        if sec.id == SECTION_IMPORT:
            for name, kind, _ in imports(sec.body):
                if kind == IMPORT_FUNC:
                    if name == wanted:
                        return index
                    index += 1
        elif sec.id == SECTION_ALIAS:
            index += sum(1 for a in parse_aliases(sec.body) if a.sort == b"\x01")
        elif sec.id == SECTION_CANON:
            index += sum(1 for c in parse_canons(sec.body) if c.op == 0x00)
    raise ValueError(f"the component's world imports no {wanted!r}")


@dataclass
class _Site:
    """Where libc is instantiated: the section (`at`) and its entry (`entry`), what is
    defined before it, and what each instance defined so far exports."""

    at: int
    entry: int
    items: list[Instantiate | InlineExports]
    counts: Counts
    exported: dict[int, dict[str, tuple[int, int]]]


def _libc_site(secs: list[Section], libc: int) -> _Site:
    counts = Counts()
    exported: dict[int, dict[str, tuple[int, int]]] = {}
    for at, sec in enumerate(secs):
        if sec.id != SECTION_CORE_INSTANCE:
            counts.take(sec)
            continue
        items = parse_core_instances(sec.body)
        for j, item in enumerate(items):
            if isinstance(item, Instantiate) and item.module == libc:
                return _Site(at, j, items, counts, exported)
            if isinstance(item, InlineExports):
                exported[counts.core_instance] = {n: (s, x) for n, s, x in item.exports}
            counts.core_instance += 1
    raise ValueError("the component never instantiates its libc")


def interpose(component: bytes, wat2wasm: Callable[[str], bytes | bytearray]) -> bytes:
    """`component` with the wrappers between its libc and the WASI functions they wrap."""
    secs = sections(component)
    modules = [s.body for s in secs if s.id == SECTION_CORE_MODULE]
    libc = next((k for k, m in enumerate(modules) if (_FS, "[method]descriptor.open-at")
                 in core_func_imports(m)), None)
    if libc is None:
        raise ValueError("no core module of the component imports wasi:filesystem")
    libc_imports = core_func_imports(modules[libc])
    funcs = {key: libc_imports[key] for key in _WRAPPERS if key in libc_imports}
    site = _libc_site(secs, libc)
    counts, exported = site.counts, site.exported
    if counts.core_module != len(modules):
        raise ValueError("core modules are defined after libc's instantiation")
    instantiate = site.items[site.entry]
    assert isinstance(instantiate, Instantiate)
    given = dict(instantiate.args)
    memory = exported[given["env"]]["memory"][1]
    now = exported[given[_CLOCK]]["now"][1]

    # The new definitions: the module, our two imports lowered for it, an instance of what it
    # imports, its instance, an alias per wrapper, and libc's new argument instances.
    func0, inst0 = counts.core_func, counts.core_instance
    reals = [("memory", CORE_MEMORY, memory), (GUARD_IMPORT, CORE_FUNC, func0),
             (CONSOLE_IMPORT, CORE_FUNC, func0 + 1), (f"{_CLOCK}#now", CORE_FUNC, now)]
    reals += [(f"{m}#{n}", CORE_FUNC, exported[given[m]][n][1]) for m, n in funcs]
    wrapped_modules = sorted({m for m, _ in funcs})
    wrapper = {key: func0 + 2 + j for j, key in enumerate(funcs)}
    new_args: list[Instantiate | InlineExports] = [
        InlineExports([(n, s, wrapper.get((m, n), x)) for n, (s, x) in exported[given[m]].items()])
        for m in wrapped_modules]
    lowered = [Canon(0x01, _func_import_index(secs, GUARD_IMPORT)),
               Canon(0x01, _func_import_index(secs, CONSOLE_IMPORT), [(0x03, memory)])]
    inserted = [
        Section(SECTION_CORE_MODULE, bytes(wat2wasm(_module_text(funcs, libc_imports[(_CLOCK, "now")])))),
        Section(SECTION_CANON, encode_canons(lowered)),
        Section(SECTION_CORE_INSTANCE, encode_core_instances([
            InlineExports(reals), Instantiate(counts.core_module, [("real", inst0)])])),
        Section(SECTION_ALIAS, encode_aliases([Alias(b"\x00\x00", 0x01, inst0 + 1, f"{m}#{n}")
                                               for m, n in funcs])),
        Section(SECTION_CORE_INSTANCE, encode_core_instances(new_args)),
    ]

    # Everything from libc's instantiation on moves up; libc itself gets the new arguments.
    shift = Shift(func0, 2 + len(funcs), inst0, 2 + len(wrapped_modules))
    rest = parse_core_instances(shift.section(Section(
        SECTION_CORE_INSTANCE, encode_core_instances(site.items[site.entry:]))).body)
    first = rest[0]
    assert isinstance(first, Instantiate)
    moved = {m: inst0 + 2 + j for j, m in enumerate(wrapped_modules)}
    first.args = [(n, moved.get(n, x)) for n, x in first.args]
    before = site.items[:site.entry]
    out = secs[:site.at]
    if before:
        out.append(Section(SECTION_CORE_INSTANCE, encode_core_instances(before)))
    out += inserted
    out.append(Section(SECTION_CORE_INSTANCE, encode_core_instances(rest)))
    out += [shift.section(s) for s in secs[site.at + 1:]]
    return encode(out)
