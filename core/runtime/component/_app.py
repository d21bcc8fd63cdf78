"""What componentize-py builds: our WIT world and the app module it pre-initializes.

The app module runs once, at build time, inside componentize-py's own wasmtime: everything
it imports (the guest package, asyncio, the usual standard library) and the warm-up session
it plays are in the component's memory image, so a new guest starts with all of it in about
a millisecond. At run time each turn executes source in one persistent namespace, like the
data runtime's `turn`.

Nothing here runs on the host: these are texts written into the build folder.
"""

from __future__ import annotations

from . import _in_memory

__all__ = ["WORLD", "WIT", "APP_MODULE", "APP_SOURCE", "PRELOAD", "STDLIB", "STDLIB_OUT",
           "WARMUP_FILE", "NAMES_FILE"]

WORLD = "sandbox"
WIT = """\
package tooliscode:sandbox;

world sandbox {
  /// One round trip to the host: a request in, its answer out (bytes carried as latin-1).
  import host-call: func(request: string) -> string;
  /// The host's verdict on a folder, clock or console operation (see the interposer).
  import guard: func(op: u32, handle: u32, value: s64) -> s64;
  /// Bytes written to the guest's stdout (fd 1) or stderr (fd 2) descriptor.
  import console: func(fd: u32, data: list<u8>);
  /// Run Python source in the guest's persistent namespace: 0 when it ran, 1 when it raised.
  export turn: func(source: string) -> s32;
}
"""

APP_MODULE = "tooliscode_sandbox"
PRELOAD = ("asyncio", "json", "re", "datetime", "decimal", "collections", "itertools",
           "functools", "math", "statistics", "random", "string", "textwrap", "dataclasses",
           "typing", "csv", "io", "base64", "hashlib", "pathlib", "traceback", "difflib",
           "operator", "copy", "enum", "fractions", "heapq", "bisect", "uuid", "zlib",
           "struct", "time", "linecache", "ast")
"""The standard library every guest has imported (cells use these most); the rest loads
from the read-only stdlib folder, compiled once."""
STDLIB = "/python"
"""Where the guest's standard library is (componentize-py's PYTHONHOME), at build time and at
run time alike."""
STDLIB_OUT = "_stdlib"
"""A folder in the build's app folder: when it exists, the build copies componentize-py's
standard library into it (the copy is served read-only to guests at /python)."""
WARMUP_FILE = "_warmup.json"
NAMES_FILE = "_immortal.bin"
"""Where the app module names the objects the build makes immortal (`_immortal.py`)."""

APP_SOURCE = f'''\
"""tooliscode's sandbox: pre-initialized by componentize-py (see _app.py on the host)."""

import os
import sys

if os.path.isdir("/0/{STDLIB_OUT}"):  # first, before anything else fills the heap
    import shutil

    shutil.copytree("/python", "/0/{STDLIB_OUT}/python", dirs_exist_ok=True)
    del shutil

import gc
import importlib
import json
import marshal

import wit_world

for _name in {PRELOAD!r}:
    importlib.import_module(_name)

for _name in sorted(os.listdir("/0/tooliscode_guest")):
    if _name.endswith(".py"):
        importlib.import_module("tooliscode_guest." + _name[:-3])
import tooliscode_guest
from tooliscode_guest import heap, main, rehearsal
from importlib.machinery import FileFinder


class _Listed(FileFinder):
    """A folder of the standard library, which guests can only read: the listing taken here,
    at build time, holds. The folder guests see is a copy made after it (its mtime differs),
    so without this a guest's first import from outside the image would list it again, a
    round trip to the host's I/O threads per entry (some 8 ms for {STDLIB})."""

    def _fill_cache(self):
        if not self._path_cache:  # never listed (`invalidate_caches` keeps the listing)
            super()._fill_cache()


with open("/0/{WARMUP_FILE}", encoding="utf-8") as _f:
    _script = json.load(_f)
main.prepare()
rehearsal.rehearse(main.Guest().handle, _script)
main.forget_session()
rehearsal.rehearse_served(main.serve, _script)  # the command loop's own code too
main.forget_session()


_BIG = 1 << 20
_MORE = '{{"op":"more"}}'


def _room(nbytes):
    """Make sure `nbytes` can be had: a MemoryError here is an ordinary one, while the
    component runtime's own copy of a string failing would trap the whole guest."""
    bytearray(nbytes)


_IN_MEMORY = {_in_memory.IN_MEMORY}
_AT, _WHERE, _THERE, _TEXT = {tuple(m.decode() for m in (_in_memory.AT, _in_memory.WHERE,
                                                         _in_memory.THERE, _in_memory.TEXT))!r}
_DATA_AT = sys.getsizeof(b"") - 1  # where a bytes object's data starts, from its address


def exchange(request):
    """One round trip to the host: `request` bytes in, the answer's bytes out. A big request
    is read by the host where it lies (`_in_place`). A big answer comes in two steps: its
    size first (after a NUL, which no marshal data starts with), then, once there is room
    for it, the answer itself."""
    big = len(request) > _IN_MEMORY and type(request) is bytes  # its data at a known place
    answer = _in_place(request) if big else None
    if answer is None:
        if len(request) > _BIG:
            _room(2 * len(request))  # the text made of it, and the runtime's copy of that
        answer = wit_world.host_call(request.decode("latin-1"))
    if answer[:1] == "\\0":
        _room(3 * int(answer[1:]))  # the UTF-8 text, the str made of it, its bytes
        answer = wit_world.host_call(_MORE)
    return answer.encode("latin-1")


def _in_place(request):
    """The answer to `request`, which the host reads in this memory (see the host's
    `_in_memory.py`), or None when it asks for the text instead. The host may first ask
    where a word of its own lies, to know which memory is this one."""
    at = "%d:%d" % (id(request) + _DATA_AT, len(request))
    answer = wit_world.host_call(_AT + at)
    if answer[:1] == _WHERE:
        word = answer[1:].encode("latin-1")
        answer = wit_world.host_call(_THERE + "%d:%s" % (id(word), at))
        del word
    return None if answer[:1] == _TEXT else answer


_namespace = {{"__name__": "__main__", "__builtins__": __builtins__, "exchange": exchange,
              "tooliscode_guest": tooliscode_guest}}
_compiled = {{source: compile(source, "<tooliscode>", "exec") for source in _script["turns"]}}
for _path, _finder in list(sys.path_importer_cache.items()):  # all imports done by now
    if type(_finder) is FileFinder and (_path == {STDLIB!r} or _path.startswith({STDLIB + "/"!r})):
        _finder.__class__ = _Listed
del _f, _script, _name, _path, _finder

gc.collect()
heap.name_immortals("/0/{NAMES_FILE}", (main._loop.reserve,))  # the build writes their counts
heap.take_free_chunks()  # guests allocate from the top of the heap, not from its holes
gc.freeze()  # what the image holds is never collected: its pages stay shared


class WitWorld(wit_world.WitWorld):
    def turn(self, source: str) -> int:
        try:
            source, given, answer = source.partition("\\0")
            if given:  # the answer to its first request, given with the source
                _namespace["_answer"] = answer.encode("latin-1")
            code = _compiled.get(source)
            if code is None:
                code = compile(source, "<tooliscode>", "exec")
                if len(_compiled) < 16:
                    _compiled[source] = code
            exec(code, _namespace)
            if given:
                del _namespace["_answer"]
            return 0
        except BaseException:  # an escaping exception would trap the whole guest
            try:
                import traceback

                traceback.print_exc()
                sys.stderr.flush()
            except BaseException:
                pass
            return 1
'''
"""The app module. `exchange` is its channel: a request is ASCII JSON, an answer marshal
bytes, both carried in WIT strings as latin-1 text (no bytes are lost; list<u8> would be
converted element by element on the host)."""
