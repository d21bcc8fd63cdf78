"""Running code in a new process with a cache folder of its own: a first use, as on a fresh
machine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_in(cache: Path, code: str, timeout: float = 300, args: tuple[str, ...] | list[str] = (),
           **env: str) -> subprocess.CompletedProcess:
    """`code` in a new process whose cache folder is `cache`, on the default runtime."""
    env = {**os.environ, "TOOLISCODE_CACHE_DIR": str(cache), "TOOLISCODE_RUNTIME": "default",
           **env}
    return subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True,
                          text=True, timeout=timeout)


WARMUP = "from tooliscode.cli import main; raise SystemExit(main())"
SIX_BY_SEVEN = ("from tooliscode import Session\ns = Session([])\nprint(s.run('6*7').value)\n"
                "s.close()")


