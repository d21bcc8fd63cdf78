"""Options several commands share, written once."""

from __future__ import annotations

import argparse
import os

from ..runtime import ENV_RUNTIME, resolve_runtime

__all__ = ["runtime_argument", "use_runtime"]


def runtime_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runtime", choices=("default", "data"), metavar="NAME",
                        help="the sandbox's Python: 'default' (CPython 3.14, standard library) "
                             "or 'data' (CPython 3.15 with numpy, pandas, matplotlib...; "
                             "pip install 'tooliscode[data]'); default: $TOOLISCODE_RUNTIME, "
                             "else 'default'")


def use_runtime(args: argparse.Namespace) -> None:
    """Make `--runtime` the process's runtime, and load it now: a missing package is reported
    before anything starts, and a first compile shows its progress here."""
    if getattr(args, "runtime", None):
        os.environ[ENV_RUNTIME] = args.runtime
    resolve_runtime(None)
