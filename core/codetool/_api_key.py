"""The API key a server's clients must present (`tooliscode serve`, `tooliscode mcp` over
HTTP): one rule for where the key may travel, compared in constant time."""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

__all__ = ["UNAUTHORIZED", "key_matches", "require_key"]

UNAUTHORIZED = "missing or wrong API key: send Authorization: Bearer <key>"


def key_matches(expected: str, headers: Mapping[str, str]) -> bool:
    """Whether `headers` (lower-case names) carry `expected`: as `Authorization: Bearer`, or
    in `api-key` / `x-api-key`, which some OpenAI-compatible clients send instead."""
    scheme, _, token = (headers.get("authorization") or "").partition(" ")
    given = token.strip() if scheme.lower() == "bearer" else (
        headers.get("api-key") or headers.get("x-api-key") or "")
    return hmac.compare_digest(given.encode(), expected.encode())


_Asgi = Callable[[dict[str, Any], Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]],
                 Awaitable[None]]


def require_key(app: _Asgi, expected: str) -> _Asgi:
    """`app` (ASGI) answering 401 to HTTP requests without the key; lifespan and other scopes
    pass through untouched."""
    body = json.dumps({"error": {"message": UNAUTHORIZED, "type": "invalid_request_error",
                                 "code": "invalid_api_key"}}).encode()

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                       for k, v in scope.get("headers") or ()}
            if not key_matches(expected, headers):
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return guarded
