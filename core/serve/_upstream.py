"""The upstream model server, reached over plain HTTP with the standard library.

No client library: requests without tools are forwarded byte for byte, so whatever the
upstream adds to its API (extra fields, its own streaming events) reaches the client intact.
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from typing import Any, Protocol

from ._shapes import ApiError

__all__ = ["Upstream", "UpstreamError", "UpstreamResponse"]


class UpstreamError(ApiError):
    """The upstream failed or could not be reached."""


class UpstreamResponse(Protocol):
    """An open HTTP response (a success or an HTTP error alike)."""

    status: int
    headers: Any

    def read(self, amt: int | None = None) -> bytes: ...
    def readline(self, limit: int = -1) -> bytes: ...
    def close(self) -> None: ...


def _message(raw: bytes) -> str:
    """The error message in an upstream's error body, or the start of the body."""
    try:
        body = json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace").strip()[:500] or "(empty body)"
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    if isinstance(error, str):
        return error
    return json.dumps(body)[:500]


class Upstream:
    """An OpenAI-compatible server: `base_url` ends where the API's paths start (`.../v1`)."""

    def __init__(self, base_url: str, api_key: str | None = None, timeout_s: float = 600.0):
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"the upstream URL must start with http:// or https://: {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self._key = api_key
        self.timeout_s = timeout_s

    def open(self, method: str, path: str, body: bytes | None = None,
             accept: str = "application/json") -> UpstreamResponse:
        """Send a request; the response is returned whatever its status. Raises
        `UpstreamError` only when there is no response (refused, unreachable, timed out)."""
        headers = {"accept": accept, "user-agent": "tooliscode-serve"}
        if body is not None:
            headers["content-type"] = "application/json"
        if self._key:
            headers["authorization"] = f"Bearer {self._key}"
        request = urllib.request.Request(f"{self.base_url}{path}", data=body, headers=headers,
                                         method=method)
        try:
            response: UpstreamResponse = urllib.request.urlopen(request, timeout=self.timeout_s)
            return response
        except urllib.error.HTTPError as error:
            return error  # type: ignore[return-value] # an answer all the same: status, headers, body
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, TimeoutError):
                raise UpstreamError(504, f"the upstream did not answer within "
                                    f"{self.timeout_s:g} s", kind="api_error",
                                    code="upstream_timeout") from exc
            raise UpstreamError(502, f"cannot reach the upstream at {self.base_url}: {reason}",
                                kind="api_error", code="upstream_unreachable") from exc

    def call(self, method: str, path: str, payload: dict[str, Any] | None = None
             ) -> dict[str, Any]:
        """A JSON request and its JSON answer; an error status raises `UpstreamError`."""
        body = None if payload is None else json.dumps(payload).encode()
        response = self.open(method, path, body)
        try:
            raw = response.read()
            status = response.status
        except (OSError, http.client.HTTPException) as exc:  # a timeout is an OSError
            raise UpstreamError(502, f"the upstream's answer broke off: {exc!r}",
                                kind="api_error") from exc
        finally:
            response.close()
        if status >= 400:
            # The client's request was the upstream's request: its 4xx are the client's too.
            code = status if 400 <= status < 500 else 502
            raise UpstreamError(code, f"the upstream answered {status}: {_message(raw)}",
                                kind="invalid_request_error" if code < 500 else "api_error",
                                code="upstream_error")
        try:
            answer = json.loads(raw)
        except ValueError as exc:
            raise UpstreamError(502, f"the upstream's answer is not JSON: {_message(raw)}",
                                kind="api_error") from exc
        if not isinstance(answer, dict):
            raise UpstreamError(502, "the upstream's answer is not a JSON object",
                                kind="api_error")
        return answer

    def chat(self, payload: dict[str, Any]) -> dict[str, Any]:
        return self.call("POST", "/chat/completions", payload)

    def models(self) -> dict[str, Any]:
        return self.call("GET", "/models")
