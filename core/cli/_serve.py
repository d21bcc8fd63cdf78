"""The `serve` subcommand's options, and running the server until interrupted."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import replace

from ._options import runtime_argument, use_runtime

__all__ = ["arguments", "run"]

_UPSTREAM_KEY_ENV = "TOOLISCODE_UPSTREAM_KEY"
_API_KEY_ENV = "TOOLISCODE_API_KEY"


def arguments(parser: argparse.ArgumentParser) -> None:
    runtime_argument(parser)
    parser.add_argument("--upstream", required=True, metavar="URL",
                        help="the upstream OpenAI-compatible API, up to where its paths start, "
                             "e.g. http://localhost:11434/v1")
    parser.add_argument("--upstream-key", metavar="KEY",
                        help=f"API key for the upstream (default: ${_UPSTREAM_KEY_ENV})")
    parser.add_argument("--model", metavar="NAME",
                        help="model for requests that name none, and for the model list")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on "
                        "(default: %(default)s; 0.0.0.0 for every interface)")
    parser.add_argument("--port", type=int, default=8000, help="default: %(default)s")
    parser.add_argument("--api-key", metavar="KEY",
                        help=f"clients must send this key (default: ${_API_KEY_ENV}; none: "
                             "anyone who can connect may use the server)")
    parser.add_argument("--log", metavar="FILE",
                        help="append a request log here (JSON lines, secrets redacted)")
    parser.add_argument("--repairs", type=int, default=1, metavar="N",
                        help="extra upstream rounds to fix code that failed (default: "
                             "%(default)s)")
    parser.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS",
                        help="time limit of one upstream call (default: %(default)s)")
    parser.add_argument("--max-calls", type=int, default=64, metavar="N",
                        help="tool calls one reply may make (default: %(default)s)")


def run(args: argparse.Namespace) -> int:
    from ..serve import RECORDING_LIMITS, ServeConfig, Server

    if args.repairs < 0 or args.max_calls < 1 or args.timeout <= 0:
        raise ValueError("--repairs must be >= 0, --max-calls >= 1 and --timeout > 0")
    with _interrupted_by(signal.SIGINT, signal.SIGTERM):
        use_runtime(args)
        config = ServeConfig(
            upstream=args.upstream, upstream_key=args.upstream_key or os.environ.get(
                _UPSTREAM_KEY_ENV), model=args.model, host=args.host, port=args.port,
            api_key=args.api_key or os.environ.get(_API_KEY_ENV), log=args.log,
            repairs=args.repairs, timeout_s=args.timeout,
            limits=replace(RECORDING_LIMITS, tool_calls=args.max_calls))
        server = Server(config)
        try:
            print(f"tooliscode serve: {server.base_url} -> {config.upstream}"
                  + ("" if config.api_key else " (no --api-key: open to anyone who can "
                     "connect)"), file=sys.stderr, flush=True)
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.close()
    return 0


@contextlib.contextmanager
def _interrupted_by(*signals: signal.Signals) -> Iterator[None]:
    """Make `signals` raise `KeyboardInterrupt` in the main thread, as Ctrl-C does, so that
    the server closes its sandboxes and folders on the way out.

    Whatever this process inherited: a shell starts a background job with SIGINT ignored
    (and its children inherit that), where CPython then never raises `KeyboardInterrupt`;
    and SIGTERM (`kill`, `docker stop`) would otherwise end the process with no clean-up."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers, and only it gets the signals
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    before = {number: signal.signal(number, interrupt) for number in signals}
    try:
        yield
    finally:
        for number, handler in before.items():
            if handler is not None:  # None: set outside Python, cannot be put back
                signal.signal(number, handler)
