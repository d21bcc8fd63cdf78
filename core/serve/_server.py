"""The HTTP server: OpenAI's `/v1/chat/completions` and `/v1/models` in front of an upstream.

Standard library only (`ThreadingHTTPServer`, one thread per connection). Requests with tools
are answered here (see `completion`); the others are forwarded to the upstream untouched.
"""

from __future__ import annotations

import http.client
import json
import logging
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from typing_extensions import Self

from .._closing import Starting
from ..codetool import UNAUTHORIZED, key_matches
from ..engine import Limits
from ._completion import Completer, Round
from ._disconnect import watching
from ._prompt import history
from ._recorder import RECORDING_LIMITS
from ._request import parse_request
from ._request_log import RequestLog, headers_for_log
from ._shapes import ApiError, chunks, completion, sse
from ._upstream import Upstream, UpstreamError, UpstreamResponse

__all__ = ["ServeConfig", "Server"]

log = logging.getLogger("tooliscode.serve")
_DRAIN_S = 5.0
"""How long closing waits for requests still being handled."""

_CHAT = ("/v1/chat/completions", "/chat/completions")
_MODELS = ("/v1/models", "/models")


@dataclass
class ServeConfig:
    """How `tooliscode serve` runs; every option of the command is a field here."""

    upstream: str
    """The upstream's base URL, up to where its API paths start: `http://localhost:11434/v1`."""
    upstream_key: str | None = None
    model: str | None = None
    """The model for requests that name none (and the model list, if the upstream has none)."""
    api_key: str | None = None
    """When set, clients must present it (`Authorization: Bearer ...`)."""
    host: str = "127.0.0.1"
    port: int = 8000
    log: str | Path | None = None
    """A file for the request log (JSON lines, secrets redacted)."""
    repairs: int = 1
    """Extra upstream rounds per request to fix code that failed (or to insist on a call)."""
    timeout_s: float = 600.0
    """How long one upstream call may take."""
    max_body_bytes: int = 16 * 1024 * 1024
    limits: Limits = RECORDING_LIMITS
    """For the sandbox that runs the model's code against the recording stand-ins."""
    max_sandboxes: int = 8
    """Requests that may run code at once; more wait their turn."""


class Server(Starting):
    """`tooliscode serve` in a process: `start()` it in the background or `serve_forever()`."""

    def __init__(self, config: ServeConfig):
        self.config = config
        self.upstream = Upstream(config.upstream, config.upstream_key, config.timeout_s)
        self.completer = Completer(self.upstream, config.limits, config.repairs,
                                   threading.BoundedSemaphore(config.max_sandboxes))
        self.request_log = RequestLog(config.log, [config.api_key or "", config.upstream_key
                                                   or ""]) if config.log else None
        handler = type("Handler", (_Handler,), {"app": self})
        self._httpd = ThreadingHTTPServer((config.host, config.port), handler)
        self._httpd.daemon_threads = True
        self._loop: threading.Thread | None = None
        """The thread in `serve_forever`'s loop, while one is."""
        self._busy = 0
        """Requests being handled: `close` lets them finish (and log) first, a while."""
        self._idle = threading.Condition()

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> Self:
        """Serve on a background thread."""
        thread = threading.Thread(target=self.serve_forever, name="tooliscode-serve",
                                  daemon=True)
        self._loop = thread  # a close() before the loop begins still waits for it to end
        thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve on this thread until `close()` (from another thread) or an interrupt."""
        _warm_up()
        self._loop = threading.current_thread()
        try:
            self._httpd.serve_forever(poll_interval=0.1)  # how soon close() takes effect
        finally:
            self._loop = None

    def close(self) -> None:
        # `shutdown()` waits until a running loop has ended, and forever if none runs: an
        # interrupt can end `serve_forever` before its loop began, and the loop's own thread
        # (Ctrl-C, then close) has left it already.
        loop = self._loop
        if loop is not None and loop is not threading.current_thread():
            self._httpd.shutdown()
        self._httpd.server_close()
        with self._idle:  # an answer already sent still writes its line to the log
            self._idle.wait_for(lambda: self._busy == 0, _DRAIN_S)
        self.completer.close()
        if self.request_log is not None:
            self.request_log.close()

    def _handling(self, delta: int) -> None:
        with self._idle:
            self._busy += delta
            self._idle.notify_all()


_warmed = threading.Event()


def _warm_up() -> None:
    """Load the sandbox's runtime in the background (once per process), so the first request
    with code does not wait for it."""
    from ..engine import Session

    def warm() -> None:
        try:
            Session([]).close()
        except Exception:  # the first request will report it
            log.exception("tooliscode serve: the sandbox could not start")

    if not _warmed.is_set():
        _warmed.set()
        threading.Thread(target=warm, name="tooliscode-warm-up", daemon=True).start()


class _Handler(BaseHTTPRequestHandler):
    app: Server
    protocol_version = "HTTP/1.1"
    server_version = "tooliscode-serve"
    timeout = 300  # an idle kept-alive connection is dropped after this

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s - %s", self.address_string(), format % args)

    # -- routes -----------------------------------------------------------------------------

    def do_GET(self) -> None:
        self._serve(self._get)

    def do_POST(self) -> None:
        self._serve(self._post)

    def do_PUT(self) -> None:
        self._serve(self._not_allowed)

    do_DELETE = do_PATCH = do_PUT

    def _get(self, entry: dict[str, Any]) -> None:
        path = self.path.split("?")[0].rstrip("/")
        upstream_path = _models_path(path)
        if upstream_path is None:
            raise ApiError(404, f"no route GET {path}", code="not_found")
        try:
            answer = self.app.upstream.call("GET", upstream_path)
        except ApiError:
            if path not in _MODELS or not self.app.config.model:
                raise
            answer = {"object": "list", "data": [{"id": self.app.config.model,
                                                  "object": "model", "created": 0,
                                                  "owned_by": "tooliscode"}]}
        self._json(200, answer, entry)

    def _not_allowed(self, entry: dict[str, Any]) -> None:
        raise ApiError(405, f"{self.command} is not supported here")

    def _post(self, entry: dict[str, Any]) -> None:
        path = self.path.split("?")[0].rstrip("/")
        raw = self._read_body()
        if path not in _CHAT:
            raise ApiError(404, f"no route POST {path}", code="not_found")
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
            raise ApiError(400, f"the request body is not valid JSON: {exc}") from None
        entry["request"] = body
        request = parse_request(body, self.app.config.model)
        entry.update(model=request.model, stream=request.stream)
        if request.registry is None:
            return self._forward(request.body, entry)
        if request.choice == "none":  # no calls now, but the history may hold some
            streaming: dict[str, Any] = {k: request.body[k] for k in ("stream", "stream_options")
                                         if k in request.body}
            return self._forward({**request.upstream_fields(), **streaming, "messages": history(
                request.messages, request.registry, None)}, entry)
        rounds: list[Round] = []
        entry["rounds"] = rounds
        with watching(self.connection) as gone:  # a client gone stops its cell
            answer = self.app.completer.complete(request, rounds, gone)
        entry["response"] = completion(answer)
        if not request.stream:
            return self._json(200, entry["response"], entry)
        self._start_events(200, entry)
        for chunk in chunks(answer, request.include_usage):
            self.wfile.write(sse(chunk))
        self.wfile.write(sse("[DONE]"))
        self.wfile.flush()

    # -- plumbing ---------------------------------------------------------------------------

    def _serve(self, route: Any) -> None:
        """Run a route; whatever goes wrong becomes an error response, never a dead server."""
        started = time.monotonic()
        # One handler serves every request of a kept-alive connection: reset what is per request.
        self._body_read = self._streaming = False
        entry: dict[str, Any] = {"client": self.client_address[0], "method": self.command,
                                 "path": self.path, "headers": headers_for_log(
                                     self.headers.items())}
        self.app._handling(1)
        try:
            self._authorize()
            route(entry)
        except ApiError as error:
            self._fail(error, entry)
        except (BrokenPipeError, ConnectionResetError):
            entry["error"] = "the client went away"
            self.close_connection = True
        except Exception as exc:  # one bad request must not stop the server
            log.exception("tooliscode serve: %s %s failed", self.command, self.path)
            self._fail(ApiError(500, f"internal error: {type(exc).__name__}: {exc}",
                                kind="server_error"), entry)
        finally:
            entry["ms"] = round((time.monotonic() - started) * 1000, 1)
            if self.app.request_log is not None:
                self.app.request_log.write(entry)
            self.app._handling(-1)

    def _fail(self, error: ApiError, entry: dict[str, Any]) -> None:
        entry["error"] = error.message
        if self._streaming:  # too late for a status: an error event, which clients raise
            entry["status"] = error.status
            try:
                self.wfile.write(sse(error.body()))
                self.wfile.flush()
            except OSError:
                pass
            return
        if not self._body_read and self.command != "GET":
            self.close_connection = True  # an unread body would spoil the connection
        self._json(error.status, error.body(), entry)

    def _authorize(self) -> None:
        expected = self.app.config.api_key
        if expected and not key_matches(expected, {k.lower(): v for k, v in self.headers.items()}):
            raise ApiError(401, UNAUTHORIZED, code="invalid_api_key")

    def _read_body(self) -> bytes:
        self._body_read = True
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            self.close_connection = True
            raise ApiError(411, "send the body with a Content-Length (chunked bodies are not "
                                "accepted)")
        try:
            length = int(self.headers.get("content-length") or 0)
        except ValueError:
            self.close_connection = True
            raise ApiError(400, "Content-Length is not a number") from None
        if length < 0 or length > self.app.config.max_body_bytes:
            self.close_connection = True  # the body stays unread: the connection is spoilt
            raise ApiError(413, f"the body is {length:,} bytes; the limit is "
                                f"{self.app.config.max_body_bytes:,}")
        return self.rfile.read(length)

    def _json(self, status: int, payload: dict[str, Any], entry: dict[str, Any]) -> None:
        raw = json.dumps(payload, ensure_ascii=False).encode()
        entry["status"] = status
        entry.setdefault("response", payload)
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(raw)))
        if self.close_connection:
            self.send_header("connection", "close")
        self.end_headers()
        self.wfile.write(raw)

    def _start_events(self, status: int, entry: dict[str, Any]) -> None:
        """Headers of a server-sent event stream, which ends when the connection closes."""
        entry["status"] = status
        self.close_connection = self._streaming = True
        self.send_response(status)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()

    def _forward(self, body: dict[str, Any], entry: dict[str, Any]) -> None:
        """Pass a request to the upstream and its answer back as it comes, streamed or not."""
        stream = bool(body.get("stream"))
        response = self.app.upstream.open(
            "POST", "/chat/completions", json.dumps(body).encode(),
            accept="text/event-stream" if stream else "application/json")
        entry["forwarded"] = True
        try:
            if stream and response.status < 400:
                self._start_events(response.status, entry)
                entry["bytes"] = _copy_lines(response, self.wfile)
                return
            raw = response.read()
            entry["status"] = response.status
            self.send_response(response.status)
            self.send_header("content-type", response.headers.get("content-type")
                             or "application/json")
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)
            entry["bytes"] = len(raw)
        finally:
            response.close()


def _models_path(path: str) -> str | None:
    """The upstream path for a model list or model request (ids may hold slashes:
    `org/model`); None for anything else, so no other upstream route is reachable."""
    for prefix in _MODELS:
        if path == prefix:
            return "/models"
        if path.startswith(prefix + "/"):
            segments = path[len(prefix) + 1:].split("/")
            if any(s in ("", ".", "..") or "%" in s for s in segments):
                return None
            return "/models/" + "/".join(segments)
    return None


def _copy_lines(response: UpstreamResponse, out: Any) -> int:
    """Copy an event stream line by line, flushing at each event's end."""
    copied = 0
    while True:
        try:
            line = response.readline()
        except (OSError, http.client.HTTPException) as exc:  # a timeout is an OSError
            raise UpstreamError(502, f"the upstream's stream broke off: {exc!r}",
                                kind="api_error") from exc
        if not line:
            break
        out.write(line)
        copied += len(line)
        if line in (b"\n", b"\r\n"):
            out.flush()
    out.flush()
    return copied
