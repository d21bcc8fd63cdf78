"""The request log: one JSON line per request, with secrets taken out before it is written.

Secrets are removed three ways: credential headers are dropped, fields whose name says they
hold a credential are masked, and the keys the server knows (its own and the upstream's)
are cut out of every string, wherever a client may have pasted them.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["REDACTED", "RequestLog", "redact"]

REDACTED = "[redacted]"
_SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "api-key", "x-api-key",
                             "cookie", "set-cookie", "openai-api-key"})
_SECRET_FIELD = re.compile(r"(^|_|-)(api_?key|apikey|authorization|password|passwd|secret|"
                           r"access_token|refresh_token|token|bearer)$", re.IGNORECASE)


def redact(value: Any, secrets: Iterable[str] = ()) -> Any:
    """A copy of `value` (JSON data) with credential fields masked and `secrets` cut out."""
    known = sorted({s for s in secrets if s}, key=len, reverse=True)

    def clean(item: Any) -> Any:
        if dataclasses.is_dataclass(item) and not isinstance(item, type):
            item = dataclasses.asdict(item)
        if isinstance(item, str):
            for secret in known:
                item = item.replace(secret, REDACTED)
            return item
        if isinstance(item, Mapping):
            return {str(k): REDACTED if _SECRET_FIELD.search(str(k)) and v else clean(v)
                    for k, v in item.items()}
        if isinstance(item, (list, tuple)):
            return [clean(v) for v in item]
        return item

    return clean(value)


def headers_for_log(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    return {k.lower(): REDACTED if k.lower() in _SECRET_HEADERS else v for k, v in headers}


class RequestLog:
    """Appends entries to `path` as JSON lines; readable by the owner only (it holds
    conversations). Safe to use from the server's threads."""

    def __init__(self, path: str | Path, secrets: Iterable[str] = ()):
        self.path = Path(path)
        self._secrets = [s for s in secrets if s]
        self._lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._file = os.fdopen(fd, "a", encoding="utf-8")

    def write(self, entry: Mapping[str, Any]) -> None:
        record = redact({"time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **entry}, self._secrets)
        line = json.dumps(record, ensure_ascii=False, default=str)
        with self._lock:
            if not self._file.closed:
                self._file.write(line + "\n")
                self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()
