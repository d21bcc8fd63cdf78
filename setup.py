"""The wheel carries the default runtime's sandbox component, built when the wheel is.

Everything else about the package is in pyproject.toml. A wheel's build runs
`tooliscode warmup --runtime default` from the built package into a throwaway cache folder
(componentize-py builds the component and a guest of ours compiles its standard library's
.pyc), and ships the built folder beside `tooliscode/runtime/component`: an installed wheel
then needs neither componentize-py nor a build, only the compile on its first use (seconds).
The compile itself is not shipped: it is native code for one machine. An editable install
builds nothing here: its first use (or `make setup`) builds into the user's cache.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPy(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode or os.environ.get("TOOLISCODE_NO_PREBUILT"):
            return
        lib = Path(self.build_lib)
        target = lib / "tooliscode" / "runtime" / "component" / "_prebuilt"
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "PYTHONPATH": str(lib), "TOOLISCODE_CACHE_DIR": cache,
                   "TOOLISCODE_COMPILER": "winch"}
            subprocess.run([sys.executable, "-m", "tooliscode.cli", "warmup", "--runtime",
                            "default", "--build-only"], env=env, check=True)
            built = [p for p in Path(cache).glob("component-*") if p.is_dir()]
            if len(built) != 1:
                raise RuntimeError(f"the sandbox component's build left {built} in {cache}")
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir(parents=True)
            shutil.copytree(built[0], target / built[0].name)


setup(cmdclass={"build_py": BuildPy})
