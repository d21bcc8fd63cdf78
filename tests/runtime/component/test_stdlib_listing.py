"""The standard library's folders, read-only to guests, keep the listing the build took of
them (`_app.py`: `_Listed`): listing them again at run time costs a round trip to the host's
I/O threads per entry, at a guest's first import from outside the image."""

from __future__ import annotations

from tooliscode import Session
from tooliscode.runtime import runtime_named
from tooliscode.runtime.component._app import STDLIB

_KEPT = f"""\
import importlib, sys
finder = sys.path_importer_cache[{STDLIB!r}]
finder._path_cache.add("zz_kept")
importlib.invalidate_caches()  # as if its mtime had changed: a plain finder lists again
import sqlite3, tomllib
print("zz_kept" in finder._path_cache, sqlite3.sqlite_version_info >= (3,), tomllib.loads("a = 1"))
"""


def test_an_import_from_outside_the_image_does_not_list_the_standard_library_again():
    with Session([], runtime=runtime_named("default")) as s:
        r = s.run(_KEPT)
        assert r.ok, r.error
        assert r.stdout == "True True {'a': 1}\n"


def test_a_module_in_the_session_folder_is_still_found_first(tmp_path):
    with Session([], runtime=runtime_named("default"), workdir=tmp_path) as s:
        assert s.run("import sqlite3").ok
        (tmp_path / "shlex.py").write_text("WHO = 'the session'\n")
        r = s.run("import shlex\nprint(getattr(shlex, 'WHO', 'the library'))")
        assert r.ok, r.error
        assert r.stdout == "the session\n"
