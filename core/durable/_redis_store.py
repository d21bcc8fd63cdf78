"""`RedisStore`: snapshots and leases in Redis, the shared state of a multi-worker deployment.

A lease is a key set with NX and an expiry, holding its owner's token; renewing and releasing
check the token in one server-side script, so a worker never extends or drops a lease it lost.
A worker killed outright loses its lease when the expiry passes.
"""

from __future__ import annotations

from typing import Any

from ._store import SessionStore, StoreUnavailable, version_of

__all__ = ["RedisStore"]

_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
"""
_CLEAR = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
"""
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
"""


class RedisStore(SessionStore):
    """`RedisStore("redis://host:6379/0")` or `RedisStore(client=redis.Redis(...))`.

    Calls time out after `timeout_s` and raise `StoreUnavailable`, so a Redis that is down
    never hangs a request."""

    def __init__(self, url: str = "redis://localhost:6379/0", *, client: Any = None,
                 prefix: str = "tooliscode:", timeout_s: float = 2.0):
        try:
            import redis
        except ImportError:
            raise ImportError("RedisStore needs the redis package: "
                              "pip install 'tooliscode[redis]'") from None
        self._errors = (redis.RedisError, OSError)
        self.client = client if client is not None else redis.Redis.from_url(
            url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s)
        self.prefix = prefix
        self._renew = self.client.register_script(_RENEW)
        self._release = self.client.register_script(_RELEASE)
        self._clear = self.client.register_script(_CLEAR)

    def _call(self, what: str, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except self._errors as exc:
            raise StoreUnavailable(f"the Redis session store failed to {what}: {exc}") from exc

    def get(self, key: str) -> bytes | None:
        return self._call("read", self.client.get, self.prefix + "snap:" + key)

    def put(self, key: str, data: bytes) -> None:
        pipe = self.client.pipeline(transaction=True)  # both keys change together
        pipe.set(self.prefix + "snap:" + key, data)
        pipe.set(self.prefix + "ver:" + key, version_of(data))
        self._call("write", pipe.execute)

    def version(self, key: str) -> str | None:
        value = self._call("read", self.client.get, self.prefix + "ver:" + key)
        return value.decode() if value is not None else None

    def delete(self, key: str) -> None:
        self._call("delete", self.client.delete, self.prefix + "snap:" + key,
                   self.prefix + "ver:" + key, self.prefix + "run:" + key)

    def mark_running(self, key: str, owner: str) -> str | None:
        before = self._call("mark a call", lambda: self.client.set(
            self.prefix + "run:" + key, owner, get=True))
        return before.decode() if before is not None and before.decode() != owner else None

    def clear_running(self, key: str, owner: str) -> None:
        self._call("clear a call's mark", self._clear, [self.prefix + "run:" + key], [owner])

    def commit(self, key: str, data: bytes, owner: str) -> None:
        pipe = self.client.pipeline(transaction=True)  # the state and its mark change together
        pipe.set(self.prefix + "snap:" + key, data)
        pipe.set(self.prefix + "ver:" + key, version_of(data))
        self._clear(keys=[self.prefix + "run:" + key], args=[owner], client=pipe)
        self._call("write", pipe.execute)

    def acquire(self, key: str, owner: str, ttl_s: float) -> bool:
        name, ms = self.prefix + "lease:" + key, max(1, int(ttl_s * 1000))
        if self._call("take a lease", lambda: self.client.set(name, owner, px=ms, nx=True)):
            return True
        return bool(self._call("renew a lease", self._renew, [name], [owner, ms]))

    def release(self, key: str, owner: str) -> None:
        self._call("release a lease", self._release, [self.prefix + "lease:" + key], [owner])

    def close(self) -> None:
        self.client.close()
