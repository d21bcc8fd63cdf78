"""Choosing the data runtime by name: the environment variable and the command line
(`tooliscode warmup --runtime default` makes the fresh cache of tests/runtime/test_runtime.py)."""

from __future__ import annotations

import os
import subprocess
import sys


def _run(args: list[str], **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env})


def test_environment_variable_picks_the_runtime():
    code = ("from tooliscode import Session\n"
            "with Session([]) as s:\n"
            "    print(s.runtime.name, s.run('import sys; sys.version_info[:2]').value)")
    out = _run([sys.executable, "-c", code], TOOLISCODE_RUNTIME="data")
    assert out.stdout.split() == ["data", "(3,", "15)"], out.stderr


def test_repl_runtime_flag():
    cli = [sys.executable, "-m", "tooliscode.cli"]
    out = _run([*cli, "repl", "--runtime", "data", "-q", "-c",
                "import numpy; print(numpy.arange(4).sum())"])
    assert out.returncode == 0 and "6" in out.stdout, out.stdout + out.stderr
    bad = _run([*cli, "repl", "--runtime", "nope", "-q", "-c", "1"])
    assert bad.returncode != 0 and "invalid choice" in bad.stderr


def test_guides_name_each_runtimes_python():
    from tooliscode.prompt._guide import instructions
    from tooliscode.runtime import Runtime, runtime_named
    from tooliscode.tools._registry import ToolRegistry

    data = instructions(ToolRegistry([]), python=runtime_named("data").python_note)
    assert "runs Python 3.15 with numpy, pandas" in data
    assert "runs Python 3.12 (standard library only)" in instructions(
        ToolRegistry([]), python=Runtime.python_note)
