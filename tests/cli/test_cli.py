"""The `tooliscode` command, run as a subprocess with piped input, as a person would (what
it refuses before starting anything, in this process)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from textwrap import dedent

import pytest

ROOT = Path(__file__).resolve().parents[2]
STORE = str(ROOT / "examples" / "store_tools.py")


def tooliscode(*args: str, stdin: str = "", timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tooliscode.cli", *args], input=stdin,
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT, check=False)


def test_repl_shows_the_model_view_and_runs_cells():
    cells = dedent("""\
        x = 20
        print(x + 1)
        for i in range(2):
            print('row', i)

        len(list_customers(region='EU'))
        get_exchange_rate(currency='EUR')['usd']
        undefined_name
        :files
        open('out.txt', 'w').write('hi')
        :files
        final_answer(x)
        :quit
        print('never runs')
        """)
    done = tooliscode(f"{STORE}:TOOLS", "--callback", f"{STORE}:callback", stdin=cells)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "=== tools sent to the model" in out and '"name": "run_python"' in out
    assert "=== instructions" in out and "- list_orders(" in out
    assert "45 tools." in out
    reads = out.split("--- the model reads")[1:]
    bodies = [r.split("---\n", 1)[1].split("--- printed as it ran ---")[0].strip()
              for r in reads]
    assert "--- printed as it ran ---\nrow 0\nrow 1\n--- the model reads" in out
    assert bodies[0] == "(the cell ran and printed nothing; it defined: x = 20)"
    assert bodies[1] == "21"
    assert bodies[2] == "row 0\nrow 1"
    assert bodies[3] == "[value] 20"
    assert bodies[4] == "[value] 1.08"
    assert "NameError: name 'undefined_name' is not defined" in bodies[5]
    assert "(no files)" in out and "out.txt  2 bytes" in out
    assert "[files written in /session] out.txt" in bodies[6]
    assert "--- final answer: 20" in out
    assert "never runs" not in out


def test_one_command_and_exit_codes(capsys):
    ok = tooliscode(f"{STORE}:FUNCTIONS", "-q", "-c", "print(len(list_categories()))")
    assert ok.returncode == 0 and ok.stdout.strip().endswith("10")
    assert "=== instructions" not in ok.stdout
    failed = tooliscode(f"{STORE}:FUNCTIONS", "-q", "-c", "1/0")
    assert failed.returncode == 1 and "ZeroDivisionError" in failed.stdout
    # refused before a sandbox starts: the entry point in this process says the same
    from tooliscode.cli import main

    assert main(["no_such_module_here:TOOLS", "-q"]) == 2
    assert "No module named 'no_such_module_here'" in capsys.readouterr().err
    assert main([f"{STORE}:TOOLS", "-q", "-c", "1"]) == 2  # dict tools, no callback
    assert "callback" in capsys.readouterr().err


def test_chat_shape_and_the_console_script():
    script = Path(sys.executable).parent / "tooliscode"
    if not script.exists():
        pytest.skip("the console script is not installed in this environment")
    done = subprocess.run([str(script), "repl", f"{STORE}:FUNCTIONS", "--api", "chat"],
                          input=":tools\n", capture_output=True, text=True, timeout=120, cwd=ROOT,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert '"function": {' in done.stdout


def test_mcp_server_as_a_tool_source():
    pytest.importorskip("tooliscode.mcp._client")
    server = shutil.which("mcp-server-time") or str(Path(sys.executable).parent / "mcp-server-time")
    if not Path(server).exists():
        pytest.skip("mcp-server-time is not installed")
    done = tooliscode("--mcp", f"{server} --local-timezone UTC", "-c",
                      "print(sorted(n['name'] for n in search_tools('time', limit=5)))")
    assert done.returncode == 0, done.stderr
    assert "convert_time" in done.stdout and "get_current_time" in done.stdout


def test_the_repl_shows_what_a_cell_prints_while_it_runs():
    """The cell waits for the REPL's output to show its line (the output writes a file into
    the session folder when it does): shown only at the end, the cell would time out."""
    import io

    from tooliscode import ToolIsCode
    from tooliscode.cli._repl import Repl

    with ToolIsCode([], limits=None) as toolset:
        folder = toolset.session().workdir

        class Screen(io.StringIO):
            def write(self, text: str) -> int:
                if "waiting for the screen" in text:
                    (folder / "seen").write_text("yes")
                return super().write(text)

        cell = ("if True:\n    import os\n    print('waiting for the screen')\n"
                "    while not os.path.exists('seen'):\n        pass\n    print('seen')\n\n")
        screen = Screen()
        Repl(toolset, stdin=io.StringIO(cell), stdout=screen, prompt=False).loop()
    shown = screen.getvalue()
    assert shown.startswith("--- printed as it ran ---\nwaiting for the screen\nseen\n"
                            "--- the model reads")
