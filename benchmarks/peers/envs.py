"""Virtual environments for peers that must not share ours, made on first use under
.bench-envs/ (git-ignored) with `python -m venv` and `pip install` from PyPI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def peer_python(name: str, spec: str) -> tuple[Path | None, str]:
    """The interpreter of environment `name` with `spec` (requirements separated by spaces)
    installed (made if missing), or None and why not."""
    env = ROOT / ".bench-envs" / name
    python = env / "bin" / "python"
    if not python.exists():
        print(f"making {env.relative_to(ROOT)}: python -m venv; pip install {spec} ...",
              flush=True)
        for step in ([sys.executable, "-m", "venv", str(env)],
                     [str(python), "-m", "pip", "install", "-q", *spec.split()]):
            done = subprocess.run(step, capture_output=True, text=True)
            if done.returncode:
                return None, f"{' '.join(step[-3:])} failed: {done.stderr.strip()[-600:]}"
    return python, spec


def run_peer_script(python: Path, script: str, *args: str, **popen: Any) -> str:
    """The last line a script of peers/ printed, run with `python`."""
    out = subprocess.run([str(python), str(Path(__file__).parent / script), *args],
                         capture_output=True, text=True, timeout=600, **popen)
    if out.returncode:
        raise RuntimeError(f"{script} failed:\n{out.stderr[-2000:]}")
    return out.stdout.strip().splitlines()[-1]
