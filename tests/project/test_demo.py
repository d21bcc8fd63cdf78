"""`make demo`: the offline end-to-end conversation runs, and its answer is right."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_demo_runs_offline_and_answers_correctly():
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "demo.py")], env=env,
                          capture_output=True, text=True, timeout=300, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "scripted model, offline" in out
    assert out.count("=== turn ") == 3 and out.count("--- what the model reads back") == 3

    sys.path.insert(0, str(ROOT / "examples"))
    try:
        from demo import expected_answer
    finally:
        sys.path.remove(str(ROOT / "examples"))
    expected = expected_answer()
    answer = out.split("model calls) ===\n", 1)[1].split("\n\n=== tokens", 1)[0]
    assert json.loads(answer) == expected
    assert "answer check against a direct computation: correct" in out

    saved = re.search(r"tokens saved: ([\d,]+) of ([\d,]+) input tokens \(([\d.]+)%\)", out)
    assert saved is not None
    assert float(saved.group(3)) > 90  # the quarter's orders never enter the context
