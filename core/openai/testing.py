"""A local OpenAI-compatible server with scripted replies, for tests and offline demos.

It speaks the Responses API (`POST /v1/responses`) and Chat Completions
(`POST /v1/chat/completions`), plain or streamed as server-sent events, so the real `openai`
client talks to it over HTTP exactly as it would to the real service:

    with ScriptedServer([code("print(1)"), say("done")]) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)

The script is a list of replies (one per request) or a function of the request.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .._closing import Starting
from ..prompt import CODE_TOOL_NAME
from ._tool_call import Api

__all__ = ["ScriptedReply", "ScriptedRequest", "ScriptedServer", "call", "code", "say"]


@dataclass(frozen=True)
class ScriptedReply:
    """One model turn: some text, and tool calls as (name, arguments JSON text)."""

    text: str | None = None
    calls: tuple[tuple[str, str], ...] = ()
    reasoning: str | None = None
    """Sent apart from the text, as reasoning APIs do (`reasoning_content`, Chat only)."""


def say(text: str, reasoning: str | None = None) -> ScriptedReply:
    """A turn that only answers."""
    return ScriptedReply(text=text, reasoning=reasoning)


def call(name: str, arguments: dict[str, Any] | str, *more: tuple[str, dict[str, Any] | str],
         text: str | None = None) -> ScriptedReply:
    """A turn calling tools; `arguments` given as a str are sent verbatim (even invalid JSON)."""
    pairs = ((name, arguments), *more)
    return ScriptedReply(text, tuple((n, a if isinstance(a, str) else json.dumps(a))
                                     for n, a in pairs))


def code(*sources: str, text: str | None = None, tool: str = CODE_TOOL_NAME) -> ScriptedReply:
    """A turn calling the code tool once per source."""
    return ScriptedReply(text, tuple((tool, json.dumps({"code": s})) for s in sources))


@dataclass
class ScriptedRequest:
    """A request the server received."""

    api: Api
    body: dict[str, Any]
    index: int
    headers: dict[str, str] = field(default_factory=dict)
    """The HTTP headers, names in lower case."""

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    def tool_outputs(self) -> list[str]:
        """The tool results at the end of the conversation: what the model just read."""
        if self.api == "chat":
            items = self.body.get("messages") or []
            key, text = "role", "content"
            wanted = "tool"
        else:
            items = self.body.get("input") or []
            items = items if isinstance(items, list) else []
            key, text, wanted = "type", "output", "function_call_output"
        outputs: list[str] = []
        for item in reversed(items):
            if not isinstance(item, dict) or item.get(key) != wanted:
                break
            outputs.append(str(item.get(text)))
        return outputs[::-1]


Script = Sequence[ScriptedReply] | Callable[[ScriptedRequest], ScriptedReply]


@dataclass
class ScriptedServer(Starting):
    """The server; `requests` holds every request body received, in order."""

    script: Script
    chunk_chars: int = 12
    """Size of each streamed argument or text delta."""
    requests: list[ScriptedRequest] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "start() the server first"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> ScriptedServer:
        handler = type("Handler", (_Handler,), {"server_ref": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, args=(0.05,), name="scripted-openai",
                         daemon=True).start()
        return self

    def close(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def next_reply(self, api: Api, body: dict[str, Any],
                   headers: dict[str, str] | None = None) -> ScriptedReply | None:
        with self._lock:
            request = ScriptedRequest(api, body, len(self.requests), headers or {})
            self.requests.append(request)
            if callable(self.script):
                return self.script(request)
            i = request.index
            return self.script[i] if i < len(self.script) else None


class _Handler(BaseHTTPRequestHandler):
    server_ref: ScriptedServer

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._json(200, {"object": "list", "data": [{"id": "scripted", "object": "model",
                                                      "created": 0, "owned_by": "test"}]})

    def do_POST(self) -> None:
        routes: dict[str, Api] = {"/v1/responses": "responses", "/v1/chat/completions": "chat"}
        api = routes.get(self.path.split("?")[0])
        length = int(self.headers.get("content-length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            return self._error(400, "the body is not JSON")
        if api is None:
            return self._error(404, f"no route {self.path}")
        try:
            reply = self.server_ref.next_reply(
                api, body, {k.lower(): v for k, v in self.headers.items()})
        except Exception as exc:  # noqa: BLE001 - a broken script shows as an API error
            return self._error(500, f"the script failed: {type(exc).__name__}: {exc}")
        if reply is None:
            return self._error(400, "the scripted model has no reply left")
        n = len(self.server_ref.requests)
        model = str(body.get("model") or "scripted")
        shape = _Shape(reply, model, n, self.server_ref.chunk_chars)
        if not body.get("stream"):
            return self._json(200, shape.responses() if api == "responses" else shape.chat())
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.end_headers()
        if api == "responses":
            for event in shape.response_events():
                self._sse(json.dumps(event), event["type"])
        else:
            for chunk in shape.chat_chunks():
                self._sse(json.dumps(chunk))
            self._sse("[DONE]")

    def _sse(self, data: str, event: str | None = None) -> None:
        head = f"event: {event}\n" if event else ""
        self.wfile.write(f"{head}data: {data}\n\n".encode())
        self.wfile.flush()

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _error(self, status: int, message: str) -> None:
        self._json(status, {"error": {"message": message, "type": "invalid_request_error",
                                      "param": None, "code": None}})


@dataclass
class _Shape:
    """One reply in each wire format."""

    reply: ScriptedReply
    model: str
    n: int
    chunk: int

    def _pieces(self, text: str) -> Iterator[str]:
        for i in range(0, len(text), self.chunk):
            yield text[i:i + self.chunk]

    def _usage(self) -> dict[str, int]:
        return {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}

    # -- Responses ------------------------------------------------------------------------------

    def _message_item(self, text: str, status: str = "completed") -> dict[str, Any]:
        return {"type": "message", "id": f"msg_{self.n}", "role": "assistant", "status": status,
                "content": [{"type": "output_text", "text": text, "annotations": []}]}

    def _call_item(self, i: int, name: str, arguments: str,
                   status: str = "completed") -> dict[str, Any]:
        return {"type": "function_call", "id": f"fc_{self.n}_{i}", "call_id": f"call_{self.n}_{i}",
                "name": name, "arguments": arguments, "status": status}

    def _items(self) -> list[dict[str, Any]]:
        items = [self._message_item(self.reply.text)] if self.reply.text is not None else []
        return items + [self._call_item(i, n, a) for i, (n, a) in enumerate(self.reply.calls)]

    def responses(self, status: str = "completed", output: list | None = None) -> dict[str, Any]:
        return {"id": f"resp_{self.n}", "object": "response", "created_at": int(time.time()),
                "status": status, "model": self.model, "output": self._items() if output is None
                else output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
                "usage": {**self._usage(), "input_tokens_details": {"cached_tokens": 0},
                          "output_tokens_details": {"reasoning_tokens": 0}}}

    def response_events(self) -> Iterator[dict[str, Any]]:
        seq = iter(range(1_000_000))
        started = self.responses("in_progress", output=[])
        yield {"type": "response.created", "sequence_number": next(seq), "response": started}
        index = 0
        if self.reply.text is not None:
            base = {"item_id": f"msg_{self.n}", "output_index": 0, "content_index": 0}
            yield {"type": "response.output_item.added", "sequence_number": next(seq),
                   "output_index": 0, "item": {**self._message_item("", "in_progress"),
                                               "content": []}}
            for piece in self._pieces(self.reply.text):
                yield {"type": "response.output_text.delta", "sequence_number": next(seq),
                       "delta": piece, "logprobs": [], **base}
            yield {"type": "response.output_text.done", "sequence_number": next(seq),
                   "text": self.reply.text, "logprobs": [], **base}
            yield {"type": "response.output_item.done", "sequence_number": next(seq),
                   "output_index": 0, "item": self._message_item(self.reply.text)}
            index = 1
        for i, (name, arguments) in enumerate(self.reply.calls):
            where = {"item_id": f"fc_{self.n}_{i}", "output_index": index + i}
            yield {"type": "response.output_item.added", "sequence_number": next(seq),
                   "output_index": index + i, "item": self._call_item(i, name, "", "in_progress")}
            for piece in self._pieces(arguments):
                yield {"type": "response.function_call_arguments.delta",
                       "sequence_number": next(seq), "delta": piece, **where}
            yield {"type": "response.function_call_arguments.done", "sequence_number": next(seq),
                   "arguments": arguments, "name": name, **where}
            yield {"type": "response.output_item.done", "sequence_number": next(seq),
                   "output_index": index + i, "item": self._call_item(i, name, arguments)}
        yield {"type": "response.completed", "sequence_number": next(seq),
               "response": self.responses()}

    # -- Chat Completions ---------------------------------------------------------------------

    def _chat_call(self, i: int, name: str, arguments: str) -> dict[str, Any]:
        return {"id": f"call_{self.n}_{i}", "type": "function",
                "function": {"name": name, "arguments": arguments}}

    def _finish(self) -> str:
        return "tool_calls" if self.reply.calls else "stop"

    def chat(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.reply.text,
                                   "refusal": None}
        if self.reply.reasoning is not None:
            message["reasoning_content"] = self.reply.reasoning
        if self.reply.calls:
            message["tool_calls"] = [self._chat_call(i, n, a)
                                     for i, (n, a) in enumerate(self.reply.calls)]
        return {"id": f"chatcmpl-{self.n}", "object": "chat.completion", "created": 0,
                "model": self.model, "choices": [{"index": 0, "message": message,
                                                  "finish_reason": self._finish(),
                                                  "logprobs": None}],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": f"chatcmpl-{self.n}", "object": "chat.completion.chunk", "created": 0,
                "model": self.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish,
                             "logprobs": None}]}

    def chat_chunks(self) -> Iterator[dict[str, Any]]:
        yield self._chunk({"role": "assistant", "content": "" if self.reply.text else None})
        for piece in self._pieces(self.reply.reasoning or ""):
            yield self._chunk({"reasoning_content": piece})
        for piece in self._pieces(self.reply.text or ""):
            yield self._chunk({"content": piece})
        for i, (name, arguments) in enumerate(self.reply.calls):
            yield self._chunk({"tool_calls": [{"index": i, **self._chat_call(i, name, "")}]})
            for piece in self._pieces(arguments):
                yield self._chunk({"tool_calls": [{"index": i,
                                                   "function": {"arguments": piece}}]})
        yield self._chunk({}, self._finish())
